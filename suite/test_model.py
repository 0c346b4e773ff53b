"""Sequential model-based tests: Hypothesis chooses the calls, the suite's model judges each answer.

The hand-written sequential tests (``test_contract``) try the call sequences
their authors thought of. Here Hypothesis's stateful testing
(``hypothesis.stateful.RuleBasedStateMachine``) generates sequences of
``append_message`` (fresh, with a ``message_id``, exact retries and
conflicting ones), ``compact``, ``forget``, ``get_history``, ``search``,
``recover`` and invalid calls, over a few users that are adversarial ids from
``nomnesia.suite.core.inputs`` and contents that include NUL, empty and 65,536 code
points. After every call the store is checked against the suite's own model
(``_checks.Model`` and ``check_user``, the same judge the other sequential
tests use) plus what that call must have done to the previous state (a
compaction covers exactly the prefix, a retry changes nothing, a rejected call
writes nothing ...).

On a failure Hypothesis shrinks the sequence to the smallest one it can find
and replays it; the message names the broken guarantee and lists that
sequence, numbered, with what each call returned. The generation is seeded
from the run's seed, so ``--nomnesia-seed N`` replays the same sequences (and
the same shrunk one) on a store that answers the same calls the same way.

Every call runs on one event loop that the test owns (the state machine is
synchronous, stores are async), each example with fresh ids, on the store the
previous example passed on (a fresh one from the factory after any failure, so
shrinking and the reported sequence run on fresh stores). The budget is
``--nomnesia-model-examples`` sequences of at most ``--nomnesia-model-steps``
calls; no example database is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import time
from collections.abc import Coroutine, Sequence
from contextlib import AsyncExitStack
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, Phase
from hypothesis import seed as hypothesis_seed
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis.errors import Flaky
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    multiple,
    precondition,
    rule,
    run_state_machine_as_test,
)

from .base import StoreTests
from .contract import (
    G1,
    G2,
    G3,
    G4,
    G5,
    G6,
    G7,
    G8,
    G9,
    G10,
    G11,
    G12,
    INPUTS,
    MAX_CONTENT,
    ROLES,
    SUMMARY_ROLE,
    EntryLike,
    Guarantee,
)
from .core.checks import Model, check_hits, check_user, search_finds, snapshot
from .core.fresh import Namespace
from .core.history import History, pair
from .core.inputs import (
    ADVERSARIAL_CONTENTS,
    ADVERSARIAL_USER_IDS,
    INVALID_CONTENTS,
    INVALID_KS,
    INVALID_MESSAGE_IDS,
    INVALID_ROLES,
    INVALID_USER_IDS,
)
from .core.loop import in_flight
from .core.recorder import LoggedStore, StoreFactory, opened
from .core.settings import settings
from .core.violations import GuaranteeViolation, expect, store_error

__all__ = ["DEFAULT_EXAMPLES", "DEFAULT_STEPS", "ModelViolation", "StoreMachine", "TestModel",
           "run_model"]

DEFAULT_EXAMPLES = 50
"""Sequences tried per store (``--nomnesia-model-examples``): it runs on every stack."""
DEFAULT_STEPS = 20
"""Calls per sequence at most (``--nomnesia-model-steps``)."""

T = TypeVar("T")


def _by_index(values: Sequence[T]) -> st.SearchStrategy[T]:
    """``sampled_from(values)`` whose repr stays short however long the values are.

    Hypothesis formats the repr of the machine's rule strategy, arguments and all,
    each time a precondition rejects a rule; with the 65,536-code-point contents and
    the invalid values (130 KB each) in it, that formatting was 30% of the model
    test's time on an in-memory store. Drawing an index shrinks the same way.
    """
    return st.sampled_from(range(len(values))).map(values.__getitem__)

# Users: "ann" three times in four (so that one user's history grows long
# enough to compact, twice), otherwise ids that break stores that match users by
# prefix, case, trimmed whitespace, a wildcard or a filter expression.
_OTHER_USERS = ("anna", "Ann", "ann ", "*", '" or user_id != "', "@user_id:{ann}", "🧠")
assert all(u in ADVERSARIAL_USER_IDS for u in ("ann", *_OTHER_USERS))
USERS = st.one_of(st.just("ann"), st.just("ann"), st.just("ann"), st.sampled_from(_OTHER_USERS))

_PLAIN = ("pay the rent on friday", "my favourite colour is teal", "call the dentist",
          "deploy the service", "the cat sat on the mat")
_ODD = ("", "\x00", "a\x00b", " leading", "trailing ", "e\u0301", "🧠💾",
        "'; DROP TABLE x; --")
_LONGEST = ("x" * MAX_CONTENT, "🧠" * MAX_CONTENT)
"""The longest valid contents, appended by a rule of their own (truncation shows at once)."""
assert all(c in ADVERSARIAL_CONTENTS for c in (*_ODD, *_LONGEST))
CONTENTS = st.one_of(st.sampled_from(_PLAIN), st.sampled_from(_ODD))
ROLE = st.sampled_from(sorted(ROLES))
MESSAGE_IDS = st.sampled_from(("m1", "m2", "M1"))
"""Few, so that Hypothesis reuses them: retries, conflicts, and re-appends after forget."""
QUERIES = st.one_of(CONTENTS, st.just("words nobody wrote"))

_INVALID: tuple[tuple[str, object], ...] = (
    *(("role", v) for v in INVALID_ROLES),
    *(("content", v) for v in INVALID_CONTENTS),
    *(("message_id", v) for v in INVALID_MESSAGE_IDS),
    *(("user_id", v) for v in INVALID_USER_IDS),
    *(("limit", v) for v in INVALID_KS),
    *(("k", v) for v in INVALID_KS),
)
INVALID = _by_index(_INVALID)


class ModelViolation(GuaranteeViolation):
    """A broken guarantee found by the state machine; ``calls`` is the (shrunk) call sequence."""

    def __init__(self, guarantee: Guarantee, detail: str, *, calls: Sequence[str], seed: int,
                 evidence: str) -> None:
        self.calls = list(calls)
        self.seed = seed
        super().__init__(guarantee, detail, evidence=evidence)


class _Hung(BaseException):
    """Too many hangs to keep shrinking. Not an ``Exception``, so Hypothesis stops at once."""

    def __init__(self, violation: GuaranteeViolation) -> None:
        super().__init__(str(violation))
        self.violation = violation


class _Loop:
    """The one event loop of a model test: every store call of every example runs on it.

    A step that does not finish within ``--nomnesia-op-timeout`` is a G12 hang.
    Hypothesis then shrinks it like any failure, but replays that hang again
    would each wait out the full timeout; after the first hang the bound drops
    to twenty times the median step (at least half a second), and
    after ``MAX_HANGS`` hangs the run stops with the sequence it has.
    """

    MAX_HANGS = 40

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.durations: list[float] = []
        self.hangs = 0
        self.kept: tuple[AsyncExitStack, Any] | None = None
        """The store the last sequence passed on, and the stack that closes it."""
        self.failed = False
        """Whether any sequence failed: from then on every sequence gets a fresh store."""

    def take(self) -> tuple[AsyncExitStack, Any] | None:
        """The store a passing sequence left, for the next sequence; None for a fresh one.

        Opening a store costs more than a sequence's calls on most engines (a schema
        and its functions created, then dropped: 58 of the 122 stores a redis suite run
        opened were the model test's, at about 68 ms of CPU each). Every sequence has fresh
        ids, so what an earlier one wrote is another user's, as in any store in use.
        Once a sequence fails, the store may be poisoned, so shrinking and the replay
        that Hypothesis reports run on fresh stores only, as before.
        """
        kept, self.kept = self.kept, None
        return None if self.failed else kept

    def close_kept(self) -> None:
        """Close the store the last passing sequence left (bounded like a teardown)."""
        if self.kept is not None:
            stack, self.kept = self.kept[0], None
            self.run(stack.aclose(), History(), "closing the store", settings.timeout)

    def run(self, coro: Coroutine[Any, Any, T], log: History, what: str,
            limit: float | None = None) -> T:
        """Run ``coro`` to completion on the loop, bounded as above (or by ``limit``)."""
        if limit is None:
            limit = settings.op_timeout
            if self.hangs:
                limit = min(limit, max(0.5, 20 * statistics.median(self.durations or [0.0])))
        task = self.loop.create_task(coro)
        start = time.monotonic()
        self.loop.run_until_complete(asyncio.wait({task}, timeout=limit))
        if task.done():
            self.durations.append(time.monotonic() - start)
            return task.result()
        pending = in_flight([log])
        task.cancel()
        self.loop.run_until_complete(asyncio.wait({task}, timeout=2.0))
        shrinking = (f" (while shrinking; the first hang waited the full "
                     f"--nomnesia-op-timeout of {settings.op_timeout:g}s)" if self.hangs else "")
        self.hangs += 1
        raise GuaranteeViolation(
            G12, f"{what} did not finish within {limit:g}s{shrinking} (in flight: "
                 f"{pending or 'nothing'}). A store must raise within a bounded time, never hang",
            log)

    def close(self) -> None:
        loop = self.loop
        try:
            leftovers = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for t in leftovers:
                t.cancel()
            if leftovers:
                loop.run_until_complete(asyncio.wait(leftovers, timeout=2.0))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


class StoreMachine(RuleBasedStateMachine):
    """One example: fresh ids, and the calls Hypothesis chooses, each checked at once.

    ``self.live[u]`` is user ``u``'s whole live history as the last check read
    it; a rule compares what its call did against it. The model
    (``_checks.Model``) remembers every acknowledged append, summary and
    forgotten id, and ``check_user`` re-checks G1-G5, G7-G9 and G11 after every
    call for the user it touched.
    """

    with_id = Bundle("with_id")
    """Acknowledged appends with a message_id, as (user, role, content, message_id): retried."""

    def __init__(self, factory: StoreFactory, loop: _Loop, seed: int, *,
                 invalid_calls: bool = True) -> None:
        super().__init__()
        self._loop = loop
        self._seed = seed
        self.model = Model()
        self.calls: list[str] = []
        self.live: dict[str, list[EntryLike]] = {}
        self.first: dict[tuple[str, str], tuple[Any, ...]] = {}
        self._own_calls = 1  # store calls a step makes before its checks (a prefill makes n)
        self.invalid_calls = invalid_calls
        self.appended_longest = False
        self._clean = True  # false while a step runs and after one that failed
        log = History()
        kept = loop.take()
        if kept is None:
            stack = AsyncExitStack()
            try:
                # Opening and closing may create and drop schemas: the whole-test bound.
                store = self._run(stack.enter_async_context(opened(factory)), log,
                                  "opening a store", settings.timeout)
            except GuaranteeViolation as exc:
                loop.failed = True
                raise self._violation(exc) from exc
            kept = (stack, store)
        self._store = kept
        self.s = LoggedStore(kept[1], log, ids=Namespace.new())  # fresh ids per sequence

    # ------------------------------------------------------------------ plumbing

    def _run(self, coro: Coroutine[Any, Any, T], log: History, what: str,
             limit: float | None = None) -> T:
        hangs = self._loop.hangs
        try:
            return self._loop.run(coro, log, what, limit)
        except GuaranteeViolation as exc:
            if self._loop.hangs == hangs or self._loop.hangs < self._loop.MAX_HANGS:
                raise
            self._record(log)
            raise _Hung(self._violation(exc)) from None

    def _step(self, body: Coroutine[Any, Any, T]) -> T:
        """Run one rule's calls and checks; a failure carries the whole sequence so far."""
        self.s.log = log = History()  # this step's store calls only
        self._clean = False
        try:
            result = self._run(body, log, "a model step")
        except GuaranteeViolation as exc:
            self._record(log)
            raise self._violation(exc) from exc
        except Exception as exc:
            violation = store_error(exc, [log])
            if violation is None:
                raise
            self._record(log)
            raise self._violation(violation) from exc
        self._record(log)
        self._clean = True
        return result

    def _record(self, log: History) -> None:
        """Add the step's own calls (not the checks after them) to the sequence."""
        calls = pair(log)[:max(1, self._own_calls)]
        self._own_calls = 1
        self.calls += [f"{c.text} -> {c.outcome}" for c in calls]

    def _violation(self, exc: GuaranteeViolation) -> ModelViolation:
        numbered = "\n".join(f"  {n:>3}. {call}" for n, call in enumerate(self.calls, 1))
        evidence = (f"the smallest call sequence Hypothesis found, {len(self.calls)} calls on a "
                    f"fresh store (seed {self._seed}: replay with --nomnesia-seed "
                    f"{self._seed}):\n{numbered or '  (none)'}\n\n"
                    f"the last call and the checks after it:\n{exc.evidence or '  (none)'}")
        return ModelViolation(exc.guarantee, exc.detail, calls=self.calls, seed=self._seed,
                              evidence=evidence)

    def teardown(self) -> None:
        """Forget this sequence's users; keep the store for the next sequence unless a
        step failed (``_Loop.take``), else close it."""
        # After a hang, closing the store may hang too: then it gets a step's bound.
        limit = None if self._loop.hangs else settings.timeout
        if not self._clean:
            self._loop.failed = True
        try:
            self._run(self.s.clean_up(), self.s.log, "forgetting the sequence's users", limit)
        except BaseException:
            self._loop.failed = True
            raise
        finally:
            if self._loop.failed:
                self._run(self._store[0].aclose(), self.s.log, "closing the store", limit)
            else:
                self._loop.kept = self._store

    async def _check(self, user: str) -> list[EntryLike]:
        """``check_user``, with its search probes limited to contents of a normal size.

        Embedding the longest valid content takes a tenth of a second with the
        hashing embedder; probing it after every later call would make the test
        ten times slower. It is still checked on append and searched by ``search``.
        """
        s, u = self.s, self.model.user(user)
        history = await check_user(s, self.model, user, searches=0)
        self.live[user] = history
        live = {e.id: e for e in history}
        messages = [e for e in history if e.role != SUMMARY_ROLE and len(e.content) <= 1000]
        for e in messages[-1:]:
            check_hits(await search_finds(s, user, e.content), user, 5, live, self.model, s)
        # Search never lags behind compaction or forget: probe what must be gone.
        covered = [c for e in history if e.role == SUMMARY_ROLE for c in e.covers]
        known = u.acked | u.maybe
        dead = [c for i, c in u.gone.items() if i not in live][-2:]
        dead += [known[i][1] for i in covered if i in known][-2:]
        for content in dead:
            if len(content) <= 1000:
                check_hits(await s.search(user, content, 5), user, 5, live, self.model, s)
        return history

    async def _read(self, user: str) -> list[EntryLike]:
        """The whole live history, for before/after comparisons (another user's entry is G9)."""
        got = await self.s.get_history(user, len(self.live.get(user, ())) + 10)
        other = next((e.user_id for e in got if e.user_id != user), None)
        expect(other is None, G9, f"get_history({user!r}) returned an entry of user {other!r}",
               self.s.log)
        return got

    # ------------------------------------------------------------------ rules

    @initialize(n=st.integers(0, 9))
    def prefill(self, n: int) -> None:
        """Start ann with ``n`` messages, so that sequences reach compaction and beyond."""
        self._own_calls = n
        self._step(self._prefill("ann", n))

    async def _prefill(self, user: str, n: int) -> None:
        for i in range(n):
            await self.model.append(self.s, user, f"{_PLAIN[i % len(_PLAIN)]} ({i})",
                                    role=("user", "assistant")[i % 2])
        if n:
            await self._check(user)

    @rule(user=USERS, role=ROLE, content=CONTENTS)
    def append(self, user: str, role: str, content: str) -> None:
        self._step(self._append(user, role, content, None))

    @precondition(lambda self: not self.appended_longest)
    @rule(user=USERS, content=_by_index(_LONGEST))
    def append_longest(self, user: str, content: str) -> None:
        """Once per sequence: embedding 65,536 code points is the slowest thing a store does."""
        self.appended_longest = True
        self._step(self._append(user, "user", content, None))

    @rule(target=with_id, user=USERS, role=ROLE, content=CONTENTS, message_id=MESSAGE_IDS)
    def append_with_id(self, user: str, role: str, content: str, message_id: str) -> Any:
        return self._step(self._append(user, role, content, message_id))

    @rule(target=with_id, previous=with_id)
    def retry(self, previous: tuple[str, str, str, str]) -> Any:
        return self._step(self._append(*previous))

    async def _append(self, user: str, role: str, content: str,
                      message_id: str | None) -> Any:
        s, u = self.s, self.model.user(user)
        before = snapshot(self.live.get(user, []))
        known = u.acked.get(message_id) if message_id is not None else None
        if known is not None and known != (role, content):
            try:
                await s.append_message(user, role, content, message_id=message_id)
            except ValueError:
                pass
            except Exception as exc:
                expect(False, G6, f"a retry of message_id {message_id!r} with another role or "
                                  f"content raised {type(exc).__name__}, not ValueError", s.log)
            else:
                expect(False, G6, f"a retry of message_id {message_id!r} with another role or "
                                  "content did not raise ValueError", s.log)
            expect(snapshot(await self._read(user)) == before, G6,
                   "a conflicting retry changed the history", s.log)
            await self._check(user)
            return multiple()
        if known is not None:
            assert message_id is not None
            again = await self.model.append(s, user, content, role=role, message_id=message_id)
            first = self.first[(user, message_id)]
            expect(snapshot([again])[0][:2] + snapshot([again])[0][3:] == first[:2] + first[3:],
                   G6, "a retry with the same message_id returned another entry than the first "
                       "append did", s.log)
            expect(snapshot(await self._read(user)) == before, G6,
                   "a retry with an accounted-for message_id changed the history", s.log)
            await self._check(user)
            return multiple()
        entry = await self.model.append(s, user, content, role=role, message_id=message_id)
        self.first[(user, entry.id)] = snapshot([entry])[0]
        after = await self._check(user)
        expect([e.id for e in after] == [e[0] for e in before] + [entry.id], G3,
               lambda: f"after append_message returned {entry.id!r}, get_history is not the "
                       f"history before it plus that entry: {[e.id for e in after]}", s.log)
        expect(snapshot(after[-1:]) == snapshot([entry]), G1,
               "get_history holds the new entry differently from what append_message returned",
               s.log)
        return multiple() if message_id is None else (user, role, content, message_id)

    @rule(user=USERS)
    def compact(self, user: str) -> None:
        self._step(self._compact(user))

    async def _compact(self, user: str) -> None:
        s = self.s
        before = self.live.get(user, [])
        keep = s.keep_last
        summary = await s.compact(user)
        if len(before) <= keep:
            expect(summary is None, G7, f"compact with {len(before)} live entries "
                                        f"(keep_last={keep}) returned a summary", s.log)
            expect(snapshot(await self._read(user)) == snapshot(before), G7,
                   "a compact that returned None changed the history", s.log)
            await self._check(user)
            return
        expect(summary is not None, G7, f"compact with {len(before)} live entries, more than "
                                        f"keep_last={keep}, returned None", s.log)
        assert summary is not None
        self.model.user(user).summaries.add(summary.id)
        prefix, kept = before[:-keep], before[-keep:]
        expected = [c for e in prefix for c in (e.covers if e.role == SUMMARY_ROLE else (e.id,))]
        expect(summary.role == SUMMARY_ROLE and summary.user_id == user, G7,
               f"compact({user!r}) returned role {summary.role!r} of user {summary.user_id!r}",
               s.log)
        expect(sorted(summary.covers) == sorted(expected), G7,
               lambda: f"the summary covers {sorted(summary.covers)}, not the messages of the "
                       f"compacted prefix {sorted(expected)}", s.log)
        after = await self._read(user)
        expect([e.id for e in after] == [summary.id, *(e.id for e in kept)], G7,
               lambda: f"after compact the history is {[e.id for e in after]}, not the summary "
                       f"followed by the newest keep_last={keep}", s.log)
        await self._check(user)

    @rule(user=USERS)
    def forget(self, user: str) -> None:
        self._step(self._forget(user))

    async def _forget(self, user: str) -> None:
        await self.s.forget(user)
        self.model.forgot(user)
        left = await self._read(user)
        expect(not left, G8, f"get_history({user!r}) returns {len(left)} entries after forget",
               self.s.log)
        await self._check(user)

    @rule(user=USERS, limit=st.integers(1, 6))
    def get_history(self, user: str, limit: int) -> None:
        self._step(self._history(user, limit))

    async def _history(self, user: str, limit: int) -> None:
        got = await self.s.get_history(user, limit)
        full = await self._check(user)
        expect(snapshot(got) == snapshot(full[-limit:]), G3,
               lambda: f"get_history({user!r}, limit={limit}) returned {[e.id for e in got]}, not "
                       f"the newest {limit} of {[e.id for e in full]} in ascending seq order",
               self.s.log)

    @rule(user=USERS, query=QUERIES, k=st.integers(1, 3))
    def search(self, user: str, query: str, k: int) -> None:
        self._step(self._search(user, query, k))

    async def _search(self, user: str, query: str, k: int) -> None:
        s = self.s
        hits = await s.search(user, query, k)
        live = {e.id: e for e in await self._check(user)}
        check_hits(hits, user, k, live, self.model, s)
        exact = any(e.role != SUMMARY_ROLE and e.content == query for e in live.values())
        if exact and not any(h.content == query for h in hits):
            await search_finds(s, user, query, k)  # waits out search_staleness, else G4

    @rule()
    def recover(self) -> None:
        self._step(self._recover())

    async def _recover(self) -> None:
        await self.s.recover()
        for user, before in list(self.live.items()):
            expect(snapshot(await self._read(user)) == snapshot(before), G10,
                   f"recover() changed the history of healthy user {user!r}", self.s.log)
            await self._check(user)

    @precondition(lambda self: self.invalid_calls)
    @rule(user=USERS, invalid=INVALID)
    def invalid_call(self, user: str, invalid: tuple[str, object]) -> None:
        self._step(self._invalid(user, *invalid))

    async def _invalid(self, user: str, field: str, value: Any) -> None:
        s = self.s
        before = snapshot(self.live.get(user, []))
        args: dict[str, Any] = {"user_id": user, "role": "user",
                                "content": "an invalid call's content", "message_id": None}
        try:
            if field == "limit":
                await s.get_history(user, value)
            elif field == "k":
                await s.search(user, "pay the rent", value)
            else:
                args[field] = value
                await s.append_message(args["user_id"], args["role"], args["content"],
                                       message_id=args["message_id"])
        except (ValueError, TypeError):
            pass
        except Exception as exc:
            expect(False, INPUTS, f"an invalid {field} {value!r:.60} raised "
                                  f"{type(exc).__name__}, not ValueError or TypeError", s.log)
        else:
            expect(False, INPUTS, f"an invalid {field} {value!r:.60} was accepted, not "
                                  "rejected with ValueError or TypeError", s.log)
        expect(snapshot(await self._read(user)) == before, INPUTS,
               f"a call rejected for its {field} changed the history (written before the "
               "check?)", s.log)
        await self._check(user)


def run_model(factory: StoreFactory, *, seed: int, examples: int = DEFAULT_EXAMPLES,
              steps: int = DEFAULT_STEPS, invalid_calls: bool = True) -> None:
    """Run the state machine on ``factory``'s stores; raise ``ModelViolation`` on a failure.

    ``invalid_calls=False`` leaves out the invalid-input rule (to show that a
    store's other bugs are found too). Same ``seed``, same sequences:
    Hypothesis's own randomness is seeded from it (``hypothesis.seed``), which
    also wins over ``--hypothesis-seed``.
    """
    loop = _Loop()
    try:
        def machine() -> StoreMachine:
            return StoreMachine(factory, loop, seed, invalid_calls=invalid_calls)

        hypothesis_seed(seed)(machine)
        budget = hypothesis_settings(
            max_examples=examples, stateful_step_count=steps, deadline=None, database=None,
            print_blob=False, report_multiple_bugs=False, derandomize=False,
            suppress_health_check=list(HealthCheck),
            # The explain phase replays the shrunk sequence with each part varied,
            # to say which parts matter: minutes on an engine, and our message
            # already shows what every call returned.
            phases=[p for p in Phase if p is not Phase.explain])
        try:
            # Any zero-argument callable returning a machine will do (Hypothesis's docs).
            run_state_machine_as_test(machine, settings=budget)  # type: ignore[arg-type]
            loop.close_kept()  # the last passing sequence's store: a hang here is G12 too
        except _Hung as hung:  # too many hangs to shrink further
            raise hung.violation from None
        except Flaky as exc:
            found = [e for e in getattr(exc, "exceptions", ()) if isinstance(e, ModelViolation)]
            if not found:
                raise
            first = found[0]
            raise ModelViolation(
                first.guarantee, f"{first.detail} (this failure did not happen again when the "
                "same calls were replayed on a fresh store: the store answers the same "
                "sequence differently from run to run, or once it has served earlier "
                "sequences' users)", calls=first.calls, seed=seed, evidence=first.evidence
            ) from exc
    finally:
        with contextlib.suppress(Exception):  # a store a failure left: not to hide that
            loop.close_kept()
        loop.close()


class TestModel(StoreTests):
    """Random call sequences, shrunk to the smallest that breaks a guarantee."""

    @pytest.mark.needs("entries", "rejects")  # the model is the full contract, every call of it
    @pytest.mark.guarantee(G1, G2, G3, G4, G5, G6, G7, G8, G9, G10, G11, G12, INPUTS)
    def test_model_based_call_sequences(self, store: StoreFactory,
                                        request: pytest.FixtureRequest) -> None:
        """G1-G9, G11 and Inputs over call sequences that Hypothesis generates and shrinks.

        Troubleshooting: the message lists the smallest failing sequence, each call
        with what it returned, and the seed; ``--nomnesia-seed N`` replays it. Read
        it as a regression test to write: the failing check is the last call's,
        after the earlier calls built up the state it needs. Raise the budget with
        ``--nomnesia-model-examples`` / ``--nomnesia-model-steps`` to search harder.
        """
        __tracebackhide__ = True
        config = request.config
        examples = config.getoption("nomnesia_model_examples", None) or DEFAULT_EXAMPLES
        steps = config.getoption("nomnesia_model_steps", None) or DEFAULT_STEPS
        run_model(store, seed=settings.seed, examples=int(examples), steps=int(steps))
