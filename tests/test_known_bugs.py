"""The known-bugs runner's table and verdicts (bench/known_bugs.py), on made-up reports.

Nothing here installs or runs the suite: the runner is loaded as a module and given
tables and JSON reports shaped like the suite's (suite/report/json_report.py).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def kb() -> ModuleType:
    spec = importlib.util.spec_from_file_location("known_bugs_runner",
                                                  ROOT / "bench" / "known_bugs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


ROW = """
[[bug]]
name = "one"
dist = "lib"
affected = "1.0"
fixed = "1.1"
tracker = "org/lib#1"
option = "--openai-session"
factory = "mod:factory"
guarantee = "G9"
description = "d"
requires = ["x>=1"]
"""


def report(*tests: dict[str, Any]) -> dict[str, Any]:
    return {"format": "nomnesia-suite-report/1", "summary": {}, "tests": list(tests)}


def failed(nodeid: str, *guarantees: str, message: str = "", causes: Any = ()) -> dict[str, Any]:
    return {"nodeid": nodeid, "outcome": "failed", "failed_guarantees": list(guarantees),
            "guarantees": list(guarantees), "message": message, "causes": list(causes)}


def test_the_shipped_table_parses_and_every_row_runs_or_says_why(kb: ModuleType) -> None:
    bugs = kb.parse_table(kb.TABLE.read_text())
    assert len(bugs) >= 8
    for bug in bugs:
        assert bug.needs or (bug.option.startswith("--") and ":" in bug.factory), bug.name


def test_a_row_is_read_with_its_lists_as_tuples(kb: ModuleType) -> None:
    (bug,) = kb.parse_table(ROW)
    assert bug.requires == ("x>=1",) and bug.pin("affected") == "lib==1.0"
    assert bug.pin("fixed") == "lib==1.1"


@pytest.mark.parametrize(("change", "says"), [
    ('guarantee = "G9"', "guarantee = \"G13\""),
    ('option = "--openai-session"', ""),
    ('description = "d"', 'description = "d"\ncolour = "red"'),
])
def test_a_bad_row_is_one_sentence(kb: ModuleType, change: str, says: str) -> None:
    with pytest.raises(kb.Unusable):
        kb.parse_table(ROW.replace(change, says))


def test_a_row_that_cannot_run_needs_no_option(kb: ModuleType) -> None:
    text = ROW.replace('option = "--openai-session"\nfactory = "mod:factory"\n',
                       'needs = "an option"\n')
    (bug,) = kb.parse_table(text)
    assert bug.needs == "an option" and not bug.option


def test_names_are_unique(kb: ModuleType) -> None:
    with pytest.raises(kb.Unusable, match="more than once"):
        kb.parse_table(ROW + ROW)


def test_found_needs_the_rows_guarantee_among_the_failures(kb: ModuleType) -> None:
    (bug,) = kb.parse_table(ROW)
    other = report(failed("t.py::a", "Inputs"), {"nodeid": "t.py::b", "outcome": "passed",
                                                  "failed_guarantees": []})
    mine = report(failed("t.py::a", "Inputs"),
                  failed("t.py::c", causes=[{"guarantee": "G9", "key": "G9 get_history"}]))
    assert kb.verdict(bug, "affected", other) == "missed"
    assert kb.verdict(bug, "affected", mine) == "found"
    assert kb.verdict(bug, "fixed", other) == "ok"
    assert kb.verdict(bug, "fixed", mine) == "false alarm"
    assert kb.guarantees_seen(mine) == ["G9", "Inputs"]


def test_no_report_is_an_error_never_a_miss_or_a_false_alarm(kb: ModuleType) -> None:
    (bug,) = kb.parse_table(ROW)
    assert kb.verdict(bug, "affected", None) == "error"  # nothing judged: not a miss
    assert kb.verdict(bug, "fixed", None) == "error"


def test_match_tells_the_bug_from_another_failure_of_its_guarantee(kb: ModuleType) -> None:
    (bug,) = kb.parse_table(ROW + 'match = "after forget"\n')
    trimmed = report(failed("t.py::a", "G9", message="G9 isolation: ids trimmed"))
    wiped = report(failed("t.py::b", "G9", message="G9 isolation: gone after forget('anna')"))
    assert kb.verdict(bug, "affected", trimmed) == "missed"
    assert kb.verdict(bug, "affected", wiped) == "found"


def test_only_a_verdict_that_got_worse_is_a_regression(kb: ModuleType) -> None:
    expected = {"a": {"affected": "found", "fixed": "ok"}, "b": {"affected": "missed"}}
    assert kb.regressions({"a": {"affected": "found", "fixed": "ok"}}, expected) == []
    assert kb.regressions({"b": {"affected": "missed"}, "new": {"affected": "missed"}},
                          expected) == []
    worse = kb.regressions({"a": {"affected": "missed", "fixed": "false alarm"}}, expected)
    assert len(worse) == 2
    assert kb.regressions({"a": {"fixed": "ok"}}, expected) == []  # --release fixed only
    better = kb.improvements({"b": {"affected": "found"}, "new": {"affected": "found"}},
                             expected)
    assert len(better) == 2


def test_two_bugs_of_one_release_share_one_run(kb: ModuleType) -> None:
    other = ROW.replace('name = "one"', 'name = "two"').replace('"G9"', '"G5"')
    one, two = kb.parse_table(ROW + other)
    assert kb.run_key(one, "affected") == kb.run_key(two, "affected")
    assert kb.run_key(one, "affected") != kb.run_key(one, "fixed")


@pytest.mark.parametrize("line", ['requires = "x>=1"', 'match = "("', "affected = 1.0"])
def test_a_field_of_the_wrong_kind_is_one_sentence(kb: ModuleType, line: str) -> None:
    key = line.split(" =")[0]
    text = "\n".join(ln for ln in ROW.splitlines() if not ln.startswith(key + " ")) + "\n" + line
    with pytest.raises(kb.Unusable, match=key):
        kb.parse_table(text)
