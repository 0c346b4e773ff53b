"""Every failpoint of TieredMemoryStore × (raise, cancel), on dict tiers and on real engines.

For each point: run the operation that passes it with the point armed, then

1. WITHOUT recover, ``consistent_state`` reports exactly what is behind (which
   backend misses or still holds which entry; a write that runs beside the
   interrupted one, as an append's index write beside its log write, may still
   be in flight) and reads show whole views;
2. after ``recover()``, the invariants of SPEC.md hold: every acknowledged
   append accounted for exactly once, the interrupted operation took full
   effect or none, search returns nothing covered or forgotten, the other user
   is untouched, and nothing is left pending.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import pytest

from nomnesia.adapters import open_store
from nomnesia.adapters.memory_tiers import InMemoryArchive, InMemoryIndex, InMemoryLog
from nomnesia.adapters.tiered import FAILPOINTS, TieredMemoryStore
from nomnesia.suite.contract import SUMMARY_ROLE, Entry
from nomnesia.suite.contract.failpoints import Action, armed

U, V = "ann 'x' {*}:%", "ann"  # V is a prefix of U: isolation under crashes too
KEEP = 2
SETUP = 5


@asynccontextmanager
async def _memory_stack(**_: Any) -> AsyncIterator[TieredMemoryStore]:
    async with TieredMemoryStore(log=InMemoryLog("redis"), index=InMemoryIndex(name="pgvector"),
                                 archive=InMemoryArchive(), keep_last=KEEP) as store:
        yield store


# Every engine stack shares TieredMemoryStore; pgvector is swept by default, others on demand:
# NOMNESIA_SWEEP_STACKS=pgvector,qdrant,milvus python -m pytest tests/test_failpoint_sweep.py
STACKS = ["memory", *os.environ.get("NOMNESIA_SWEEP_STACKS", "pgvector").split(",")]


@pytest.fixture(params=[s for s in STACKS if s])
def open_stack(request: pytest.FixtureRequest) -> Callable[[], AbstractAsyncContextManager[Any]]:
    if request.param == "memory":
        return _memory_stack
    engines = request.getfixturevalue("engines")
    return lambda: open_store(request.param, provider=engines, keep_last=KEEP)


def _differences(report: Any) -> set[tuple[str, str, str]]:
    return {(d.backend, d.kind, d.entry_id) for d in report.differences if d.entry_id is not None}


async def _interrupt(action: Action, name: str, op: Any) -> BaseException | None:
    with armed(name, action) as arming:
        task = asyncio.create_task(op)
        (outcome,) = await asyncio.gather(task, return_exceptions=True)
    assert arming.fired == 1, f"{name} was not reached"
    assert isinstance(outcome, BaseException), f"{name} armed but the operation succeeded"
    return outcome


@pytest.mark.parametrize("action", ["raise", "cancel"])
@pytest.mark.parametrize("point", FAILPOINTS)
async def test_failpoint(point: str, action: str,
                         open_stack: Callable[[], AbstractAsyncContextManager[Any]]) -> None:
    act = Action.raise_() if action == "raise" else Action.cancel()
    op = point.split(".")[1]
    async with open_stack() as store:
        log, index = store.log.name, store.index.name
        acked: list[Entry] = [await store.append_message(U, "user", f"setup {i}")
                              for i in range(SETUP)]
        other = await store.append_message(V, "user", "other user")
        before = [e.id for e in acked]

        if op == "append":
            await _interrupt(act, point, store.append_message(U, "user", "new", message_id="new"))
            committed = True
        elif op == "compact":
            await _interrupt(act, point, store.compact(U))
            committed = point != "tiered.compact.after_summarize"
        elif op == "forget":
            await _interrupt(act, point, store.forget(U))
            committed = True
        else:  # resync: interrupt an append, then interrupt the recover that heals it
            with armed("tiered.append.after_archive", Action.raise_()):
                await asyncio.gather(store.append_message(U, "user", "new", message_id="new"),
                                     return_exceptions=True)
            await _interrupt(act, point, store.recover())
            committed = True

        # 1. Without recover: exactly what is behind, and reads show one whole view.
        history = await store.get_history(U, 50)
        expected: set[tuple[str, str, str]] = set()
        maybe: set[tuple[str, str, str]] = set()  # may still be in flight, abandoned
        if point == "tiered.append.after_archive":
            expected = {(log, "missing", "new"), (index, "missing", "new")}
        elif point == "tiered.append.after_log" and action == "cancel":
            # The index is written beside the log: a cancelled append leaves it to finish.
            maybe = {(index, "missing", "new")}
        elif point == "tiered.resync.after_log":
            expected = {(index, "missing", "new")}
        elif op == "compact" and committed:
            summary = history[0]
            assert summary.role == SUMMARY_ROLE and list(summary.covers) == before[:SETUP - KEEP]
            behind = {"after_archive": {log, index}, "after_log_put": {index},
                      "after_log": {index}}.get(point.split(".")[2], set())
            for tier in behind:
                expected.add((tier, "missing", summary.id))
            stale = {"after_archive": {log, index}, "after_log_put": {log, index},
                     "after_log": {index}, "after_index_upsert": {index}}
            for tier in stale.get(point.split(".")[2], set()):
                expected |= {(tier, "extra", i) for i in before[:SETUP - KEEP]}
        elif op == "forget":
            assert history == []
            stale_tiers = {"after_archive": {log, index}, "after_log": {index}}
            for tier in stale_tiers.get(point.split(".")[2], set()):
                expected |= {(tier, "extra", i) for i in before}
        report = await store.consistent_state(U)
        assert expected <= _differences(report) <= expected | maybe, str(report)
        assert bool(report) == (not _differences(report))
        assert await store.consistent_state(V)

        # 2. After recover: the invariants.
        await store.recover()
        await store.recover()
        assert await store.consistent_state(U), "after recover"
        assert await store.consistent_state(V)
        assert await store.archive.pending() == []
        history = await store.get_history(U, 50)
        accounted: list[str] = []
        for entry in history:
            accounted.extend(entry.covers if entry.role == SUMMARY_ROLE else (entry.id,))
        if op == "forget":
            assert history == [] and await store.search(U, "setup 1") == []
            assert await store.log.ids(U) == set() and await store.index.ids(U) == set()
        else:
            want = before + (["new"] if op in ("append", "resync") else [])
            assert accounted == want, "each acknowledged append accounted for exactly once"
            seqs = [e.seq for e in history]
            assert seqs == sorted(set(seqs))
            if op == "compact":
                summaries = [e for e in history if e.role == SUMMARY_ROLE]
                assert len(summaries) == (1 if committed else 0)  # all or nothing
                covered = set(summaries[0].covers) if summaries else set()
                for i in range(SETUP):
                    hits = await store.search(U, f"setup {i}", 3)
                    assert not {h.id for h in hits} & covered
            if op in ("append", "resync"):
                retry = await store.append_message(U, "user", "new", message_id="new")
                assert retry.id == "new" and retry.seq == history[-1].seq
                assert (await store.search(U, "new", 1))[0].id == "new"
        assert [e.id for e in await store.get_history(V)] == [other.id]
