"""The suite's nemesis test turns a nemesis report into a pass, or a failure naming the guarantee.

``suite/test_nemesis_run.py`` runs only with ``--adapter`` and ``--nemesis``, which
the project's own runs never pass, so the code that reads a ``NemesisReport``
(``suite/nemesis/suite_hook.py``) ran nowhere. Here the suite's test runs
in-process (pytester) with its options, and the nemesis run replaced by a
report as ``run_nemesis`` returns one: from a store that lost acknowledged
appends, one that counted an entry twice, one that stayed unavailable, and
one that did nothing wrong. The slow test runs a real, short nemesis on the
deliberately broken store of ``suite/nemesis/broken.py`` through the same hook.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest

from nomnesia.suite.nemesis import suite_hook
from nomnesia.suite.nemesis.report import FaultRecord, NemesisReport
from nomnesia.suite.nemesis.runner import NemesisConfig

pytest_plugins = ("pytester",)

SUITE = ("--pyargs", "nomnesia.suite", "-p", "no:cacheprovider", "-p", "no:randomly")
NEMESIS = ("--adapter", "memory", "--nemesis", "crash,net", "--nemesis-faults", "3",
           "--nomnesia-seed", "11", "-k", "test_nemesis")


@pytest.fixture(autouse=True)
def _quiet_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


def _report(**found: Any) -> NemesisReport:
    """Three faults, all answered again within 0.2 s, 120 appends acknowledged; plus ``found``."""
    faults = [FaultRecord(kind, "postgres", "", started=float(n), held=0.5, recovered_after=0.2)
              for n, kind in enumerate(("crash", "net", "crash"))]
    return NemesisReport(adapter="memory", seed=11, kinds=["crash", "net"], faults=faults,
                         operations={"ok": 400, "info": 6}, acknowledged_appends=120,
                         workers=4, **found)


def _run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
         report: NemesisReport) -> tuple[pytest.HookRecorder, list[NemesisConfig]]:
    """The suite's test_nemesis, its nemesis run answering ``report``; and the configs it got."""
    asked: list[NemesisConfig] = []

    async def run_nemesis(config: NemesisConfig) -> NemesisReport:
        asked.append(config)
        return report

    monkeypatch.setattr(suite_hook, "run_nemesis", run_nemesis)
    return pytester.inline_run(*SUITE, *NEMESIS), asked


def _failure(reprec: pytest.HookRecorder) -> str:
    passed, skipped, failed = reprec.listoutcomes()
    assert not passed and not skipped and len(failed) == 1, (passed, skipped, failed)
    assert failed[0].nodeid.endswith("test_nemesis_run.py::test_nemesis")
    return failed[0].longreprtext


def test_a_clean_report_passes_with_the_options_given(pytester: pytest.Pytester,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    reprec, asked = _run(pytester, monkeypatch, _report())
    assert reprec.ret == pytest.ExitCode.OK
    passed, skipped, failed = reprec.listoutcomes()
    assert [r.nodeid.rsplit("::", 1)[-1] for r in passed] == ["test_nemesis"]
    assert not skipped and not failed
    (config,) = asked
    assert (config.adapter, config.kinds, config.faults, config.seed) == (
        "memory", ("crash", "net"), 3, 11)


def test_a_report_with_lost_appends_fails_the_suite_test_as_g1(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    reprec, _ = _run(pytester, monkeypatch, _report(lost=["ann/3", "bob/7"]))
    assert reprec.ret == pytest.ExitCode.TESTS_FAILED
    text = _failure(reprec)
    assert "G1 durability: 2 acknowledged appends lost" in text, text
    assert "LOST ann/3" in text and "replay with --nomnesia-seed 11" in text, text


def _never_answered() -> NemesisReport:
    report = _report()
    report.faults[1].recovered_after = None  # never answered within the bound
    return report


@pytest.mark.parametrize(("report", "head"), [
    (_report(lost=["ann/3"]), "G1 durability: 1 acknowledged appends lost"),
    (_report(duplicates=["ann/5"]), "G2 exactly once: 1 entries accounted twice"),
    (_never_answered(), "G12 errors: the store did not answer within 5 s of 1 fault(s) ending"),
], ids=["lost", "duplicate", "unanswered"])
def test_each_finding_fails_naming_its_guarantee(monkeypatch: pytest.MonkeyPatch,
                                                 report: NemesisReport, head: str) -> None:
    """The hook itself, without pytester: the first line is the guarantee, then the summary."""
    async def run_nemesis(config: NemesisConfig) -> NemesisReport:
        return report

    monkeypatch.setattr(suite_hook, "run_nemesis", run_nemesis)
    with pytest.raises(AssertionError) as failed:
        suite_hook.nemesis_test("memory", "crash,net", seed=11, faults=3)
    lines = str(failed.value).splitlines()
    assert lines[0] == head, lines[0]
    assert lines[1].startswith("nemesis memory seed=11: 3 faults")
    assert lines[-1] == "replay with --nomnesia-seed 11"


@pytest.mark.slow
def test_the_hook_fails_a_real_nemesis_run_on_a_store_that_loses_appends(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Six faults on suite/nemesis/broken.py's write-behind store, judged by the hook (~20 s)."""
    real = suite_hook.run_nemesis

    async def on_the_broken_store(config: NemesisConfig) -> NemesisReport:
        return await real(dataclasses.replace(
            config, store_factory="nomnesia.suite.nemesis.broken:open_late_tiers"))

    monkeypatch.setattr(suite_hook, "run_nemesis", on_the_broken_store)
    with pytest.raises(AssertionError) as failed:
        suite_hook.nemesis_test("pgvector", "crash,net", seed=11, faults=6)
    first = str(failed.value).splitlines()[0]
    # The planted defect: an append acknowledged before its tiers were written, lost when
    # a crash comes before the flush (G1), or missed by a read in between (G3).
    assert re.match(r"G1 durability: \d+ acknowledged appends? lost|G3 read your writes: ",
                    first), first
    assert "replay with --nomnesia-seed 11" in str(failed.value)
