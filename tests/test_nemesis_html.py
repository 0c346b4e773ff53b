"""The nemesis's HTML page (issue 36): fault bands, points by outcome, availability bars.

Built from a hand-made report, so it runs in milliseconds with no engine. It reads
the page as XML-ish text: each fault window a band labelled by kind and target,
each outcome its own group of points, one bar per kind and the baseline, and
every label escaped (a fault's detail comes from an injector, and the page must
open as a page whatever it says).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

from nomnesia.suite.core.history import Op
from nomnesia.suite.nemesis.__main__ import main as nemesis_main
from nomnesia.suite.nemesis.report import FaultRecord, NemesisReport, latency_series
from nomnesia.suite.nemesis.report_html import load, main, render

S = 1_000_000_000


def _report() -> NemesisReport:
    faults = [
        FaultRecord("net", "postgres", "stall", started=2.0, held=1.5,
                    recovered_after=0.4, attempted=20, answered=15),
        FaultRecord("crash", "", "<script>alert(1)</script>", started=5.0, held=0.8,
                    recovered_after=None, attempted=10, answered=10),
    ]
    latency: list[list[object]] = [[0.2 * i, 2.0 + i % 5, "ok", "append"] for i in range(40)]
    latency += [[2.9, 1000.0, "info", "read"], [3.1, 0.5, "fail", "append"]]
    return NemesisReport("pgvector", 1, ["crash", "net"], faults=faults,
                         operations={"ok": 40, "fail": 1, "info": 1},
                         baseline={"attempted": 8, "answered": 8}, latency=latency)


def test_page_shades_one_band_per_fault_with_its_label() -> None:
    page = render(_report())
    bands = re.findall(r'<g class="band (\w+)" data-label="([^"]*)">', page)
    assert bands == [("net", "net:postgres:stall"),
                     ("crash", "crash::&lt;script&gt;alert(1)&lt;/script&gt;")]
    assert ">net:postgres:stall</text>" in page


def test_page_draws_points_of_each_outcome_and_the_availability_bars() -> None:
    page = render(_report())
    for outcome, count in (("ok", 40), ("fail", 1), ("info", 1)):
        group = re.search(rf'<g class="pts {outcome}">(.*?)</g>', page)
        assert group is not None and group.group(1).count("<circle") == count
    bars = re.findall(r'<g class="avail (\w+)" data-kind="([^"]*)">', page)
    assert bars == [("baseline", "before faults"), ("crash", "crash"), ("net", "net")]
    assert "15/20 (75.0%)" in page and "8/8 (100.0%)" in page


def test_labels_are_escaped() -> None:
    page = render(_report())
    assert "<script" not in page
    assert "&lt;script&gt;" in page


def test_latency_series_keeps_failures_and_samples_acknowledged_calls() -> None:
    ops: list[Op] = []
    for i in range(100):
        kind = "info" if i in (10, 50) else "ok"
        ops.append(Op(2 * i, 1, "invoke", "read", "u", None, (10 + i) * S, None))
        ops.append(Op(2 * i + 1, 1, kind, "read", "u", None, (10 + i) * S + 3_000_000, None))
    series = latency_series(ops, 10 * S, limit=10)
    assert len(series) == 10
    assert [row[0] for row in series if row[2] == "info"] == [10.003, 50.003]
    assert series[0][1] == 3.0 and series == sorted(series, key=lambda row: row[0])


def test_a_saved_report_redraws_and_old_reports_lack_the_series(tmp_path: Path) -> None:
    data = _report().to_json()
    (tmp_path / "r.json").write_text(json.dumps(data), encoding="utf-8")
    assert main([str(tmp_path / "r.json"), str(tmp_path / "r.html")]) == 0
    assert (tmp_path / "r.html").read_text(encoding="utf-8") == render(_report())
    del data["latency"]
    assert "no latency series" in render(load(data))


def test_the_cli_offers_html() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        nemesis_main(["--help"])
    assert "--html" in out.getvalue()
