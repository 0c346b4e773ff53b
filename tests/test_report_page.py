"""The run page (``report.page``): the verdict first, causes with their stories, the matrix."""

from __future__ import annotations

import html.parser
import json
import re
from pathlib import Path
from typing import Any

import pytest
from test_report_timeline import _evidence

from nomnesia.suite.cli import main
from nomnesia.suite.report.page import render_page, replay_command
from nomnesia.suite.reporting import FORMAT, group_causes, guarantee_verdicts


def _report() -> dict[str, Any]:
    found = _evidence()
    failing = {"nodeid": "suite/test_concurrency.py::TestConcurrency::test_concurrent_x",
               "outcome": "failed", "guarantees": ["G7"], "failed_guarantees": ["G7"],
               "message": found["text"].splitlines()[0], "evidence": found,
               "causes": [{"key": "G7 get_history: lost", "guarantee": "G7", "kind": "lost",
                           "message": "lost"}]}
    tests = [failing,
             {"nodeid": "suite/t.py::T::test_ok", "outcome": "passed", "guarantees": ["G1"],
              "failed_guarantees": [], "message": ""},
             {"nodeid": "suite/t.py::T::test_search", "outcome": "not applicable",
              "guarantees": ["G4"], "failed_guarantees": [],
              "message": "not applicable to profile seed: needs search"}]
    return {"format": FORMAT, "meta": {
                "label": "pkg.mod:Store", "python": "3.12.1", "exitstatus": 1, "seed": "42",
                "argv": ["--pyargs", "nomnesia.suite", "--store", "pkg.mod:Store",
                         "--nomnesia-json", "/tmp/r.json", "-q"]},
            "summary": {"failed": 1, "passed": 1, "not applicable": 1},
            "guarantees": guarantee_verdicts(tests),
            "causes": group_causes([(failing["nodeid"], failing["causes"])]), "tests": tests}


def test_replay_command_reruns_the_test_with_the_seed_and_without_the_report() -> None:
    command = replay_command(_report()["meta"], "suite/t.py::T::test_x[compact]")
    assert command == ("python -m pytest --pyargs nomnesia.suite --store pkg.mod:Store -q "
                       "--nomnesia-seed 42 -k 'test_x[compact]'")


class _Ids(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.order: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        ident = dict(attrs).get("id")
        if ident:
            self.ids.append(ident)
            if ident in ("verdict", "guarantees", "failures", "matrix", "not-applicable"):
                self.order.append(ident)


def test_the_run_page_puts_the_verdict_first_then_causes_matrix_and_not_applicable() -> None:
    page = render_page(_report())
    parser = _Ids()
    parser.feed(page)
    assert parser.order == ["verdict", "guarantees", "failures", "matrix", "not-applicable"]
    assert len(parser.ids) == len(set(parser.ids)), "an id twice: a link would go astray"
    assert re.search(r'id="verdict" class="verdict fail"><strong>FAIL</strong> 1 test of 2 '
                     r"that ran failed, breaking G7 atomic compaction \(1\)", page)
    assert '<li class="fail" id="chip-G7"><a href="#g-G7">' in page
    assert 'id="g-G7"' in page and "data-bars=\"6\"" in page
    assert "--nomnesia-seed 42 -k test_concurrent_x" in page
    assert "needs search" in page


@pytest.mark.parametrize("bad", ['<script>alert(1)</script>', "a & b"])
def test_the_page_escapes_what_a_store_returned(bad: str) -> None:
    report = _report()
    first = report["tests"][0]["evidence"]["history"]["ops"][0]
    first["value"], first["user_id"] = ["user", bad, None], bad  # a label starts with the user
    page = render_page(report)
    assert bad not in page and "<script" not in page


def test_report_html_writes_a_page_per_run_and_links_the_matrix_cells_to_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "seed.json"
    source.write_text(json.dumps(_report()), encoding="utf-8")
    assert main(["report", str(source), "--html", str(tmp_path / "m.html")]) == 0
    matrix = (tmp_path / "m.html").read_text(encoding="utf-8")
    run = (tmp_path / "m.run1.html").read_text(encoding="utf-8")
    assert '<a href="m.run1.html#g-G7">FAIL (1)</a>' in matrix
    assert '<a href="m.html">all runs</a>' in run and 'id="g-G7"' in run
    assert "FAIL on G7 atomic compaction (1)" in matrix  # read before the table
