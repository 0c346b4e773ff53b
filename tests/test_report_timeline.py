"""A failing history as the report keeps it (``report.evidence``) and draws it (``timeline``).

The run page around it is test_report_page.py; the browser's view, test_report_browser.py.
"""

from __future__ import annotations

import json
import re
from typing import Any

from nomnesia.suite.contract import G7
from nomnesia.suite.core.checker import Anomaly
from nomnesia.suite.core.history import History
from nomnesia.suite.core.violations import GuaranteeViolation
from nomnesia.suite.report.evidence import evidence, history_json
from nomnesia.suite.report.timeline import anomaly_lines, build, render


def _history() -> tuple[History, list[Anomaly]]:
    """Two clients: p0 appends then reads; p1 compacts in between; one failed and one
    cancelled call, a note, and an anomaly made of the append, the compaction and the read."""
    h = History()
    a = h.invoke(0, "append", "ann", ("user", "hello " * 30, None))
    c = h.invoke(1, "compact", "ann")
    h.complete(a, "ok", ("m1", 0, "user", (), "ann"))
    h.note("failpoint armed")
    h.complete(c, "ok", None)
    r = h.invoke(0, "read", "ann", 5)
    bad = h.invoke(1, "append", ["not", "a", "user"], ("user", "x", None))
    h.complete(bad, "fail", error="TypeError: user_id")
    h.complete(r, "ok", ())
    gone = h.invoke(1, "search", "ann", ("hello", 3))
    h.complete(gone, "info", error="CancelledError")
    h.invoke(0, "forget", "ann")  # never completes: indeterminate
    anomaly = Anomaly(G7, f"'hello' was acknowledged, then compact {c.index} ran, and read "
                      f"{r.index} (limit 5) neither returns it: lost",
                      [a, c, h.ops[a.index + 2], r], kind="lost")
    return h, [anomaly]


def _evidence() -> dict[str, Any]:
    h, anomalies = _history()
    exc = GuaranteeViolation(G7, anomalies[0].message, anomalies=anomalies, history=h)
    return json.loads(json.dumps(evidence(exc)))  # what crosses xdist and the JSON file


def test_evidence_keeps_the_whole_message_the_anomaly_ops_and_the_history() -> None:
    found = _evidence()
    assert found["text"].startswith("G7 atomic compaction: 'hello' was acknowledged")
    (anomaly,) = found["anomalies"]
    assert anomaly["guarantee"] == "G7" and anomaly["kind"] == "lost"
    assert anomaly["ops"] == [0, 1, 2, 5]
    ops = found["history"]["ops"]
    assert [op["index"] for op in ops] == list(range(len(ops))) and not found["history"]["cut"]
    content = ops[0]["value"][1]
    assert len(content) < 100 and content.endswith("(180 chars)")  # cut, and says so
    assert ops[6]["user_id"] == ["not", "a", "user"]


def test_a_long_history_keeps_the_anomaly_neighbourhood_and_both_ends_of_its_calls() -> None:
    h = History()
    for i in range(400):
        h.complete(h.invoke(i % 3, "read", "ann", 5), "ok", ())
    kept = history_json(h.ops, [401], limit=100, context=4)
    indexes = [op["index"] for op in kept["ops"]]
    assert kept["cut"] and kept["total"] == 800
    assert indexes == list(range(396, 406))  # 397..405 around 401, 396 the invoke of 397
    assert history_json(h.ops, [401], limit=800)["cut"] is False
    tail = history_json(h.ops, [], limit=100)["ops"]  # nothing marked: where the check failed
    assert [op["index"] for op in tail] == list(range(700, 800))


def test_the_timeline_has_a_lane_per_client_and_a_bar_per_call_coloured_by_its_end() -> None:
    found = _evidence()
    timeline = build(found["history"], found["anomalies"])
    assert timeline.lanes == [0, 1]
    outcomes = {b.index: (b.f, b.outcome) for b in timeline.bars}
    assert outcomes == {0: ("append", "ok"), 1: ("compact", "ok"), 5: ("read", "ok"),
                        6: ("append", "fail"), 9: ("search", "cancelled"),
                        11: ("forget", "info")}
    assert [b.index for b in timeline.bars if b.anomalies] == [0, 1, 5]
    assert [n["value"] for n in timeline.notes] == ["failpoint armed"]


def test_anomaly_bars_and_their_text_lines_link_to_each_other() -> None:
    found = _evidence()
    timeline = build(found["history"], found["anomalies"])
    svg = render(timeline, "f1")
    text = anomaly_lines(found["anomalies"], timeline, "f1")
    bars = dict(re.findall(r'<a id="(f1-op\d+)" class="bar [a-z]+ anomaly" href="#([^"]+)"', svg))
    assert bars == {"f1-op0": "f1-a0-op0", "f1-op1": "f1-a0-op1", "f1-op5": "f1-a0-op5"}
    lines = dict(re.findall(r'<li id="(f1-a0-op\d+)"><a href="#([^"]+)"', text))
    # The completion (op 2) is a line of its own, linked to the bar of its call (op 0).
    assert lines == {"f1-a0-op0": "f1-op0", "f1-a0-op1": "f1-op1", "f1-a0-op2": "f1-op0",
                     "f1-a0-op5": "f1-op5"}
    assert '<a href="#f1-op1">compact 1</a>' in text and '<a href="#f1-op5">read 5</a>' in text
    assert svg.count('class="span compact"') == 1 and svg.count('class="note"') == 1
    assert "tl-overview" not in svg  # 12 events fit the page: no overview strip


def test_fault_windows_are_shaded_and_a_long_history_gets_an_overview() -> None:
    h = History()
    for i in range(2400):
        h.complete(h.invoke(i % 5, "append", "ann", ("user", f"m{i}", None)), "ok",
                   (f"m{i}", i, "user", (), "ann"))
    ops = history_json(h.ops)
    start, end = h.ops[2000].time, h.ops[2400].time
    assert not ops["cut"]
    svg = render(build(ops, windows=[(start, end, "valkey paused")]), "f2")
    assert 'class="tl-overview"' in svg and svg.count('href="#f2-seg') == 40
    assert svg.count('id="f2-seg') == 40
    assert svg.count('<g class="window">') == 1 and "valkey paused" in svg
