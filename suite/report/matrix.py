"""The nox matrix: one leaf (an adapter on one Python) per JSON report, as one table.

Every leaf of ``nox -s matrix`` writes the suite's JSON report; the text table,
the GitHub Actions job summary and the HTML page are all built from those
files, by ``python -m nomnesia.suite.reporting``:

    python -m nomnesia.suite.reporting matrix DIR --adapters a,b --pythons 3.12,3.13
    python -m nomnesia.suite.reporting leaf REPORT --exit CODE --label a --python 3.12

``leaf`` records the exit code that pytest really returned, so that a pytest
that crashed (or never started) before writing its report still reads as an
ERROR with its code, instead of a cell that silently did not run.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .labels import FORMAT, LEGEND, NOT_APPLICABLE, guarantee_of, label_order
from .matrix_html import build_matrix, render_html, render_markdown
from .page import write_run_pages

__all__ = ["LeafCell", "job_summary", "leaf_cell", "main", "matrix_cells", "minor",
           "read_reports", "record_exit", "render_table"]


@dataclass
class LeafCell:
    """One leaf's outcome, as a cell of the adapter x Python table."""

    status: str  # pass | fail | error | no tests | skipped | not run
    tests: int = 0
    skipped: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    """Failed tests per guarantee their failure names."""
    detail: str = ""
    unreached: list[str] = field(default_factory=list)
    """Guarantees every test of which stopped on another failure first."""
    untested: list[str] = field(default_factory=list)
    """Guarantees every test of which was skipped."""
    not_applicable: int = 0
    """Tests the store's profile cannot be judged by (counted apart from skips)."""
    profile: str = ""
    """The store's profile, when it is not the full one."""

    @property
    def ok(self) -> bool:
        return self.status in ("pass", "no tests", "skipped")

    def text(self) -> str:
        """Never a bare "pass" for what did not run: skips are counted, and a guarantee
        whose tests all stopped early on another failure reads "not reached"."""
        if self.status == "pass":
            ran = self.tests - self.skipped - self.not_applicable
            return f"pass ({ran}" + (
                f", {self.skipped} skipped" if self.skipped else "") + (
                f", {self.not_applicable} n/a ({self.profile})" if self.not_applicable else "") + (
                f"; {' '.join(self.untested)} skipped" if self.untested else "") + ")"
        if self.status == "skipped":
            return f"skipped ({self.skipped})"
        if self.status == "fail":
            return "FAIL " + " ".join(sorted(self.failed, key=label_order)) + (
                f" ({' '.join(self.unreached)} not reached)" if self.unreached else "")
        if self.status == "error":
            return f"ERROR ({self.detail})"
        return self.status


def leaf_cell(report: Mapping[str, Any]) -> LeafCell:
    """A leaf's cell from its JSON report; ``meta.exitstatus`` is pytest's exit code."""
    code = report.get("meta", {}).get("exitstatus")
    if code == 5:
        return LeafCell("no tests")
    if code not in (0, 1):
        return LeafCell("error", detail=f"pytest exit {code}")
    cell = LeafCell("pass")
    profile = report.get("meta", {}).get("profile") or {}
    cell.profile = str(profile.get("name") or "")
    for test in report.get("tests", ()):
        outcome = test.get("outcome")
        cell.tests += 1
        cell.skipped += outcome in ("skipped", "xfailed")  # as junit counted them
        cell.not_applicable += outcome == NOT_APPLICABLE
        if outcome in ("failed", "error"):
            labels = list(test.get("failed_guarantees") or ()) or [
                guarantee_of(str(test.get("message", "")), str(test.get("nodeid", "")))]
            for label in labels:
                cell.failed[label] = cell.failed.get(label, 0) + 1
    if code == 1 or cell.failed:
        cell.status = "fail"
        cell.failed = cell.failed or {"unlabelled": 1}
    elif cell.tests and cell.skipped + cell.not_applicable == cell.tests:
        cell.status = "skipped"  # e.g. an engine this machine cannot run: see the leaf's log
    verdicts = report.get("guarantees") or {}
    states = {k: str(v.get("verdict")) for k, v in verdicts.items() if isinstance(v, Mapping)}
    order = sorted(states, key=label_order)
    cell.unreached = [k for k in order if states[k] == "not reached"]
    cell.untested = [k for k in order if states[k] == "skipped"]
    return cell


def minor(version: str) -> str:
    """``3.12.1`` -> ``3.12``: a leaf is named by the Python its classifier names."""
    return ".".join(version.split(".")[:2])


def read_reports(directory: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every suite report in ``directory``; other JSON files and torn writes are left out."""
    reports = []
    for path in sorted(Path(directory).glob("*.json")):
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data, dict) and data.get("format") == FORMAT:
                reports.append(data)
    return reports


def matrix_cells(reports: Iterable[Mapping[str, Any]], adapters: Iterable[str],
                 pythons: Iterable[str], missing: Iterable[str] = ()
                 ) -> dict[tuple[str, str], LeafCell]:
    """(adapter, Python) -> cell; a leaf without a report did not run (``missing``:
    the Pythons no interpreter was found for, which says why)."""
    by_leaf = {(str(r.get("meta", {}).get("label")), minor(str(r.get("meta", {}).get("python"))))
               : r for r in reports}
    absent = set(missing)
    return {(a, p): leaf_cell(by_leaf[(a, p)]) if (a, p) in by_leaf else
            LeafCell("not run", detail=f"no Python {p}" if p in absent else "")
            for a in adapters for p in pythons}


def render_table(cells: Mapping[tuple[str, str], LeafCell], adapters: Sequence[str],
                 pythons: Sequence[str], guarantees: Mapping[str, str] | None = None) -> str:
    """One table, adapter x Python, then what each failed guarantee is."""
    names = LEGEND if guarantees is None else guarantees
    header = ["adapter", *pythons]
    rows = [[a, *(cells[(a, p)].text() for p in pythons)] for a in adapters]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(row: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()

    out = [line(header), line(["-" * w for w in widths]), *map(line, rows)]
    labels = sorted({g for c in cells.values() for g in c.failed}, key=label_order)
    if labels:
        out.append("")
        out.append("failures, by the guarantee they name:")
        for label in labels:
            where = [f"{a}@{p} ({cells[(a, p)].failed[label]})" for a in adapters for p in pythons
                     if label in cells[(a, p)].failed]
            out.append(f"  {names.get(label, label)}: {', '.join(where)}")
    notes = [f"  {a}@{p}: {c.status}{' - ' + c.detail if c.detail else ''}"
             for (a, p), c in cells.items() if c.status == "not run" and c.detail]
    if notes:
        out.extend(["", "other outcomes:", *notes])
    return "\n".join(out)


def record_exit(path: str | os.PathLike[str], code: int, label: str, python: str
                ) -> dict[str, Any]:
    """Make the report at ``path`` say pytest's real exit code, writing one if pytest
    wrote none (it crashed, or stopped on a usage error); return the report."""
    target = Path(path)
    try:
        report: dict[str, Any] = json.loads(target.read_text(encoding="utf-8"))
        if report.get("format") != FORMAT:
            raise ValueError(target)
    except (OSError, ValueError):
        report = {"format": FORMAT, "meta": {"label": label, "adapter": label,
                                             "python": python}, "summary": {},
                  "guarantees": {}, "causes": [], "tests": []}
    if report["meta"].get("exitstatus") != code:
        report["meta"]["exitstatus"] = code
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n",
                          encoding="utf-8")
    return report


def job_summary(table: str, reports: list[dict[str, Any]]) -> str:
    """Markdown for a CI job summary: the table as text, then the guarantee matrix."""
    return f"```text\n{table}\n```\n\n{render_markdown(build_matrix(reports))}\n"


def _append(path: str | None, text: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)


def _csv(text: str) -> list[str]:
    return [part for part in text.split(",") if part]


def main(argv: Sequence[str] | None = None) -> int:
    """``matrix``: print the table of a run directory (exit 1 unless every cell is
    green), write table.txt, matrix.html and a page per leaf beside it; ``leaf``:
    record a leaf's exit code and print its cell."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m nomnesia.suite.reporting",
                                     description=main.__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    table = sub.add_parser("matrix", help="the adapter x Python table of a directory of reports")
    table.add_argument("directory", type=Path)
    table.add_argument("--adapters", type=_csv, required=True, help="rows, comma-separated")
    table.add_argument("--pythons", type=_csv, required=True, help="columns, comma-separated")
    table.add_argument("--missing", type=_csv, default=[],
                       help="Pythons without an interpreter (their cells say so)")
    table.add_argument("--summary", help="append Markdown to this file ($GITHUB_STEP_SUMMARY)")
    leaf = sub.add_parser("leaf", help="record one leaf's pytest exit code, print its cell")
    leaf.add_argument("report", type=Path)
    leaf.add_argument("--exit", type=int, required=True, dest="code")
    leaf.add_argument("--label", required=True, help="the adapter")
    leaf.add_argument("--python", required=True, help="the leaf's Python, e.g. 3.12")
    leaf.add_argument("--summary", help="append Markdown to this file ($GITHUB_STEP_SUMMARY)")
    ns = parser.parse_args(argv)

    if ns.command == "leaf":
        report = record_exit(ns.report, ns.code, ns.label, ns.python)
        cell = leaf_cell(report)
        print(cell.text())
        _append(ns.summary, job_summary(render_table(
            {(ns.label, ns.python): cell}, [ns.label], [ns.python]), [report]))
        return 0 if cell.ok else 1

    reports = read_reports(ns.directory)
    cells = matrix_cells(reports, ns.adapters, ns.pythons, ns.missing)
    text = render_table(cells, ns.adapters, ns.pythons)
    (ns.directory / "table.txt").write_text(text + "\n", encoding="utf-8")
    links = write_run_pages(reports, ns.directory / "matrix.html")
    (ns.directory / "matrix.html").write_text(render_html(build_matrix(reports), links=links),
                                              encoding="utf-8")
    _append(ns.summary, job_summary(text, reports))
    print(f"\nnomnesia conformance, results in {ns.directory}\n\n{text}\n", flush=True)
    if all(c.status == "no tests" for c in cells.values()):
        print("warning: the suite collected no tests on any cell", file=sys.stderr)
    bad = [f"{a}@{p}" for (a, p), c in cells.items() if not c.ok]
    if bad:
        print(f"{len(bad)} of {len(cells)} cells not green: {', '.join(bad)}", file=sys.stderr)
    return 1 if bad else 0
