"""``--crewai-storage`` and ``--crewai-memory`` (issue 46, items 2 and 3): each judges CrewAI's
real classes with no interface error, catches a planted defect under its guarantee, and finds
crewAI #7290 (``Memory.forget`` does not wait for pending ``remember_many`` saves) through
the mapping, while a planted fix (``forget`` that drains first) passes
(``tests/crewai_stores.py``).

crewai pins ``openai<3``, which the ``interfaces`` extra's ``openai-agents`` cannot take:
these tests run where crewai is installed (the ``crewai`` extra, a venv of its own) and
are skipped elsewhere.

Mutant checks (each done by hand, each made the named test fail):

- ``CrewaiStorage.forget`` made a no-op: ``test_storage_judged_with_no_interface_error``
  fails (G8);
- ``user_scope`` without the closing ``/memory`` segment: user ``ann`` reads user
  ``ann1``'s records, which ``test_scopes_that_share_a_prefix_stay_apart`` catches;
- ``CrewaiMemory.get_history`` without ``drain_writes``: the history read just after
  ``remember_many`` misses the queued saves (read as G1: acknowledged appends not live),
  which ``test_memory_judged_with_no_interface_error`` catches.
"""

from __future__ import annotations

import asyncio
import os

import pytest
from interface_runs import SUITE, findings_only, quiet_ini  # tests/ is on sys.path

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")  # read at CrewAI's import
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
pytest.importorskip("crewai.memory")
# Imported once here, before pytester snapshots sys.modules: lance's Rust logger may be set
# up once per process, and an in-process run would import it anew.
pytest.importorskip("crewai.memory.storage.lancedb_storage")
pytest.importorskip("crewai.memory.unified_memory")

pytest_plugins = ("pytester",)

_findings_only = findings_only
"""This file's runs: findings only."""

SUBSET = ("test_forget_removes_everything or test_users_are_isolated or "
          "test_search_returns_at_most_k or test_unknown_user_is_empty or "
          "test_search_finds_exact_content")
STORAGE = "nomnesia.suite.examples:crewai_lancedb"
MEMORY = "nomnesia.suite.examples:crewai_memory"


@pytest.fixture(autouse=True)
def _quiet_ini(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    quiet_ini(pytester)
    monkeypatch.setenv("CREWAI_DISABLE_TELEMETRY", "true")
    monkeypatch.setenv("CREWAI_TRACING_ENABLED", "false")


def _one_failure_under(reprec: pytest.HookRecorder, guarantee: str) -> str:
    failures = _findings_only(reprec)
    assert len(failures) == 1, list(failures)
    text = next(iter(failures.values())).lstrip()
    assert text.startswith(f"{guarantee} "), text[:600]
    return text


def test_storage_judged_with_no_interface_error(pytester: pytest.Pytester) -> None:
    """The memory profile on ``LanceDBStorage``: forget, isolation and search pass."""
    result = pytester.inline_run(*SUITE, "--crewai-storage", STORAGE, "-k", SUBSET)
    assert not _findings_only(result)
    passed, _, _ = result.listoutcomes()
    assert len(passed) == 5, [r.nodeid for r in passed]


def test_storage_profile_line(pytester: pytest.Pytester) -> None:
    """In a process of its own: LanceDB's Rust logger may be set up once per process, and a
    second in-process run's terminal output would carry its panic."""
    result = pytester.runpytest_subprocess(*SUITE, "--crewai-storage", STORAGE, "-k",
                                "test_unknown_user_is_empty")
    result.stdout.fnmatch_lines(["*nomnesia profile memory (declared)*"])
    result.assert_outcomes(passed=1)


def test_storage_whose_delete_deletes_nothing_fails_g8(pytester: pytest.Pytester) -> None:
    result = pytester.inline_run(*SUITE, "--crewai-storage", "crewai_stores:delete_ignored",
                                 "-k", "test_forget_removes_everything")
    _one_failure_under(result, "G8")


def test_storage_whose_search_drops_the_scope_fails_g9(pytester: pytest.Pytester) -> None:
    result = pytester.inline_run(*SUITE, "--crewai-storage", "crewai_stores:search_unscoped",
                                 "-k", "test_users_are_isolated")
    _one_failure_under(result, "G9")


def test_scopes_that_share_a_prefix_stay_apart() -> None:
    """``LanceDBStorage`` matches ``scope LIKE 'prefix%'``: the user scope's closing segment
    keeps ``ann`` from reading ``ann1`` (and a ``/`` in a user id from naming a sub-scope)."""
    from nomnesia.suite.examples import crewai_lancedb
    from nomnesia.suite.interfaces import crewai_storage

    async def body() -> tuple[list[dict[str, str]], ...]:
        async with crewai_storage.open_store(crewai_lancedb) as store:
            for user in ("ann", "ann1", "ann/x"):
                await store.append_message(user, "user", f"{user} was here")
            read = await store.get_history("ann", 10)
            found = await store.search("ann", "ann1 was here", 5)
            await store.forget("ann")
            return read, found, await store.get_history("ann1", 10)

    read, found, kept = asyncio.run(body())
    assert read == [{"role": "user", "content": "ann was here"}]
    assert found == read
    assert kept == [{"role": "user", "content": "ann1 was here"}]


def test_memory_judged_with_no_interface_error(pytester: pytest.Pytester) -> None:
    """The memory profile on CrewAI's ``Memory`` (offline LLM, hashing embedder, LanceDB):
    the sequential forget, isolation and search tests pass (a read drains first)."""
    result = pytester.inline_run(*SUITE, "--crewai-memory", MEMORY, "-k", SUBSET)
    assert not _findings_only(result)
    passed, _, _ = result.listoutcomes()
    assert len(passed) == 5, [r.nodeid for r in passed]


FORGET_AFTER_WRITES = "test_concurrent_forget"


def test_memory_forget_races_remember_many_g8(pytester: pytest.Pytester) -> None:
    """crewAI #7290 on the installed release, found by the suite's own check: a forget
    that follows appends (``remember_many``, queued) deletes before the queued saves land,
    and the forgotten content is read back (G8)."""
    result = pytester.inline_run(*SUITE, "--crewai-memory", MEMORY, "-k", FORGET_AFTER_WRITES)
    text = _one_failure_under(result, "G8")
    assert "forget" in text, text[:600]


def test_memory_whose_forget_drains_first_passes(pytester: pytest.Pytester) -> None:
    """The control: ``forget`` that waits for the pending saves (crewAI PR #7291's fix,
    planted) passes the same check."""
    result = pytester.inline_run(*SUITE, "--crewai-memory", "crewai_stores:memory_forget_drains",
                                 "-k", FORGET_AFTER_WRITES)
    assert not _findings_only(result)
    passed, _, _ = result.listoutcomes()
    assert len(passed) == 1, [r.nodeid for r in passed]
