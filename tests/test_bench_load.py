"""The load benchmark on in-process stores, at ``--quick`` size: the headline can fail.

The seed's FragileMemoryStore must show anomalies under the load workload and the
correct in-process store none: if either stops holding, the benchmark's headline
(anomalies per 1,000 operations, theirs against ours) no longer measures anything.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import bench_load  # noqa: E402

from nomnesia.adapters.fragile import FragileMemoryStore  # noqa: E402

SEED = 14


def test_quick_load_on_fragile_and_memory(tmp_path: Path) -> None:
    # A subprocess: the driver owns its event loop, as the full run does.
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "bench_load.py"), "--quick", "--stacks",
         "fragile,memory,no-such-stack", "--seed", str(SEED), "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"replay with --seed {SEED}" in proc.stdout

    load = json.loads((tmp_path / "load.json").read_text())
    assert load["config"]["seed"] == SEED and load["config"]["concurrency"] == 8
    rows = load["stacks"]
    assert "unknown stack" in rows["no-such-stack"]["skipped"]  # a row, with the reason
    for name in ("fragile", "memory"):
        row = rows[name]
        assert "skipped" not in row, row
        assert row["calls"] >= load["config"]["ops"], name
        assert row["content_sizes"]["max"] == bench_load.SPEC_MAX, name  # the SPEC maximum
        for f in bench_load.OPS:
            op = row["ops"][f]
            assert op["count"] > 0 and op["p99_ms"] >= op["p50_ms"] >= 0, (name, f)
            assert op["per_s"] > 0, (name, f)
            assert row["memory_per_op"][f]["max_mib"] >= 0, (name, f)
        assert row["memory_per_op"]["append"]["max_mib"] > 0.1, name  # a 64 Ki append allocates
        store = [r for r in row["rss"] if r["engine"].startswith("store process")]
        assert store, row["rss"]
        assert store[0]["peak_mib"] >= max(store[0]["start_mib"], store[0]["end_mib"]) > 0
    # The headline: the seed's store breaks the contract under load, ours does not.
    assert rows["fragile"]["anomalies"] > 0 and rows["fragile"]["anomalies_per_1k"] > 0
    assert rows["fragile"]["first_anomalies"][0].startswith("G")
    assert rows["memory"]["anomalies"] == 0, rows["memory"]["first_anomalies"]

    md = (tmp_path / "load.md").read_text()
    assert "## Load" in md and "anomalies per 1,000 operations" in md.lower()
    fragile_row = re.search(r"^\| fragile \| [\d,]+ \| [\d,]+ \| (\d+) \|", md, re.M)
    assert fragile_row and int(fragile_row.group(1)) == rows["fragile"]["anomalies"], md
    assert re.search(r"^\| memory \| [\d,]+ \| [\d,]+ \| 0 \| 0\.00 \|", md, re.M), md


def test_a_seed_replays_the_same_verdict() -> None:
    # FragileMemoryStore is deterministic on one event loop: the printed seed must replay the
    # run's verdict exactly, anomaly for anomaly.
    cfg = replace(bench_load.LoadConfig(seed=SEED, **bench_load.QUICK), ops=300)  # type: ignore[arg-type]

    async def once() -> dict[str, int]:
        async with FragileMemoryStore(seed=cfg.seed) as store:
            row = await bench_load.storm(store, cfg)
        return {"calls": row["calls"], **row["by_guarantee"]}

    first, again = asyncio.run(once()), asyncio.run(once())
    assert first == again
    assert sum(v for k, v in first.items() if k != "calls") > 0, first


def test_report_folds_the_load_table_in(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "report.py"), "--out", str(tmp_path),
         "--stacks", "memory", "--n", "5", "--users", "2", "--checker-ops", "0",
         "--load-quick", "--load-ops", "200", "--load-seed", str(SEED), "--no-extra"],
        capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((tmp_path / "report.json").read_text())
    assert set(report["load"]["stacks"]) == {"fragile", "memory"}
    assert report["load"]["config"]["ops"] == 200
    md = (tmp_path / "report.md").read_text()
    assert "## Load" in md and "| fragile |" in md and "### RSS under load" in md
