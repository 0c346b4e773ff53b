"""``--adk-memory`` and ``--agno-db`` (issue 46 item 2): each judges the real library with
no interface error, and catches one planted defect (``tests/memory_protocol_stores.py``).

Mutant checks (each done by hand, each made the named test fail):

- ``AdkMemory.forget`` without the rewind event (the session added with the found events
  alone): ``test_adk_memory_in_memory_is_judged_on_what_it_has`` fails, G8 on
  ``InMemoryMemoryService`` (forgotten memories still found);
- ``RewindIgnored`` removed (the plain ``InMemoryMemoryService`` in its place):
  ``test_adk_memory_that_keeps_rewound_events_fails_g8`` fails (nothing to find);
- ``AdkMemory.get_history`` without the ``ReadCapped`` check: the in-memory short run
  reads the oldest 10 memories as the history (G3 in ``test_history_limit...``), which
  ``test_adk_memory_past_the_search_cap_is_a_usage_stop_not_a_finding`` catches;
- ``_base.in_thread`` bypassed (the sync call awaited under plain ``to_thread``):
  ``test_agno_sync_db_cancelled_between_calls`` fails (G10: the cancelled append's thread
  stores its run after the suite moved on);
- the planted await removed from ``InlineRuns.upsert_run``, or an ``asyncio.Lock`` put
  around ``AgnoSessions._store_run``: ``test_agno_runs_rewritten_whole_lose_one_under
  _concurrency`` fails (no run is lost, so the suite finds nothing).
"""

from __future__ import annotations

import asyncio
import re
from functools import partial
from typing import Any

import pytest
from interface_runs import SUITE, findings_only, quiet_ini  # tests/ is on sys.path

pytest.importorskip("google.adk.memory")
pytest.importorskip("agno.db")

pytest_plugins = ("pytester",)

_findings_only = partial(findings_only, also=("ReadCapped",))
"""This file's runs: findings only (and never `ReadCapped`)."""

ADK_SUBSET = ("test_forget_removes_everything or test_users_are_isolated or "
              "test_search_returns_at_most_k or test_unknown_user_is_empty or "
              "test_search_finds_exact_content")


@pytest.fixture(autouse=True)
def _quiet_ini(pytester: pytest.Pytester) -> None:
    quiet_ini(pytester)


def test_adk_memory_in_memory_is_judged_on_what_it_has(pytester: pytest.Pytester) -> None:
    """The memory profile on ``InMemoryMemoryService``: forget, isolation and search pass."""
    result = pytester.inline_run(*SUITE, "--adk-memory",
                                 "google.adk.memory:InMemoryMemoryService", "-k", ADK_SUBSET)
    assert not _findings_only(result)
    passed, _, _ = result.listoutcomes()
    assert len(passed) == 5, [r.nodeid for r in passed]


def test_adk_memory_profile_line(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*SUITE, "--adk-memory",
                                "google.adk.memory:InMemoryMemoryService", "-k",
                                "test_unknown_user_is_empty")
    result.stdout.fnmatch_lines(["*nomnesia profile memory (declared)*"])
    result.assert_outcomes(passed=1)


def test_adk_memory_that_keeps_rewound_events_fails_g8(pytester: pytest.Pytester) -> None:
    result = pytester.inline_run(*SUITE, "--adk-memory",
                                 "memory_protocol_stores:rewind_ignored", "-k",
                                 "test_forget_removes_everything")
    failures = _findings_only(result)
    assert len(failures) == 1, failures
    assert next(iter(failures.values())).lstrip().startswith("G8 "), failures


def test_adk_memory_past_the_search_cap_is_a_usage_stop_not_a_finding() -> None:
    """``InMemoryMemoryService`` returns at most 10 memories per search: a 10th memory
    makes the read stop with ``ReadCapped`` (10 results cannot be told from more), never
    a short history judged as the store's."""
    from google.adk.memory import InMemoryMemoryService

    from nomnesia.suite.interfaces import adk_memory

    async def body() -> list[dict[str, str]]:
        async with adk_memory.open_store(InMemoryMemoryService) as store:
            for i in range(9):
                await store.append_message("ann", "user", f"message {i}")
            nine = await store.get_history("ann", 3)
            await store.append_message("ann", "user", "message 9")
            with pytest.raises(adk_memory.ReadCapped, match="returned 10 memories"):
                await store.get_history("ann", 3)
            return nine

    assert [m["content"] for m in asyncio.run(body())] == [f"message {i}" for i in (6, 7, 8)]


def test_a_test_past_the_search_cap_is_not_applicable_never_failed(
        pytester: pytest.Pytester) -> None:
    """A test whose reads pass the cap stops with ``ReadCapped``: the suite reports it not
    applicable, with what it needs, never as a failure (it once read as an unlabelled
    failure in the summary by cause)."""
    result = pytester.runpytest(*SUITE, "--adk-memory",
                                "google.adk.memory:InMemoryMemoryService", "-k",
                                "test_concurrent_forget", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines([
        "*not applicable to this store: needs a read of more memories than one search "
        "returns (ReadCapped: InMemoryMemoryService.search_memory returned 10 memories*"])


def test_adk_memory_sqlite_forgets_through_a_rewind() -> None:
    """``SqliteMemoryService`` has no ``delete_memory``: forget is ADK's rewind, which it
    implements by deleting the rewound events (for this user only)."""
    from nomnesia.suite.examples import adk_memory_sqlite
    from nomnesia.suite.interfaces import adk_memory

    async def body() -> tuple[Any, ...]:
        async with adk_memory.open_store(adk_memory_sqlite) as store:
            for user in ("ann", "bob"):
                for i in range(12):
                    await store.append_message(user, "assistant", f"{user} says {i}")
            before = await store.get_history("ann", 100)
            await store.forget("ann")
            return before, await store.get_history("ann"), await store.get_history("bob", 2)

    before, after, bob = asyncio.run(body())
    assert [m["content"] for m in before] == [f"ann says {i}" for i in range(12)]
    assert after == []
    assert bob == [{"role": "assistant", "content": f"bob says {i}"} for i in (10, 11)]


def test_agno_in_memory_is_judged_with_no_interface_error(pytester: pytest.Pytester) -> None:
    """The history profile on ``InMemoryDb`` passes its sequential tests (its concurrency
    findings, a deleted session's runs brought back, are in the README and
    ``docs/ecosystem/repro/agno-in-memory-delete-resurrects-runs.py``)."""
    result = pytester.inline_run(*SUITE, "--agno-db", "agno.db.in_memory:InMemoryDb", "-k",
                                 "test_contract or test_forget or test_interruption")
    assert not _findings_only(result)
    passed, _, _ = result.listoutcomes()
    assert len(passed) >= 8, [r.nodeid for r in passed]


def test_agno_runs_rewritten_whole_lose_one_under_concurrency(
        pytester: pytest.Pytester) -> None:
    """agno #7479's mechanism, planted: the concurrency workload finds the lost run (G1)."""
    result = pytester.inline_run(*SUITE, "--agno-db", "memory_protocol_stores:inline_runs",
                                 "-k", "test_concurrent_mixed_workload")
    failures = _findings_only(result)
    assert len(failures) == 1, failures
    text = next(iter(failures.values()))
    assert re.match(r"\s*G1 ", text), text[:600]


@pytest.mark.slow  # every cut point of three operations on SQLite: ~25 s
def test_agno_sync_db_cancelled_between_calls(pytester: pytest.Pytester) -> None:
    """A cancel of a sync ``SqliteDb`` call ends the await only when the call has returned
    (``agno._whole``): the interruption tests find nothing on it."""
    result = pytester.inline_run(*SUITE, "--agno-db", "nomnesia.suite.examples:agno_sqlite",
                                 "-k", "test_interruption")
    assert not _findings_only(result)
    passed, _, _ = result.listoutcomes()
    assert len(passed) >= 3, [r.nodeid for r in passed]


def test_agno_async_db_is_awaited(tmp_path: Any) -> None:
    """An ``AsyncBaseDb`` (``AsyncSqliteDb``, whose methods are coroutines) is driven too:
    it reads back what was appended, the newest ``limit`` in order, and forgets."""
    from agno.db.sqlite import AsyncSqliteDb

    from nomnesia.suite.interfaces import agno

    async def body() -> tuple[Any, ...]:
        async with agno.open_store(lambda: AsyncSqliteDb(db_file=str(tmp_path / "a.db"))
                                   ) as store:
            for i in range(4):
                await store.append_message("ann", "user" if i % 2 else "assistant", f"m{i}")
            newest = await store.get_history("ann", 2)
            await store.forget("ann")
            return newest, await store.get_history("ann")

    newest, after = asyncio.run(body())
    assert newest == [{"role": "assistant", "content": "m2"}, {"role": "user", "content": "m3"}]
    assert after == []
