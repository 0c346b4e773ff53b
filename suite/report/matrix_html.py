"""The adapter × guarantee matrix, from the suite's JSON reports, as Markdown and HTML.

People choose a backend from a table, not from logs: one row per adapter and
Python version, one column per guarantee, and a cell that says whether the
suite exercised it and how many tests broke it. The HTML page is static and
self-contained (inline CSS, no script) so it can be attached to a CI run or
opened from disk.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .labels import (
    FORMAT,
    GUARANTEE_KEYS,
    NA_TEXT,
    NOT_APPLICABLE,
    NOT_EXERCISED,
    RAN_OUTCOMES,
    TITLES,
)
from .verdicts import verdict_text

__all__ = ["COLORS", "CSS", "Cell", "Row", "build_matrix", "load_reports", "matrix_table",
           "render_html", "render_markdown", "verdict_list"]

MAX_LISTED = 50
COLORS = {"pass": "#1e8e3e", "fail": "#d93025", "none": "#e8eaed", "unreached": "#f9ab00",
          "na": "#f8f9fa"}
"""Cell backgrounds; the screenshot test looks for the first three."""

_TITLES = TITLES


@dataclass
class Cell:
    """One guarantee of one row: never "pass" unless a test that checks it passed."""

    tests: int = 0
    """Tests that ran and exercise it."""
    failed: int = 0
    failures: list[str] = field(default_factory=list)
    passed: int = 0
    skipped: int = 0
    not_reached: int = 0
    """Tests that exercise it but failed on another guarantee first."""
    not_applicable: int = 0
    """Tests of it that the store's profile cannot be judged by."""
    judged: bool = True
    """Whether the row's profile is judged on this guarantee at all (SPEC "Profiles")."""

    @property
    def state(self) -> str:
        if self.failed:
            return "fail"
        if not self.judged:
            return "na"
        if self.passed:
            return "pass"
        if self.not_reached:
            return "unreached"
        return "na" if self.not_applicable and not self.skipped else "none"

    @property
    def text(self) -> str:
        if self.state == "na":
            return NA_TEXT
        return verdict_text(self.failed, self.passed, self.skipped, self.not_reached,
                            self.not_applicable)


@dataclass
class Row:
    adapter: str
    python: str
    runs: int = 0
    cells: dict[str, Cell] = field(default_factory=lambda: {k: Cell() for k in GUARANTEE_KEYS})
    outcomes: dict[str, int] = field(default_factory=dict)
    failures: list[tuple[str, str]] = field(default_factory=list)
    """(nodeid, first line of the message) of every failed test."""
    duration: float = 0.0
    exits: set[int] = field(default_factory=set)
    """pytest exit codes other than 0 (all passed) and 1 (some failed)."""
    profile: str = ""
    """The store's profile when it is not the full one (``seed``, ``history`` ...)."""

    @property
    def label(self) -> str:
        shown = f", profile {self.profile}" if self.profile else ""
        return f"{self.adapter} (Python {self.python}{shown})"

    @property
    def short(self) -> tuple[str, str]:
        """(name, detail) for the HTML row head: ``mod.sub:Factory`` shows as Factory."""
        shown = f" · profile {self.profile}" if self.profile else ""
        module, sep, factory = self.adapter.rpartition(":")
        if sep and factory:
            return factory, f"{module} · Python {self.python}{shown}"
        return self.adapter, f"Python {self.python}{shown}"

    @property
    def tests_text(self) -> str:
        total = sum(self.outcomes.values())
        passed = self.outcomes.get("passed", 0)
        bad = self.outcomes.get("failed", 0) + self.outcomes.get("error", 0)
        text = f"{passed}/{total} passed"
        if bad:
            text += f", {bad} failed"
        skipped = self.outcomes.get("skipped", 0)
        if skipped:
            text += f", {skipped} skipped"
        inapplicable = self.outcomes.get(NOT_APPLICABLE, 0)
        if inapplicable:
            text += f", {inapplicable} not applicable"
        if self.exits:
            text += ", pytest exit " + "/".join(map(str, sorted(self.exits)))
        return text


def load_reports(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Read JSON reports; a file that is not one says which file and why."""
    reports = []
    for path in paths:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: cannot read a JSON report: {exc}") from exc
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"{path}: not a nomnesia suite report (format {FORMAT!r})")
        reports.append(data)
    return reports


def build_matrix(reports: Iterable[Mapping[str, Any]]) -> list[Row]:
    """One row per (adapter, Python); several runs of one row add up."""
    rows: dict[tuple[str, str], Row] = {}
    for report in reports:
        meta = report.get("meta", {})
        key = (str(meta.get("label") or "unknown"), str(meta.get("python") or "?"))
        row = rows.setdefault(key, Row(*key))
        row.runs += 1
        profile = meta.get("profile") or {}
        if profile.get("name") and profile.get("name") != "full":
            row.profile = str(profile["name"])
            judged = set(profile.get("judged") or GUARANTEE_KEYS)
            for name, judged_cell in row.cells.items():
                judged_cell.judged = name in judged
        row.duration += float(meta.get("duration") or 0.0)
        if meta.get("exitstatus") not in (0, 1, None):
            row.exits.add(int(meta["exitstatus"]))
        for test in report.get("tests", ()):
            outcome = str(test.get("outcome", "passed"))
            row.outcomes[outcome] = row.outcomes.get(outcome, 0) + 1
            failed = set(test.get("failed_guarantees", ()))
            if outcome in ("failed", "error"):
                row.failures.append((str(test["nodeid"]), str(test.get("message", ""))))
            for name in set(test.get("guarantees", ())) | failed:
                cell = row.cells.get(name)
                if cell is None:
                    continue
                if outcome == NOT_APPLICABLE:
                    cell.not_applicable += 1
                    continue
                if outcome not in RAN_OUTCOMES:
                    cell.skipped += 1  # a skipped test exercised nothing, but it is counted
                    continue
                cell.tests += 1
                if name in failed:
                    cell.failed += 1
                    cell.failures.append(str(test["nodeid"]))
                elif outcome in ("failed", "error"):
                    cell.not_reached += 1
                else:
                    cell.passed += 1
    return sorted(rows.values(), key=lambda r: (r.adapter, _version_key(r.python)))


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in version.split("."))


def render_markdown(rows: list[Row]) -> str:
    header = ["Adapter", *GUARANTEE_KEYS, "Tests"]
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join(["---", *(":-:" for _ in GUARANTEE_KEYS), "---"]) + "|"]
    for row in rows:
        cells = [c.text for c in row.cells.values()]
        lines.append("| " + " | ".join([_md(row.label), *cells, row.tests_text]) + " |")
    legend = ("pass: exercised, no failure (with the share that ran when some were skipped) "
              "· FAIL (n): n tests failed on it · not reached: every test "
              f"of it failed on another guarantee first · {NA_TEXT}: not applicable to the "
              f"store's profile · {NOT_EXERCISED}: not exercised")
    return "\n".join([*lines, "", legend]) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|")


CSS = (":root { " + " ".join(f"--{k}: {v};" for k, v in COLORS.items()) + " }") + """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
       color: #202124; margin: 24px; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; }
p.meta { color: #5f6368; margin: 0 0 16px; }
table#matrix { border-collapse: collapse; margin-bottom: 12px; }
#matrix th, #matrix td { border: 1px solid #fff; padding: 5px 4px; text-align: center; }
#matrix td { font-size: 12px; line-height: 1.25; max-width: 80px; }
#matrix td a { color: inherit; text-decoration: none; }
#matrix thead th { background: #3c4043; color: #fff; font-weight: 600; white-space: normal;
                   min-width: 46px; max-width: 72px; vertical-align: bottom; }
#matrix thead th small { display: block; font-weight: 400; font-size: 11px; line-height: 1.2;
                         color: #dadce0; }
#matrix th.adapter { text-align: left; background: #f1f3f4; color: #202124; max-width: 230px;
                     overflow-wrap: anywhere; }
#matrix th.adapter small { display: block; font-weight: 400; font-size: 11px; color: #5f6368; }
#matrix td.pass { background: var(--pass); color: #fff; }
#matrix td.fail { background: var(--fail); color: #fff; font-weight: 700; }
#matrix td.none { background: var(--none); color: #5f6368; }
#matrix td.unreached { background: var(--unreached); color: #202124; }
#matrix td.na { background: var(--na); color: #80868b; font-style: italic; }
#matrix th.adapter small.tests { color: #202124; }
.legend span { display: inline-block; padding: 2px 8px; margin-right: 8px; border-radius: 3px; }
.legend .pass { background: var(--pass); color: #fff; }
.legend .fail { background: var(--fail); color: #fff; }
.legend .none { background: var(--none); color: #5f6368; }
.legend .unreached { background: var(--unreached); color: #202124; }
.legend .na { background: var(--na); color: #80868b; font-style: italic; }
h2 { font-size: 16px; margin: 24px 0 6px; }
ul.failures { margin: 0; padding-left: 20px; }
ul.verdicts { margin: 0 0 12px; padding-left: 0; list-style: none; }
ul.verdicts li { padding: 2px 8px; border-left: 4px solid var(--pass); margin: 2px 0; }
ul.verdicts li.fail { border-left-color: var(--fail); }
ul.failures code { background: #f1f3f4; padding: 1px 4px; border-radius: 3px; }
"""


def matrix_table(rows: list[Row], links: Mapping[tuple[str, str], str] | None = None) -> str:
    """``<table id="matrix">`` and its legend; with ``links``, a row's head and each of its
    cells link to that row's run page (``page#g-G7``: the guarantee's failures there)."""
    esc = html.escape
    head = "".join(
        f'<th scope="col">{esc(k)}<small>{esc(_TITLES[k])}</small></th>' for k in GUARANTEE_KEYS)
    body = []
    for row in rows:
        href = (links or {}).get((row.adapter, row.python))
        tds = []
        for key, cell in row.cells.items():
            tip = (f"{key} {_TITLES[key]}: {cell.tests} tests ran ({cell.passed} passed, "
                   f"{cell.failed} failed on it, {cell.not_reached} stopped earlier on another "
                   f"guarantee), {cell.skipped} skipped, {cell.not_applicable} not applicable "
                   "to the profile")
            if cell.failures:
                tip += "; first failure: " + cell.failures[0]
            text = esc(cell.text)
            if href:
                text = f'<a href="{esc(href)}#g-{key}">{text}</a>'
            tds.append(f'<td class="{cell.state}" title="{esc(tip)}">{text}</td>')
        name, detail = row.short
        shown = f'<a href="{esc(href)}">{esc(name)}</a>' if href else esc(name)
        body.append(f'<tr><th scope="row" class="adapter" title="{esc(row.label)}">{shown}'
                    f'<small>{esc(detail)}</small><small class="tests">{esc(row.tests_text)}'
                    f'</small></th>{"".join(tds)}</tr>')
    return f"""<table id="matrix">
<thead><tr><th scope="col" class="adapter">Adapter</th>{head}</tr></thead>
<tbody>
{chr(10).join(body)}
</tbody>
</table>
<p class="legend"><span class="pass">pass</span> exercised, no failure
<span class="fail">FAIL (n)</span> n tests failed on it
<span class="unreached">not reached</span> every test of it failed on another guarantee first
<span class="na">{NA_TEXT}</span> not applicable to the store's profile
<span class="none">{NOT_EXERCISED}</span> not exercised</p>
"""


def verdict_list(rows: list[Row]) -> str:
    """One line per row above the matrix: which guarantees it fails, so that a failure is
    read first, whatever the width of the table."""
    esc = html.escape
    items = []
    for row in rows:
        failing = [f"{k} {_TITLES[k]} ({c.failed})" for k, c in row.cells.items() if c.failed]
        state, text = ("fail", "FAIL on " + ", ".join(failing)) if failing else (
            ("fail", "FAIL: " + row.tests_text) if row.failures or row.exits else
            ("pass", "no guarantee broken"))
        items.append(f'<li class="{state}"><b>{esc(row.label)}</b>: {esc(text)}</li>')
    return f'<ul id="verdicts" class="verdicts">{"".join(items)}</ul>'


def render_html(rows: list[Row], *, title: str = "nomnesia conformance matrix",
                generated: str = "", links: Mapping[tuple[str, str], str] | None = None) -> str:
    """A static page: which rows fail what, the matrix as ``<table id="matrix">``, then every
    failure; with ``links`` (``nomnesia report --html``), cells link to run pages."""
    esc = html.escape
    failures = []
    for row in rows:
        if not row.failures:
            continue
        items = "".join(f"<li><code>{esc(nodeid)}</code> {esc(message)}</li>"
                        for nodeid, message in row.failures[:MAX_LISTED])
        if len(row.failures) > MAX_LISTED:
            items += f"<li>… and {len(row.failures) - MAX_LISTED} more</li>"
        failures.append(f"<h2>Failures: {esc(row.label)}</h2><ul class=\"failures\">{items}</ul>")
    meta = f"{len(rows)} adapter rows" + (f" · generated {esc(generated)}" if generated else "")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)}</title>
<style>{CSS}</style>
</head>
<body>
<h1>{esc(title)}</h1>
<p class="meta">{meta}</p>
{verdict_list(rows)}
{matrix_table(rows, links)}
{"".join(failures)}
</body>
</html>
"""
