"""The model-based test's machinery: Hypothesis's state machine over a store, and its runner.

Its own module because it is a tool, not a test: ``suite/test_model.py`` holds the
one test (``TestModel``) that calls :func:`run_model`, and the project's own tests
run the same machine on stores whose verdict they know (``tests/test_model_mutants``).
What it checks, and how a failure is shrunk and replayed, is told in
``suite/test_model.py``'s docstring.
"""

from __future__ import annotations

import contextlib
from collections.abc import Coroutine
from contextlib import AsyncExitStack
from typing import Any, TypeVar

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

from ..contract import (
    G1,
    G3,
    G6,
    G7,
    G8,
    G9,
    G10,
    INPUTS,
    SUMMARY_ROLE,
    EntryLike,
)
from .checks import Model, check_hits, check_user, search_finds, snapshot
from .fresh import Namespace
from .history import History, pair
from .model_inputs import (
    CONTENTS,
    INVALID,
    LONGEST,
    MESSAGE_IDS,
    PLAIN,
    QUERIES,
    ROLE,
    USERS,
    by_index,
)
from .model_loop import Hung, MachineLoop, ModelViolation
from .recorder import LoggedStore, StoreFactory, opened
from .settings import settings
from .violations import GuaranteeViolation, expect, store_error

__all__ = ["DEFAULT_EXAMPLES", "DEFAULT_STEPS", "ModelViolation", "StoreMachine", "run_model"]

T = TypeVar("T")

DEFAULT_EXAMPLES = 50
"""Sequences tried per store (``--nomnesia-model-examples``): it runs on every stack."""
DEFAULT_STEPS = 20
"""Calls per sequence at most (``--nomnesia-model-steps``)."""

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

    def __init__(self, factory: StoreFactory, loop: MachineLoop, seed: int, *,
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
            raise Hung(self._violation(exc)) from None

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
        step failed (``MachineLoop.take``), else close it."""
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
            await self.model.append(self.s, user, f"{PLAIN[i % len(PLAIN)]} ({i})",
                                    role=("user", "assistant")[i % 2])
        if n:
            await self._check(user)

    @rule(user=USERS, role=ROLE, content=CONTENTS)
    def append(self, user: str, role: str, content: str) -> None:
        self._step(self._append(user, role, content, None))

    @precondition(lambda self: not self.appended_longest)
    @rule(user=USERS, content=by_index(LONGEST))
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
    loop = MachineLoop()
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
        except Hung as hung:  # too many hangs to shrink further
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
