"""Benchmark of the history checker: prints ops/s on a recorded 100,000-op history.

Run it with ``python tests/bench_checker.py [--ops 100000] [--seed 1]``. The
history comes from the real workload against a correct store whose calls
overlap (so every concurrency path of the checker runs), with a trivial
embedder so that generating it takes seconds, not minutes. The target is
>= 50,000 ops/s (a 100,000-op history in under 2 s). Wall time suffers when
the machine is busy; CPU time is the steadier number.

``--growth`` times the entry checker on histories of two users with no compaction (every
read returns a user's whole history), at 5,000, 10,000 and 20,000 calls: the case where
``check_durability`` visited every required message per read (quadratic); the printed
ratios say how CPU grows when the history doubles.

``--keyed`` times the keyed checker (``check_keyed``, for stores without entry ids)
instead, on a synthetic history of ``--ops`` events (tests/keyed_histories.py: seeded,
concurrent, with compactions, forgets and interrupted calls), once correct and once with
anomalies; ``--reference`` also times the old algorithm kept in tests/keyed_reference.py
on the correct one (minutes at 150,000 events: the "before" figure).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from keyed_histories import generate
from keyed_reference import check_keyed_reference
from test_workload import Wrapper

from nomnesia.adapters.fragile import FragileMemoryStore
from nomnesia.suite.core.checker import Anomaly, check
from nomnesia.suite.core.checker_keyed import check_keyed
from nomnesia.suite.core.history import History, Op
from nomnesia.suite.core.workload import Mix, Workload, run


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


async def record_growth(calls: int, seed: int) -> History:
    async with Wrapper(seed=seed, embedder=CheapEmbedder()) as store:
        outcome = await run(store, Workload(seed=seed, ops=calls, users=("ann", "bob"),
                                            mix=Mix(append=0.6, read=0.4, search=0.0,
                                                    compact=0.0, forget=0.0)))
    assert outcome, outcome.report()
    return outcome.history


def growth(seed: int) -> int:
    """CPU of the entry checker as a compaction-free history doubles, and the ratios."""
    last = None
    for calls in (5_000, 10_000, 20_000):
        history = asyncio.run(record_growth(calls, seed))
        cpu = time.process_time()
        check(history, keep_last=4, search_staleness=0.0)
        cpu = time.process_time() - cpu
        ratio = f", x{cpu / last:.1f} for twice the calls" if last else ""
        print(f"{calls:,} calls ({len(history):,} ops): {cpu:.2f} s CPU{ratio}", flush=True)
        last = cpu
    return 0


def measure(history: History, label: str) -> float:
    wall, cpu = time.perf_counter(), time.process_time()
    found = check(history, keep_last=4, search_staleness=0.0)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    n = len(history)
    print(f"{label}: {n:,} ops, {len(found)} anomalies; checked in {wall:.2f} s wall "
          f"({n / wall:,.0f} ops/s), {cpu:.2f} s CPU ({n / cpu:,.0f} ops/s)")
    return n / cpu


def measure_keyed(ops: list[Op], label: str,
                  checker: Callable[..., list[Anomaly]] = check_keyed) -> float:
    """CPU seconds ``checker`` takes on ``ops`` (anomalies minimised, as in a real run)."""
    wall, cpu = time.perf_counter(), time.process_time()
    found = checker(ops, recover=True, compact=True)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"{label}: {len(ops):,} events, {len(found)} anomalies; checked in {wall:.2f} s "
          f"wall, {cpu:.2f} s CPU ({len(ops) / cpu:,.0f} events/s)", flush=True)
    return cpu


def keyed(events: int, seed: int, reference: bool) -> int:
    """The keyed checker's figures; the target is a 150,000-event history in under 10 s."""
    correct = generate(seed, events)
    cpu = measure_keyed(correct, "check_keyed, correct store")
    measure_keyed(generate(seed, events, faults=0.01), "check_keyed, 1 % faulty reads")
    if reference:
        before = measure_keyed(correct, "reference (the old algorithm), correct store",
                               check_keyed_reference)
        print(f"speed-up: {before / cpu:,.0f}x")
    ok = cpu < 10 * events / 150_000
    print(f"target < 10 s CPU per 150,000 events: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=100_000, help="history size (ops)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keyed", action="store_true", help="time check_keyed instead")
    parser.add_argument("--growth", action="store_true",
                        help="time the entry checker as a compaction-free history doubles")
    parser.add_argument("--reference", action="store_true",
                        help="with --keyed: also time the old algorithm (minutes)")
    args = parser.parse_args()
    if args.keyed:
        return keyed(args.ops, args.seed, args.reference)
    if args.growth:
        return growth(args.seed)
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
