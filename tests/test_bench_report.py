"""The benchmark driver, on tiny sizes: the oracle and one real stack give all three outputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_report_writes_json_markdown_and_plots(tmp_path: Path) -> None:
    # A subprocess: the driver owns its event loop and its engines, and must stop them itself.
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "report.py"), "--out", str(tmp_path),
         "--stacks", "memory,pgvector", "--n", "10", "--users", "2", "--checker-ops", "500",
         "--no-load", "--no-extra"],  # test_bench_load.py: the load table; below: extras
        capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]

    report = json.loads((tmp_path / "report.json").read_text())
    assert set(report["stacks"]) == {"memory", "pgvector"}
    pg = report["stacks"]["pgvector"]
    assert "skipped" not in pg, pg
    for key in ("append_p50", "append_p99", "history_p99", "search_p50", "compact_p99",
                "converge_p50", "converge_p99", "append1_per_s", "append_per_s", "raw_sum_p50",
                "ratio", "raw_per_s"):
        assert pg[key] > 0, key
    assert "ratio" not in report["stacks"]["memory"]  # no engine, no raw baseline
    assert any(r["engine"] == "postgres" and r["rss_mib"] > 0 for r in report["rss"])
    assert report["checker"]["ops"] > 0 and report["checker"]["ops_per_s_cpu"] > 0

    md = (tmp_path / "report.md").read_text()
    for stack in ("memory", "pgvector"):
        assert f"| {stack} |" in md
    assert "| postgres |" in md

    for png in ("latency.png", "throughput.png", "rss.png"):
        data = (tmp_path / png).read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 5000, png


@pytest.mark.slow
def test_report_keeps_the_engine_and_index_benchmarks_beside_it(tmp_path: Path) -> None:
    """The side reports start every engine (about 90 s): hence ``slow``, and the two
    tests above pass ``--no-extra``."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "report.py"), "--out", str(tmp_path),
         "--stacks", "memory", "--n", "5", "--users", "2", "--checker-ops", "0", "--no-load"],
        capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name in ("bench_engines", "bench_indexes"):
        text = (tmp_path / f"{name}.txt").read_text()
        assert text.strip() and "failed (exit" not in text, text[-2000:]
