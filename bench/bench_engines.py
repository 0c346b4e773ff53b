"""What one xdist worker pays to start its embedded engines (PostgreSQL + pgvector, Redis, Valkey).

Run:  python bench/bench_engines.py [--rounds 5] [--workers 2]

It measures, in fresh processes each time (as a worker would be):
  * one worker alone, engines started concurrently (``provider.urls``) and one by one;
  * ``--workers`` processes starting at the same moment, like ``pytest -n 2``.
Each figure covers handing out URLs that answer: initdb, pgvector created, ports open.
Target: under 3 s per worker. Wall time grows with whatever else runs on the machine;
the CPU seconds per worker (ours plus the engines', start to close) do not, so a busy
machine still gives a fair figure: on an idle box wall time is about that CPU time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

SERVERS = ("postgres", "redis", "valkey")
TARGET = 3.0

_WORKER = """
import json, resource, sys, time
from nomnesia.adapters.engines import EmbeddedProvider

def cpu():
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
mode, start_at = sys.argv[1], float(sys.argv[2])
while time.time() < start_at:
    time.sleep(0.001)
t0 = time.perf_counter()
c0 = cpu()
provider = EmbeddedProvider()
if mode == "concurrent":
    provider.urls("postgres", "redis", "valkey")
    parts = {}
else:
    parts = {}
    for engine in ("postgres", "redis", "valkey"):
        t = time.perf_counter()
        provider.url(engine)
        parts[engine] = time.perf_counter() - t
started = time.perf_counter() - t0
t = time.perf_counter()
provider.close()
print(json.dumps({"start": started, "close": time.perf_counter() - t, "parts": parts,
                  "cpu": cpu() - c0}))
"""


def _run(mode: str, workers: int) -> list[dict[str, object]]:
    """``workers`` fresh processes that start their engines at the same instant."""
    start_at = time.time() + 1.5  # after every interpreter has imported the providers
    procs = [subprocess.Popen([sys.executable, "-c", _WORKER, mode, str(start_at)],
                              stdout=subprocess.PIPE, text=True) for _ in range(workers)]
    results = []
    for proc in procs:
        out, _ = proc.communicate(timeout=120)
        if proc.returncode != 0:
            raise SystemExit(f"worker failed with {proc.returncode}")
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def _summary(values: list[float]) -> str:
    return (f"median {statistics.median(values):.2f}s  min {min(values):.2f}s  "
            f"max {max(values):.2f}s  (n={len(values)})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    print(f"engines per worker: {', '.join(SERVERS)}; {args.rounds} rounds; target < {TARGET:g}s")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"machine: {os.cpu_count()} cpus, load average {load} (other work inflates figures)")
    worst = 0.0
    for label, mode, workers in (("1 worker, concurrent start", "concurrent", 1),
                                 ("1 worker, one by one", "sequential", 1),
                                 (f"{args.workers} workers in parallel (-n {args.workers})",
                                  "concurrent", args.workers)):
        starts: list[float] = []
        closes: list[float] = []
        cpus: list[float] = []
        parts: dict[str, list[float]] = {}
        for _ in range(args.rounds):
            for result in _run(mode, workers):
                starts.append(float(result["start"]))  # type: ignore[arg-type]
                closes.append(float(result["close"]))  # type: ignore[arg-type]
                cpus.append(float(result["cpu"]))  # type: ignore[arg-type]
                for engine, seconds in result["parts"].items():  # type: ignore[attr-defined]
                    parts.setdefault(engine, []).append(seconds)
        if mode == "concurrent":
            worst = max(worst, statistics.median(starts))
        print(f"{label:<34} start: {_summary(starts)}")
        print(f"{'':<34} close: {_summary(closes)}")
        print(f"{'':<34} cpu:   {_summary(cpus)}  (start+close, engines included)")
        for engine, seconds in parts.items():
            print(f"{'':<34}   {engine:<8} {statistics.median(seconds):.2f}s median")
    verdict = "OK" if worst < TARGET else "OVER TARGET"
    print(f"per-worker startup (median, worst case above): {worst:.2f}s -> {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
