"""The nox matrix's table, read from the leaves' JSON reports (``nomnesia.suite.reporting``).

Each leaf of ``nox -s matrix`` writes the suite's JSON report; these tests build
such reports (with the suite's own ``failed_guarantees`` deciding what a failure
names, as the reporter does) and check the cells, the table and its legend, and
that a pytest that crashed before writing its report still reads as an ERROR
with its exit code.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from nomnesia.suite.reporting import (
    FORMAT,
    LEGEND,
    failed_guarantees,
    guarantee_of,
    leaf_cell,
    matrix_cells,
    read_reports,
    record_exit,
    render_table,
)

PYTHONS = ["3.10", "3.11", "3.12", "3.13"]


def case(name: str, outcome: str = "passed", message: str = "") -> dict[str, Any]:
    return {"nodeid": f"suite/test_contract.py::TestContract::{name}", "outcome": outcome,
            "message": message, "guarantees": [], "failed_guarantees": failed_guarantees(message)}


def report(tests: list[dict[str, Any]], code: int, *, label: str = "memory",
           python: str = "3.12.1", verdicts: dict[str, str] | None = None) -> dict[str, Any]:
    return {"format": FORMAT, "meta": {"label": label, "python": python, "exitstatus": code},
            "guarantees": {k: {"verdict": v} for k, v in (verdicts or {}).items()},
            "tests": tests}


FAILING = [
    case("test_ok"),
    case("test_compact", "failed",
         "nomnesia.suite._run.GuaranteeViolation: G7 atomic compaction: lost m3"),
    case("test_search", "failed", "G4 search: returned a covered entry"),
    case("test_g11_quiescent", "error", "RuntimeError: boom"),
]


def test_cells_name_the_failed_guarantees() -> None:
    cell = leaf_cell(report(FAILING, 1))
    assert cell.status == "fail" and cell.tests == 4
    assert cell.failed == {"G7": 1, "G4": 1, "G11": 1}
    assert cell.text() == "FAIL G4 G7 G11"


def test_cells_tell_no_tests_and_errors_and_absent_leaves(tmp_path: Path) -> None:
    record_exit(tmp_path / "a.json", 5, "memory", "3.10")  # exit 5: pytest wrote a report
    record_exit(tmp_path / "b.json", 4, "memory", "3.11")  # a usage error: no report at all
    (tmp_path / "c.json").write_text(json.dumps(report([case("t")], 0, python="3.13.0")))
    cells = matrix_cells(read_reports(tmp_path), ["memory"], PYTHONS)
    statuses = [cells[("memory", p)].status for p in PYTHONS]
    assert statuses == ["no tests", "error", "not run", "pass"]
    assert cells[("memory", "3.11")].text() == "ERROR (pytest exit 4)"
    assert cells[("memory", "3.13")].text() == "pass (1)"
    assert cells[("memory", "3.10")].ok and cells[("memory", "3.13")].ok
    assert not cells[("memory", "3.11")].ok and not cells[("memory", "3.12")].ok


def test_a_crash_after_the_report_still_reads_as_error(tmp_path: Path) -> None:
    """pytest wrote its report (exit 0) and then died: the leaf's real exit code wins."""
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report([case("t")], 0)))
    assert record_exit(path, -11, "memory", "3.12")["meta"]["exitstatus"] == -11
    assert leaf_cell(json.loads(path.read_text())).text() == "ERROR (pytest exit -11)"
    assert len(json.loads(path.read_text())["tests"]) == 1  # what did run is kept


def test_one_table_adapter_by_python() -> None:
    cells = matrix_cells([report(FAILING, 1)], ["memory", "other"], ["3.12"])
    table = render_table(cells, ["memory", "other"], ["3.12"], {"G7": "G7 atomic compaction"})
    lines = table.splitlines()
    assert lines[0].split() == ["adapter", "3.12"]
    assert lines[2].split()[:2] == ["memory", "FAIL"]
    assert lines[3].split() == ["other", "not", "run"]
    assert "  G7 atomic compaction: memory@3.12 (1)" in lines
    assert "failures, by the guarantee they name:" in lines
    # The legend names every guarantee by default, from the contract.
    assert LEGEND["G7"] == "G7 atomic compaction" and LEGEND["Inputs"] == "Inputs"
    assert "  G4 search: memory@3.12 (1)" in render_table(cells, ["memory"], ["3.12"])


def test_guarantees_not_reached_and_skipped_are_said() -> None:
    failed = report([case("test_compact", "failed", "G7 atomic compaction: lost m3"),
                     case("test_g10", "failed", "G10 interruption: torn write")], 1,
                    verdicts={"G3": "not reached", "G7": "fail", "G10": "fail"})
    assert leaf_cell(failed).text() == "FAIL G7 G10 (G3 not reached)"
    passed = report([case("t"), case("s", "skipped")], 0, verdicts={"G10": "skipped"})
    assert leaf_cell(passed).text() == "pass (1, 1 skipped; G10 skipped)"


def test_leaves_without_an_interpreter_are_other_outcomes() -> None:
    cells = matrix_cells([report([case("t")], 0)], ["memory"], ["3.12", "3.13"],
                         missing=["3.13"])
    table = render_table(cells, ["memory"], ["3.12", "3.13"])
    assert table.splitlines()[-2:] == ["other outcomes:", "  memory@3.13: not run - no Python 3.13"]


def test_guarantee_of_reads_the_message_prefix() -> None:
    assert guarantee_of("pkg.GuaranteeViolation: G12 errors: x") == "G12"
    assert guarantee_of("Inputs: empty user id accepted") == "Inputs"
    assert guarantee_of("assert 1 == 2", "test_g9_isolation") == "G9"
    assert guarantee_of("assert 1 == 2", "test_other") == "unlabelled"
    missing = "nomnesia.suite.errors.BackendUnavailable: backend 'postgres' unavailable: G12"
    assert guarantee_of(missing) == "G12"
    assert guarantee_of(missing.removesuffix(": G12")) == "BackendUnavailable"


def test_skipped_tests_are_counted_apart() -> None:
    a = leaf_cell(report([case("t"), case("s", "skipped")], 0))
    assert a.text() == "pass (1, 1 skipped)"
    b = leaf_cell(report([case("s", "skipped"), case("s2", "skipped")], 0))
    assert (b.status, b.text(), b.ok) == ("skipped", "skipped (2)", True)


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nomnesia.suite.reporting", *args],
                          capture_output=True, text=True, timeout=120, check=False)


def test_leaf_command_records_a_crash_and_prints_the_cell(tmp_path: Path) -> None:
    path = tmp_path / "run" / "conformance-3.12-memory.json"
    out = run_cli("leaf", str(path), "--exit", "-11", "--label", "memory", "--python", "3.12")
    assert (out.returncode, out.stdout.strip()) == (1, "ERROR (pytest exit -11)")
    assert json.loads(path.read_text())["meta"] == {
        "label": "memory", "adapter": "memory", "python": "3.12", "exitstatus": -11}


def test_matrix_command_prints_and_writes_the_table_summary_and_html(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps(report(FAILING, 1)))
    (tmp_path / "b.json").write_text(json.dumps(report([case("t")], 0, python="3.13.0")))
    (tmp_path / "other.json").write_text("{}")  # not a suite report: left out
    summary = tmp_path / "summary.md"
    out = run_cli("matrix", str(tmp_path), "--adapters", "memory", "--pythons", "3.12,3.13",
                  "--summary", str(summary))
    assert out.returncode == 1, out.stderr
    table = render_table(matrix_cells(read_reports(tmp_path), ["memory"], ["3.12", "3.13"]),
                         ["memory"], ["3.12", "3.13"])
    assert table in out.stdout
    assert (tmp_path / "table.txt").read_text() == table + "\n"
    assert "1 of 2 cells not green: memory@3.12" in out.stderr
    assert f"```text\n{table}\n```" in summary.read_text()
    assert "| memory (Python 3.12.1) |" in summary.read_text()  # the guarantee matrix
    assert '<table id="matrix">' in (tmp_path / "matrix.html").read_text()
    green = run_cli("matrix", str(tmp_path), "--adapters", "memory", "--pythons", "3.13")
    assert green.returncode == 0, green.stderr

