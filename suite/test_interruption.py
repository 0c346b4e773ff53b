"""G10 interruption: an operation cut short takes full effect or none, after ``recover()``.

Each write is cancelled after 0, 1, 2, ... event-loop steps (every suspension
point of a store without I/O; spread-out moments, growing geometrically, for
one with I/O) until it completes on its own. After every cut: ``recover()``
twice, then every invariant (search included), the all-or-nothing outcome of
the cut operation, and that the user still answers within a bound (no lock
left held). Stores that declare failpoints also get each one armed to raise
and to cancel.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from .base import StoreTests
from .contract import G1, G2, G3, G4, G5, G6, G7, G8, G9, G10, G11, SUMMARY_ROLE, Guarantee
from .contract.failpoints import Action, armed
from .core.checks import Model, check_returned, check_user, snapshot
from .core.history import describe
from .core.loop import suite_test
from .core.notes import not_exercised
from .core.recorder import LoggedStore, StoreFactory, recorded
from .core.settings import settings
from .core.threads import busy_workers
from .core.violations import expect, reframed
from .glue import require

_MAX_CUTS = 40
"""Cut points tried per operation; enough to pass every await of a store without I/O."""


def cut_points() -> Iterator[int]:
    """0, 1, ..., 16, then growing by half: dense where in-process stores suspend."""
    k = 0
    for _ in range(_MAX_CUTS):
        yield k
        k = k + 1 if k < 16 else k * 3 // 2


@dataclass
class Outcome:
    kind: str  # "ok" | "cancelled" | "raised"
    value: Any = None
    running: list[str] = field(default_factory=list)
    """Worker threads still running a call right after the cancel: the cancelled call's
    synchronous part, which a cancel cannot stop."""

    @property
    def ok(self) -> bool:
        return self.kind == "ok"


async def run_cut(s: LoggedStore, make: Callable[[], Awaitable[Any]],
                  steps: int | None, user: str | None = None) -> tuple[Outcome, bool]:
    """Run ``make()`` as a task and cancel it after ``steps`` loop steps (None: never).

    Returns the outcome and whether the cancel was actually delivered (the
    operation had not finished yet).
    """
    task: asyncio.Future[Any] = asyncio.ensure_future(make())
    for _ in range(steps or 0):
        if task.done():
            break
        await asyncio.sleep(0)
    delivered = steps is not None and not task.done()
    if delivered:
        s.log.note(f"cancel after {steps} event-loop steps", user)
        task.cancel()
    await asyncio.wait({task}, timeout=settings.op_timeout)
    expect(task.done(), G10, f"an operation kept running {settings.op_timeout:g}s after it "
                             "was cancelled", s.log)
    if task.cancelled() or isinstance(task.exception(), asyncio.CancelledError):
        running = busy_workers() if delivered else []
        if running:  # to_thread: the task ended, the sync call it awaited did not
            s.log.note(f"the cancelled call kept running in worker thread {running[0]}", user)
        return Outcome("cancelled", None if task.cancelled() else task.exception(),
                       running), delivered
    exc = task.exception()
    if exc is not None:
        if not isinstance(exc, Exception):
            raise exc
        return Outcome("raised", exc), delivered
    return Outcome("ok", task.result()), delivered


async def bounded(s: LoggedStore, what: str, awaitable: Awaitable[Any]) -> Any:
    """The store must still answer: a lock left held by the cut operation would hang here."""
    try:
        return await asyncio.wait_for(awaitable, settings.op_timeout)
    except asyncio.TimeoutError:
        expect(False, G10, f"{what} did not answer within {settings.op_timeout:g}s after an "
                           "interrupted operation and recover() (a lock left held?)", s.log)


# --------------------------------------------------------------------------- scenarios


@dataclass
class Cut:
    """One interruption: what ran, for which user, and the state before it."""

    op: str
    user: str
    before: list[Any]
    message_id: str | None = None
    content: str = ""


async def _seed(s: LoggedStore, m: Model, user: str, n: int) -> list[Any]:
    for i in range(n):
        await m.append(s, user, f"{user} remembers fact {i}", role=("user", "assistant")[i % 2])
    return snapshot(await s.get_history(user, 100))


def _prepare(op: str, s: LoggedStore, m: Model, user: str, with_id: bool
             ) -> Callable[[], Awaitable[Cut]]:
    async def prepare() -> Cut:
        n = s.keep_last + 3 if op == "compact" else 3
        before = await _seed(s, m, user, n)
        cut = Cut(op, user, before)
        if op == "append":
            cut.content = f"{user} interrupted write"
            cut.message_id = f"{user}-cut" if with_id and s.can("message_id") else None
            if cut.message_id and not s.keyed:  # keyed: an entry is known by its content
                m.user(user).maybe[cut.message_id] = ("user", cut.content)
            else:
                m.user(user).maybe_contents.append(cut.content)
        return cut
    return prepare


def _operation(s: LoggedStore, cut: Cut) -> Callable[[], Awaitable[Any]]:
    if cut.op == "append":
        return lambda: s.append_message(cut.user, "user", cut.content, message_id=cut.message_id)
    if cut.op == "compact":
        return lambda: s.compact(cut.user)
    if cut.op == "forget":
        return lambda: s.forget(cut.user)
    if cut.op == "get_history":
        return lambda: s.get_history(cut.user, 5)
    return lambda: s.search(cut.user, f"{cut.user} remembers fact 1", 3)


async def _verify(s: LoggedStore, m: Model, cut: Cut, outcome: Outcome) -> None:
    """After recover(): the cut operation took full effect or none, and G1-G9, G11 hold."""
    u = cut.user
    history = await bounded(s, f"get_history({u!r})", s.get_history(u, 100))
    ids = [e.id for e in history]
    old_ids = [row[0] for row in cut.before]
    if cut.op == "append":
        if outcome.ok:
            check_returned(outcome.value, u, "user", cut.content, cut.message_id, s)
            m.user(u).acked[outcome.value.id] = ("user", cut.content)
            m.user(u).maybe.pop(outcome.value.id, None)
            if cut.message_id is None:
                m.user(u).maybe_contents.remove(cut.content)
        await check_user(s, m, u)
        if cut.message_id is not None:
            # Either way, a retry must now settle it exactly once.
            again = await bounded(s, "a retry of the cut append", s.append_message(
                u, "user", cut.content, message_id=cut.message_id))
            check_returned(again, u, "user", cut.content, cut.message_id, s)
            m.user(u).acked[again.id] = ("user", cut.content)
            m.user(u).maybe.pop(again.id, None)
            await check_user(s, m, u)
            history = await bounded(s, f"get_history({u!r})", s.get_history(u, 100))
    elif cut.op == "compact" and s.keyed:
        # Covers are unseen: check_user's keyed reading is the whole check (summaries
        # first, then every acknowledged message but some older than the oldest live).
        await check_user(s, m, u)
    elif cut.op == "compact":
        keep = s.keep_last
        untouched = snapshot(history) == cut.before
        if untouched:
            expect(not outcome.ok or outcome.value is None, G10,
                   "compact returned a summary but the history is unchanged", s.log, user=u)
        else:
            summary = history[0] if history else None
            covers = sorted(summary.covers) if summary else []
            done = (summary is not None and summary.role == SUMMARY_ROLE
                    and ids[1:] == old_ids[-keep:] and covers == sorted(old_ids[:-keep]))
            expect(done, G10, f"an interrupted compaction left neither the old view nor the "
                              f"whole new one: {describe(history)}", s.log, user=u)
            if outcome.ok:
                expect(outcome.value is not None and outcome.value.id == ids[0], G10,
                       "compact returned a summary that is not the live one", s.log, user=u)
        await check_user(s, m, u)
        again = await bounded(s, f"compact({u!r})", s.compact(u))
        expect(again is not None, Guarantee.ATOMIC_COMPACTION,
               "compact after an interrupted compaction returned None with more than "
               "keep_last live entries", s.log, user=u)
        await check_user(s, m, u)
    elif cut.op == "forget":
        gone = history == []
        expect(gone or snapshot(history) == cut.before, G10,
               f"an interrupted forget left part of the history: {describe(history)}",
               s.log, user=u)
        expect(gone or not outcome.ok, G10, "forget returned but the history remains",
               s.log, user=u)
        if gone:
            m.forgot(u)
        await check_user(s, m, u)
        await bounded(s, f"forget({u!r})", s.forget(u))
        m.forgot(u)
        await check_user(s, m, u)
    else:
        expect(snapshot(history) == cut.before, G10, f"an interrupted {cut.op} changed the "
                                                     "history", s.log, user=u)
        await check_user(s, m, u)
    extra = await bounded(s, f"append_message({u!r})", s.append_message(u, "user", "still here"))
    m.user(u).acked[extra.id] = ("user", "still here")
    expect((await s.get_history(u, 1))[-1].id == extra.id, Guarantee.READ_YOUR_WRITES,
           "an append after recovery is not the newest entry", s.log, user=u)
    if cut.op == "append":
        await _settled(s, cut, history)


async def _settled(s: LoggedStore, cut: Cut, judged: list[Any]) -> None:
    """The cut append's effect, judged after recovery, is the same once a later append of
    the same user has returned: "took full effect or none" is a settled fact, not one the
    next call may still change (SPEC G10). A write whose cancel left its transaction open on
    a pooled connection commits with whatever that connection runs next, after the suite
    read it as absent (openai-agents 0.19.4, PR #4212); only a read after that later call
    sees it land."""
    def copies(entries: list[Any]) -> int:
        return sum(1 for e in entries if e.role == "user" and e.content == cut.content)

    before = copies(judged)
    later = await bounded(s, f"get_history({cut.user!r})", s.get_history(cut.user, 100))
    now = copies(later)
    expect(now == before, G10,
           f"the interrupted append {'appeared' if now > before else 'vanished'} after it was "
           f"judged: after recovery the history held it {before}x, and once a later append of "
           f"the same user had returned, {now}x (its effect was not settled: a transaction "
           f"the interruption left open, committed by a later call?): {describe(later)}",
           s.log, user=cut.user)


_UNCUT_RUNS = 3
"""Stop after this many runs finish before their cut: a store whose number of awaits
varies from run to run (retries, jitter) gets its later await points tried too."""


_FEATURE = {"append": "append", "compact": "compact", "forget": "forget",
            "get_history": "read", "search": "search"}


def _expect_uncut_ok(s: LoggedStore, op: str, k: int, outcome: Outcome, delivered: bool,
                     user: str) -> None:
    """A run that no cancel reached is a healthy valid call: it must succeed (G12).

    Without this, a call that always raises would read as "interrupted" at every
    cut point and pass: the all-or-nothing check accepts "none" for a failed call.
    """
    if delivered or outcome.ok:
        return
    how = (f"raised {type(outcome.value).__name__}: {outcome.value}" if outcome.kind == "raised"
           else "was cancelled though the suite never cancelled it")
    expect(False, Guarantee.ERRORS,
           f"{op} {how} before its cancel at step {k} was delivered (a valid call on a "
           "healthy store must not fail)", s.log, user=user)


async def sweep(store: StoreFactory, op: str, *, with_id: bool = True) -> int:
    """Cut ``op`` at every cut point until it completes uncut; returns the number of cuts."""
    async with recorded(store) as s:
        require(s, _FEATURE[op])
        m = Model()
        cuts = uncut = 0
        for k in cut_points():
            user = f"{op}-{k}"
            cut = await _prepare(op, s, m, user, with_id)()
            outcome, delivered = await run_cut(s, _operation(s, cut), k, user)
            _expect_uncut_ok(s, op, k, outcome, delivered, user)
            when = (f"was cancelled after {k} event-loop steps ({outcome.kind})" if delivered
                    else f"completed before its cancel at step {k} ({outcome.kind})")
            if outcome.running:
                when += (f", though the call kept running in worker thread {outcome.running[0]}"
                         " (a sync call under to_thread: the cancel ends only the await)")
            settled = ("recover() ran twice" if s.can("recover") else
                       "the store settled on its own (its profile has no recovery step)")
            context = f"{op} {when} and {settled}"
            with reframed(G10, context):
                await bounded(s, "recover()", s.recover())
                await bounded(s, "recover()", s.recover())
                await _verify(s, m, cut, outcome)
            cuts += delivered
            uncut += not delivered
            if uncut >= _UNCUT_RUNS:
                break
        return cuts


def _cut_somewhere(op: str, cuts: int) -> None:
    """A sweep whose every run completed before its cancel judged no interruption: say so."""
    if cuts == 0:
        not_exercised(f"{op}: every run completed before its cancel was delivered, so no "
                      "interruption was judged")


def _own_failpoints_fired(op: str, action: str, fired: dict[str, int]) -> None:
    """A failpoint named for ``op`` (``op`` one of its dotted parts, as in
    ``tiered.append.after_archive``) that never fired during ``op`` judged nothing: say so by
    name. Without this, one failpoint of ``op`` firing let every other one of it go untested
    without a word (names of other operations, or of none, are not expected to fire here)."""
    own = [name for name in fired if op in name.split(".")]
    silent = [name for name in own if not fired[name]]
    if silent:
        not_exercised(f"{op}: failpoint{'s' if len(silent) > 1 else ''} "
                      f"{', '.join(map(repr, silent))} armed to {action} never fired during "
                      f"{op}, so the interruption there was not judged")


def _store_without_failpoints(s: LoggedStore) -> bool:
    caps = s.capabilities
    return not (caps.failpoints and caps.failpoint_names)


# Every cut is followed by _verify: check_user over many users on one store, the retry of
# a cut append with its message_id (G6), a compaction after a cut one (G7), a forget
# after a cut one (G8), and an append that must read back as the newest entry (G3).
_AFTER_A_CUT = (G1, G2, G3, G4, G5, G9, G10, G11)
_OPS = [pytest.param("append", marks=pytest.mark.guarantee(G6)),
        pytest.param("compact", marks=pytest.mark.guarantee(G7)),
        pytest.param("forget", marks=pytest.mark.guarantee(G8)),
        "get_history", "search"]


class TestInterruption(StoreTests):
    """G10: cancellation at every await, and injected failures, then recover()."""

    @pytest.mark.guarantee(*_AFTER_A_CUT)
    @pytest.mark.parametrize("op", _OPS)
    @suite_test
    async def test_cancel_at_every_step_then_recover(self, store: StoreFactory, op: str) -> None:
        """G10: an operation cancelled at any await takes full effect or none.

        Troubleshooting: a cancel arrives at any ``await``. Keep each user's
        state change in one atomic step (one transaction, one MULTI/EXEC, one
        in-memory swap), or journal the intent and let ``recover()`` finish or
        undo it; release locks in ``finally`` (``async with``); never leave a
        compaction's summary written while its covered entries remain, or the
        entries deleted while the summary is missing.
        """
        _cut_somewhere(op, await sweep(store, op))

    @pytest.mark.guarantee(*_AFTER_A_CUT)
    @suite_test
    async def test_cancelled_append_without_message_id(self, store: StoreFactory) -> None:
        """G10: a cancelled append without message_id shows up once or not at all.

        Troubleshooting: a write that continues after its caller's cancel
        must not also be retried by ``recover()`` under a new id.
        """
        _cut_somewhere("append", await sweep(store, "append", with_id=False))

    @pytest.mark.guarantee(*_AFTER_A_CUT)
    @pytest.mark.parametrize("action", ["raise", "cancel"])
    @pytest.mark.parametrize("op", _OPS[:3])
    @suite_test
    async def test_failpoints_then_recover(self, store: StoreFactory, op: str,
                                           action: str) -> None:
        """G10: a backend failing (or the task cancelled) at each declared failpoint.

        Runs only for stores whose ``capabilities`` declare ``failpoints`` and
        ``failpoint_names``, and needs at least one of those names to fire
        during ``op``: armed names that the operation never reaches inject
        nothing, and a G10 test with no fault injected would pass on any store.
        Troubleshooting: the failing point is named in the log; after it,
        ``recover()`` must complete or roll back the operation so that it took
        full effect or none. If none fired, the store calls ``failpoint()``
        with other names than it declares, or through another copy of
        ``nomnesia.suite.contract.failpoints`` than the suite's.
        """
        async with recorded(store) as s:
            require(s, _FEATURE[op])
            if _store_without_failpoints(s):
                pytest.skip("the store declares no failpoints (Capabilities.failpoints)")
            m = Model()
            fired: dict[str, int] = {}
            for n, name in enumerate(s.capabilities.failpoint_names):
                user = f"{op}-{action}-{n}"
                cut = await _prepare(op, s, m, user, True)()
                act = Action.raise_() if action == "raise" else Action.cancel()
                with armed(name, act) as handle:
                    s.log.note(f"failpoint {name!r} armed to {action}", user)
                    outcome, _ = await run_cut(s, _operation(s, cut), None, user)
                fired[name] = handle.fired
                context = (f"{op} with failpoint {name!r} armed to {action} "
                           f"(fired {handle.fired}x, {outcome.kind}) and recover() twice")
                with reframed(G10, context):
                    await bounded(s, "recover()", s.recover())
                    await bounded(s, "recover()", s.recover())
                    await _verify(s, m, cut, outcome)
            never = [name for name, count in fired.items() if not count]
            expect(len(never) < len(fired), G10,
                   f"no declared failpoint fired during {op}, so no fault was injected and "
                   f"the interruption was never tested; armed to {action} but never fired: "
                   f"{', '.join(map(repr, never))} (does the store call "
                   "nomnesia.suite.contract.failpoints.failpoint with exactly these names?)")
            _own_failpoints_fired(op, action, fired)

