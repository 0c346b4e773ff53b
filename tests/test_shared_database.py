"""Fresh ids (SPEC.md, "What the suite may assume"): a shared, persistent database is judged
exactly as an empty one, and a second run on it exactly as the first.

The Agents SDK's ``SQLiteSession`` on one file for the whole run, as an app keeps its
sessions (``lambda sid: SQLiteSession(sid, "app.db")``): with the fixed ids the suite had
before, every test read what earlier tests had written under ``ann``, ``Ann`` ... and
reported it (12 failures, causes G2, G3, G10, Inputs, where an empty database per session
has one). Mutant check: with ``recorded()`` handing ``LoggedStore`` no ``ids`` (no fresh
ids), ``test_a_shared_file_is_judged_as_an_empty_one`` fails on the first comparison.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nomnesia.suite import reporting

pytest_plugins = ("pytester",)

SUITE = ("--pyargs", "nomnesia.suite", "-p", "no:cacheprovider", "-p", "no:randomly",
         "--nomnesia-seed", "7")


def _causes(reprec: pytest.HookRecorder) -> dict[str, list[str]]:
    """Each failed test's causes (the keys the summary groups by), by test."""
    return {r.nodeid.split("::", 1)[-1]: sorted(c["key"] for c in reporting.report_causes(r))
            for r in reprec.getreports("pytest_runtest_logreport") if r.failed}


@pytest.fixture(autouse=True)
def _quiet_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


@pytest.mark.slow  # the whole suite on a shared file: nox -s slow
def test_a_shared_file_is_judged_as_an_empty_one(pytester: pytest.Pytester, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("agents")
    monkeypatch.setenv("NOMNESIA_SHARED_DIR", str(tmp_path / "db"))
    empty = _causes(pytester.inline_run(*SUITE, "--openai-session", "shared.stores:agents_empty"))
    first = _causes(pytester.inline_run(*SUITE, "--openai-session",
                                        "shared.stores:agents_shared"))
    assert (tmp_path / "db" / "agents.db").stat().st_size > 0  # the runs did share one file
    assert first == empty
    second = _causes(pytester.inline_run(*SUITE, "--openai-session",
                                         "shared.stores:agents_shared"))
    assert second == first
