"""The workload and the concurrency tests, judged against stores whose verdict we know.

Correct stores, including ones that use every freedom SPEC.md grants (gaps in
seq, their own id formats, search lag within ``search_staleness``, another
``keep_last``, compactions that take several event-loop turns), must never
be flagged. Broken ones that hit one operation in 25 must be caught by the
suite's concurrency tests for every seed, and so must FragileMemoryStore.
"""


from __future__ import annotations

import asyncio
import itertools
import os
import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from types import TracebackType
from typing import Any

import pytest

from nomnesia.adapters.fragile import FragileMemoryStore
from nomnesia.adapters.memory import InMemoryStore
from nomnesia.adapters.text import ConcatSummarizer, Embedder
from nomnesia.suite import test_concurrency as concurrency
from nomnesia.suite.contract import ConsistencyReport, Difference, Entry, EntryLike, Guarantee
from nomnesia.suite.contract.errors import BackendTimeout
from nomnesia.suite.core.fresh import scrub
from nomnesia.suite.core.violations import GuaranteeViolation
from nomnesia.suite.core.workload import (
    Outcome,
    Workload,
    resolve_rounds,
    resolve_seed,
    run_rounds,
)


class YieldingSummarizer(ConcatSummarizer):
    """Takes a few event-loop turns, so reads and appends really run during a compaction."""

    def __init__(self, rng: random.Random) -> None:
        super().__init__()
        self.rng = rng

    async def summarize(self, user_id: str, entries: Sequence[EntryLike]) -> str:
        for _ in range(self.rng.randint(1, 4)):
            await asyncio.sleep(0)
        return await super().summarize(user_id, entries)


class Wrapper:
    """Delegates to an InMemoryStore; subclasses change one behaviour."""

    def __init__(self, *, keep_last: int = 4, seed: int = 0, jitter: bool = True,
                 embedder: Embedder | None = None) -> None:
        self.rng = random.Random(seed)
        self.inner = InMemoryStore(keep_last=keep_last, summarizer=YieldingSummarizer(self.rng),
                                   embedder=embedder)
        self.keep_last = keep_last
        self.search_staleness = 0.0
        self.jitter = jitter

    async def __aenter__(self) -> Wrapper:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()

    async def _yield(self) -> None:
        # Widen every call's interval so that calls overlap in the history,
        # while the inner store keeps each one atomic: still linearizable.
        if self.jitter:
            for _ in range(self.rng.randint(0, 2)):
                await asyncio.sleep(0)

    async def append_message(self, user_id: str, role: str, content: str,
                             *, message_id: str | None = None) -> Any:
        await self._yield()
        entry = await self.inner.append_message(user_id, role, content, message_id=message_id)
        await self._yield()
        return entry

    async def get_history(self, user_id: str, limit: int = 10) -> list[Any]:
        await self._yield()
        entries = await self.inner.get_history(user_id, limit)
        await self._yield()
        return list(entries)

    async def search(self, user_id: str, query: str, k: int = 5) -> list[Any]:
        await self._yield()
        entries = await self.inner.search(user_id, query, k)
        await self._yield()
        return list(entries)

    async def compact(self, user_id: str) -> Any:
        await self._yield()
        summary = await self.inner.compact(user_id)
        await self._yield()
        return summary

    async def forget(self, user_id: str) -> None:
        await self._yield()
        await self.inner.forget(user_id)
        await self._yield()

    async def consistent_state(self, user_id: str) -> Any:
        return await self.inner.consistent_state(user_id)

    async def recover(self) -> None:
        await self.inner.recover()

    async def aclose(self) -> None:
        await self.inner.aclose()


# ----------------------------------------------------------------- correct, using freedoms


@dataclass(frozen=True)
class _Shown:
    """A store's own entry type: any object with the SPEC attributes will do."""

    id: str
    user_id: str
    seq: int
    role: str
    content: str
    covers: tuple[str, ...]


class GappyIds(Wrapper):
    """Seq with gaps (x 10 + 3) and its own id format for store-made ids and summaries."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._ids = itertools.count()

    def _show(self, e: EntryLike) -> _Shown:
        return _Shown(self._out(e.id), e.user_id, e.seq * 10 + 3, e.role, e.content,
                      tuple(self._out(c) for c in e.covers))

    @staticmethod
    def _out(entry_id: str) -> str:
        return entry_id.replace("summary-", "S/") if entry_id.startswith("summary-") else entry_id

    async def append_message(self, user_id: str, role: str, content: str,
                             *, message_id: str | None = None) -> Any:
        mid = message_id if message_id is not None else f"gen:{next(self._ids)}/{user_id[:3]}"
        return self._show(await super().append_message(user_id, role, content, message_id=mid))

    async def get_history(self, user_id: str, limit: int = 10) -> list[Any]:
        return [self._show(e) for e in await super().get_history(user_id, limit)]

    async def search(self, user_id: str, query: str, k: int = 5) -> list[Any]:
        return [self._show(e) for e in await super().search(user_id, query, k)]

    async def compact(self, user_id: str) -> Any:
        summary = await super().compact(user_id)
        return None if summary is None else self._show(summary)


class LaggySearch(Wrapper):
    """Search hides entries younger than ``lag`` seconds; declares a larger staleness."""

    def __init__(self, *, lag: float = 0.004, staleness: float = 0.005, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.search_staleness = staleness
        self.lag = lag
        self.born: dict[tuple[str, str], float] = {}

    async def append_message(self, user_id: str, role: str, content: str,
                             *, message_id: str | None = None) -> Any:
        entry = await self.inner.append_message(user_id, role, content, message_id=message_id)
        self.born.setdefault((user_id, entry.id), time.monotonic())
        await self._yield()
        return entry

    async def search(self, user_id: str, query: str, k: int = 5) -> list[Any]:
        now = time.monotonic()
        ripe = [e for e in await self.inner.search(user_id, query, 10**6)
                if now - self.born.get((user_id, e.id), 0.0) >= self.lag]
        await self._yield()
        return ripe[:k]


class Flaky(Wrapper):
    """One call in ``every`` times out, before or after taking effect: both legal (G10) once
    a fault makes a call fail, but on a healthy store (no fault injected) each is an error
    it should not have had (G12), as in the sequential tests."""

    def __init__(self, *, every: int = 30, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.every = every

    async def _yield(self) -> None:
        await super()._yield()
        if self.rng.randrange(self.every) == 0:
            raise BackendTimeout("flaky", 0.01)


# ----------------------------------------------------------------- broken, 1 op in N


class LosesAppends(Wrapper):
    """Acknowledges one append in ``every``, then drops it: a lost write."""

    def __init__(self, *, every: int = 25, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.every = every
        self.hits = 0

    async def append_message(self, user_id: str, role: str, content: str,
                             *, message_id: str | None = None) -> Any:
        entry = await super().append_message(user_id, role, content, message_id=message_id)
        if self.rng.randrange(self.every) == 0:
            self.hits += 1
            user = self.inner._users.get(user_id)
            if user is not None:
                user.live = tuple(e for e in user.live if e.id != entry.id)
                user.messages.pop(entry.id, None)
        return entry


class ReadsMissOne(Wrapper):
    """One read in ``every`` leaves out one entry of the middle of its answer."""

    def __init__(self, *, every: int = 25, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.every = every
        self.hits = 0

    async def get_history(self, user_id: str, limit: int = 10) -> list[Any]:
        entries = await super().get_history(user_id, limit)
        if entries and self.rng.randrange(self.every) == 0:
            self.hits += 1
            del entries[self.rng.randrange(len(entries))]
        return entries


class ReordersOne(Wrapper):
    """One append in ``every`` gets the seq of the previous one: a shared seq."""

    def __init__(self, *, every: int = 25, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.every = every
        self.hits = 0

    async def append_message(self, user_id: str, role: str, content: str,
                             *, message_id: str | None = None) -> Any:
        entry = await super().append_message(user_id, role, content, message_id=message_id)
        user = self.inner._users.get(user_id)
        if (user is not None and message_id is None and len(user.live) > 1
                and self.rng.randrange(self.every) == 0):
            self.hits += 1
            bad = replace(entry, seq=user.live[-2].seq)
            user.live = (*user.live[:-1], bad)
            user.messages[entry.id] = bad
            return bad
        return entry


class CompactsWithoutLock(Wrapper):
    """Compaction swaps in a snapshot taken before summarizing: appends made meanwhile are lost."""

    async def compact(self, user_id: str) -> Any:
        inner = self.inner
        user = inner._users.get(user_id)
        if user is None or len(user.live) <= inner.keep_last:
            return None
        snapshot = user.live
        prefix = snapshot[: len(snapshot) - inner.keep_last]
        content = await inner._summarizer.summarize(user_id, prefix)
        covers = [c for e in prefix for c in (e.covers if e.role == "summary" else (e.id,))]
        summary = Entry(f"summary-{self.rng.getrandbits(64):x}", user_id, prefix[-1].seq,
                        "summary", content, tuple(covers))
        user.live = (summary, *snapshot[len(prefix):])
        return summary


class StaleReadCache(Wrapper):
    """get_history serves a per-user cache that only every fifth read refreshes."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cache: dict[str, list[Any]] = {}
        self.reads = 0

    async def get_history(self, user_id: str, limit: int = 10) -> list[Any]:
        self.reads += 1
        if user_id not in self.cache or self.reads % 5 == 0:
            self.cache[user_id] = await super().get_history(user_id, 10**6)
        return list(self.cache[user_id][-limit:])


class FalseReport(Wrapper):
    """Correct data, but consistent_state says a backend disagrees: a G11 failure."""

    async def consistent_state(self, user_id: str) -> Any:
        return ConsistencyReport.of(user_id, [Difference("vector", "missing", "x")])


# ----------------------------------------------------------------- the tests

SEEDS = range(int(os.environ.get("NOMNESIA_TEST_SEEDS", "12")))
SUITE = concurrency.TestConcurrency()  # imported as a module: pytest must not collect it here
SUITE_TESTS = [name for name in dir(SUITE) if name.startswith("test_concurrent_")]

CORRECT: dict[str, Callable[[int], Any]] = {
    "memory": lambda seed: InMemoryStore(),
    "jittery": lambda seed: Wrapper(seed=seed),
    "gappy-ids": lambda seed: GappyIds(seed=seed, keep_last=2),
    "laggy-search": lambda seed: LaggySearch(seed=seed, keep_last=7),
    "keep-last-1": lambda seed: Wrapper(seed=seed, keep_last=1),
}
BROKEN: dict[str, Callable[[int], Any]] = {
    "loses-1-append-in-25": lambda seed: LosesAppends(seed=seed),
    "read-misses-1-in-25": lambda seed: ReadsMissOne(seed=seed),
    "1-seq-in-25-shared": lambda seed: ReordersOne(seed=seed),
    "compaction-loses-racing-appends": lambda seed: CompactsWithoutLock(seed=seed),
    "stale-read-cache": lambda seed: StaleReadCache(seed=seed),
    "fragile": lambda seed: FragileMemoryStore(seed=seed),
}
PLANTED: dict[str, Guarantee] = {
    "loses-1-append-in-25": Guarantee.DURABILITY,
    "read-misses-1-in-25": Guarantee.READ_YOUR_WRITES,
    "1-seq-in-25-shared": Guarantee.ORDER,
    "compaction-loses-racing-appends": Guarantee.DURABILITY,
    "stale-read-cache": Guarantee.READ_YOUR_WRITES,
    "fragile": Guarantee.ORDER,  # its concurrency bug: concurrent appends share a seq
}
"""The guarantee each broken store's bug breaks: a failure must report it, not just any."""
FRAGILE_BUG_FOR = {
    "test_concurrent_compactions": Guarantee.ATOMIC_COMPACTION,  # deletes, then summarizes
    "test_concurrent_forget": Guarantee.ORDER,  # its appends racing the forgets share seqs
    "test_concurrent_users_stay_apart": Guarantee.ISOLATION,  # search by key prefix
}
"""The fragile store's bug that each focused concurrency test must report."""


def _reported(violation: GuaranteeViolation) -> set[Guarantee]:
    """Every guarantee a concurrency failure reports: its headline and each checker anomaly.

    The headline is the earliest anomaly, which a planted bug may first show as
    another guarantee (a lost append read back as a search miss, G4); the
    planted one must still be among them.
    """
    return {violation.guarantee, *(a.guarantee for a in violation.anomalies)}


def _run(make: Callable[[], Any], seed: int, ops: int = 300, rounds: int = 1) -> Outcome:
    outcomes = asyncio.run(run_rounds(make, Workload(seed=seed, ops=ops), rounds))
    return outcomes[-1]


@pytest.mark.parametrize("name", CORRECT)
def test_correct_stores_are_never_flagged(name: str) -> None:
    for seed in SEEDS:
        outcome = _run(partial(CORRECT[name], seed), seed)
        assert outcome, f"false alarm on {name}, seed {seed}:\n{outcome.report()}"


@pytest.mark.parametrize("name", BROKEN)
def test_broken_stores_are_caught_by_the_mixed_workload_for_every_seed(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The suite's own test, with its rounds: a bug hitting 1 call in 25 never escapes."""
    for seed in range(20):
        monkeypatch.setenv("NOMNESIA_SEED", str(seed))
        with pytest.raises(GuaranteeViolation) as caught:
            SUITE.test_concurrent_mixed_workload(store=partial(BROKEN[name], seed))
        assert f"--nomnesia-seed {seed}" in str(caught.value)
        assert PLANTED[name] in _reported(caught.value), (seed, str(caught.value)[:2000])


@pytest.mark.parametrize("test", [t for t in SUITE_TESTS if t != "test_concurrent_mixed_workload"])
def test_the_other_concurrency_tests_catch_the_fragile_store(
        test: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The mixed workload is held to 20 seeds above; the focused tests must catch it too."""
    for seed in range(5):
        monkeypatch.setenv("NOMNESIA_SEED", str(seed))
        with pytest.raises(GuaranteeViolation) as caught:
            getattr(SUITE, test)(store=partial(FragileMemoryStore, seed=seed))
        assert FRAGILE_BUG_FOR[test] in _reported(caught.value), (seed, str(caught.value)[:2000])


@pytest.mark.parametrize("test", SUITE_TESTS)
def test_every_concurrency_test_passes_on_correct_stores(
        test: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOMNESIA_SEED", "0")
    getattr(SUITE, test)(store=InMemoryStore)
    for seed in (1, 2):
        monkeypatch.setenv("NOMNESIA_SEED", str(seed))
        getattr(SUITE, test)(store=partial(Wrapper, seed=seed))


def test_interrupted_calls_are_judged_leniently_and_named_as_errors() -> None:
    """A store whose calls time out now and then: the checker's part (G1-G11) stays clean,
    an interrupted call being indeterminate; with no fault injected each kind of error is
    one G12 anomaly that quotes it."""
    for seed in SEEDS:
        outcome = _run(partial(Flaky, seed=seed), seed)
        assert outcome.anomalies, f"seed {seed}: the timeouts went unseen"
        kinds = {(a.guarantee, a.kind) for a in outcome.anomalies}
        assert kinds == {(Guarantee.ERRORS, "raised BackendTimeout")}, outcome.report(None)
        assert "raised BackendTimeout: backend 'flaky' unavailable" in outcome.report()


class RacyFirstWrite(Wrapper):
    """A user's first append creates the user's row, checking first and inserting after an
    await (select-then-insert): when two clients race, the loser raises, as SQLAlchemy's
    ``IntegrityError`` does (adk-python #4954, openai-agents-python #2722), and its append
    never happens."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rows: set[str] = set()

    async def append_message(self, user_id: str, role: str, content: str,
                             *, message_id: str | None = None) -> Any:
        if user_id not in self.rows:
            await asyncio.sleep(0)  # the SELECT's round trip
            if user_id in self.rows:
                raise RuntimeError(f"UNIQUE constraint failed: users.id ({user_id!r})")
            self.rows.add(user_id)
        return await super().append_message(user_id, role, content, message_id=message_id)

    async def forget(self, user_id: str) -> None:
        await super().forget(user_id)
        self.rows.discard(user_id)


def test_a_first_write_race_is_an_error_with_no_fault_injected(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The race raises in a concurrent history only: the suite's concurrency test fails it
    under G12, quoting the exception. Before, the checker forgave the raised append as
    indeterminate and the test passed."""
    monkeypatch.setenv("NOMNESIA_SEED", "3")
    with pytest.raises(GuaranteeViolation) as caught:
        SUITE.test_concurrent_mixed_workload(store=partial(RacyFirstWrite, seed=3))
    text = str(caught.value)
    assert text.startswith("G12 errors: append_message("), text[:400]
    assert "raised RuntimeError: UNIQUE constraint failed: users.id" in text, text[:600]
    assert "with no fault injected" in text


def test_with_a_fault_injected_a_raised_call_stays_indeterminate() -> None:
    """While a fault runs beside the load, a call that raised may be the fault's doing: the
    history is judged as before, leniently."""
    from nomnesia.suite.core.workload import run

    async def no_op(store: Any, workload: Workload, stop: asyncio.Event,
                    load: asyncio.Future[Any]) -> list[Any]:
        await load
        return []

    async def body() -> Outcome:
        async with RacyFirstWrite(seed=3) as store:
            return await run(store, Workload(seed=3, ops=300), during=no_op)

    outcome = asyncio.run(body())
    assert outcome, outcome.report()
    assert outcome.counts().get("append:info", 0) > 0, "the race did not happen: no control"


def test_one_round_already_catches_most_one_in_25_bugs() -> None:
    """The measurement behind the rounds: P(one 100-call round misses) stays well below 1/2.

    The mixed test makes 20 such blocks of calls, so a miss needs 20 misses in
    a row: below 0.5**20 ~ 1e-6 (see docs/checker.md).
    """
    for name in ("loses-1-append-in-25", "read-misses-1-in-25", "1-seq-in-25-shared"):
        missed = sum(bool(_run(partial(BROKEN[name], seed), seed, ops=100)) for seed in range(40))
        assert missed < 20, f"{name}: {missed}/40 rounds of 100 calls missed the bug"


def test_same_seed_same_history() -> None:
    def shape(outcome: Outcome) -> list[tuple[str, str, str, Any]]:
        # Each round gets fresh ids (SPEC "What the suite may assume"): the same seed makes
        # the same calls, on ids that differ only in their token.
        return [(op.type, op.f, scrub(repr(op.user_id)),
                 scrub(repr(op.value)) if op.type == "invoke" else None)
                for op in outcome.history]

    first = _run(lambda: Wrapper(seed=7), 7)
    again = _run(lambda: Wrapper(seed=7), 7)
    assert shape(first) == shape(again)
    assert shape(first) != shape(_run(lambda: Wrapper(seed=8), 8))


def test_seed_from_environment_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOMNESIA_SEED", "42")
    assert resolve_seed(7) == 42
    monkeypatch.delenv("NOMNESIA_SEED")
    assert resolve_seed(7) == 7
    monkeypatch.setenv("NOMNESIA_ROUNDS", "9")
    assert resolve_rounds(2) == 9


def test_inconsistent_backends_at_quiescence_are_g11() -> None:
    outcome = _run(lambda: FalseReport(), 1, ops=50)
    assert outcome.guarantee is Guarantee.QUIESCENT_CONSISTENCY
    assert outcome.report().startswith("G11 quiescent consistency: consistent_state(")


def test_the_workload_exercises_every_call() -> None:
    counts = _run(lambda: Wrapper(seed=3), 3, ops=600).counts()
    for key in ("append:ok", "append:fail", "read:ok", "search:ok", "compact:ok", "forget:ok"):
        assert counts.get(key, 0) > 0, counts


class HangingCompact(InMemoryStore):
    """compact() never returns: the concurrency test must time out naming it."""

    async def compact(self, user_id: str) -> Entry | None:
        await asyncio.Event().wait()
        return None


def test_a_timeout_names_the_workload_call_in_flight() -> None:
    from nomnesia.suite.core.loop import run_async

    with pytest.raises(GuaranteeViolation) as info:
        run_async(run_rounds(HangingCompact, Workload(seed=5, ops=200), 1), timeout=1.0,
                  what="test_concurrent_compactions")
    text = str(info.value)
    assert text.startswith("G12 errors: test_concurrent_compactions did not finish within 1s: "
                           "in flight: compact("), text[:300]
    assert "no store operation was in flight" not in text
    # The evidence is the workload's own log, down to the hung calls (cancelled by the timeout).
    evidence = text.split("operations, oldest first:", 1)[1]
    assert re.search(r"^ +\d+\. compact\(.*\) -> cancelled$", evidence, re.M), evidence
