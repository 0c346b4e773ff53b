"""Benchmark of the history checker: prints ops/s on a recorded 100,000-op history.

Run it with ``python tests/bench_checker.py [--ops 100000] [--seed 1]``. The
history comes from the real workload against a correct store whose calls
overlap (so every concurrency path of the checker runs), with a trivial
embedder so that generating it takes seconds, not minutes. The target is
>= 50,000 ops/s (a 100,000-op history in under 2 s). Wall time suffers when
the machine is busy; CPU time is the steadier number.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_workload import Wrapper

from nomnesia.adapters.fragile import FragileMemoryStore
from nomnesia.suite.checker import check
from nomnesia.suite.history import History
from nomnesia.suite.workload import Workload, run


class CheapEmbedder:
    """Search quality is irrelevant here; only the history's shape matters."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[float(len(t) % 7), 1.0] for t in texts]


async def record(ops: int, seed: int) -> History:
    async with Wrapper(seed=seed, embedder=CheapEmbedder()) as store:
        outcome = await run(store, Workload(seed=seed, ops=ops))
    assert outcome, outcome.report()
    return outcome.history


async def record_fragile(ops: int, seed: int) -> History:
    async with FragileMemoryStore(seed=seed) as store:
        outcome = await run(store, Workload(seed=seed, ops=ops))
    return outcome.history


def measure(history: History, label: str) -> float:
    wall, cpu = time.perf_counter(), time.process_time()
    found = check(history, keep_last=4, search_staleness=0.0)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    n = len(history)
    print(f"{label}: {n:,} ops, {len(found)} anomalies; checked in {wall:.2f} s wall "
          f"({n / wall:,.0f} ops/s), {cpu:.2f} s CPU ({n / cpu:,.0f} ops/s)")
    return n / cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=100_000, help="history size (ops)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    started = time.perf_counter()
    # ~2.2 ops per call slot (invoke + completion, plus retries); cut to exactly --ops.
    history = asyncio.run(record(int(args.ops / 2.1), args.seed))
    print(f"recorded {len(history):,} ops in {time.perf_counter() - started:.1f} s")
    rate = measure(History(history.ops[: args.ops]), "correct store")
    buggy = asyncio.run(record_fragile(2_500, args.seed))
    measure(buggy, "FragileMemoryStore (anomalies, minimised)")
    ok = rate >= 50_000
    print(f"target >= 50,000 ops/s CPU: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
