"""Throughput and latency of each VectorIndex backend, 384-d vectors, on this machine.

    python bench/bench_indexes.py [--n 2000] [--users 20] [--batch 100] [--queries 200]

Per backend: batched upsert throughput (vectors/s), single-entry upsert
latency (what one append costs the store), query latency (k=10, filtered to
one user) and ``ids`` latency. Engines are the embedded ones (one provider for
the run, stopped at the end); each index works in its own namespace and drops it.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from nomnesia.adapters.engines import EmbeddedProvider
from nomnesia.adapters.memory_tiers import InMemoryIndex
from nomnesia.suite.contract import Entry

Opener = Callable[[EmbeddedProvider, int], Awaitable[tuple[Any, Callable[[], Awaitable[None]]]]]


async def _nothing() -> None:
    return None


async def open_memory(_: EmbeddedProvider, dim: int) -> tuple[Any, Callable[[], Awaitable[None]]]:
    return InMemoryIndex(dim=dim), _nothing


async def open_qdrant(_: EmbeddedProvider, dim: int) -> tuple[Any, Callable[[], Awaitable[None]]]:
    from nomnesia.adapters.indexes import qdrant  # function-level: optional extra
    index = qdrant.QdrantIndex(":memory:", dim=dim)
    await index.create()
    return index, _nothing


async def open_edge(_: EmbeddedProvider, dim: int) -> tuple[Any, Callable[[], Awaitable[None]]]:
    from nomnesia.adapters.indexes import qdrant_edge  # function-level: optional extra
    index = qdrant_edge.QdrantEdgeIndex(dim=dim)
    await index.create()
    return index, _nothing


async def open_milvus(p: EmbeddedProvider, dim: int) -> tuple[Any, Callable[[], Awaitable[None]]]:
    from nomnesia.adapters.indexes import milvus  # function-level: optional extra
    index = milvus.MilvusIndex(p.url("milvus"), dim=dim)
    await index.create()
    return index, _nothing


async def open_vsets(p: EmbeddedProvider, dim: int) -> tuple[Any, Callable[[], Awaitable[None]]]:
    from nomnesia.adapters.indexes import redis_vsets  # function-level: optional extra
    index = redis_vsets.RedisVsetIndex(p.url("redis"), dim=dim)
    await index.create()
    return index, _nothing


async def open_pgvector(p: EmbeddedProvider, dim: int) -> tuple[Any, Callable[[], Awaitable[None]]]:
    from nomnesia.adapters.indexes import pgvector  # function-level: optional extra
    # Its own pool and schema, dropped on close.
    index = pgvector.PgVectorIndex(p.url("postgres"), dim=dim)
    await index.create()
    return index, _nothing


BACKENDS: dict[str, Opener] = {
    "memory": open_memory, "qdrant (local)": open_qdrant, "qdrant-edge": open_edge,
    "milvus (lite)": open_milvus, "redis vsets": open_vsets, "pgvector": open_pgvector,
}


def unit(rng: random.Random, dim: int) -> list[float]:
    v = [rng.gauss(0, 1) for _ in range(dim)]
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def ms(samples: list[float], q: float) -> float:
    return 1000 * statistics.quantiles(samples, n=100)[int(q) - 1] if len(samples) > 1 else 0.0


async def bench(name: str, opener: Opener, provider: EmbeddedProvider,
                args: argparse.Namespace) -> dict[str, float]:
    rng = random.Random(args.seed)
    index, cleanup = await opener(provider, args.dim)
    try:
        entries = [Entry(f"e{i}", f"user-{i % args.users}", i, "user", "") for i in range(args.n)]
        vectors = [unit(rng, args.dim) for _ in entries]
        t0 = time.perf_counter()
        for start in range(0, args.n, args.batch):
            await index.upsert(entries[start:start + args.batch],
                               vectors[start:start + args.batch])
        batch_rate = args.n / (time.perf_counter() - t0)
        single: list[float] = []
        for i in range(min(200, args.n)):
            extra = Entry(f"s{i}", f"user-{i % args.users}", args.n + i, "user", "")
            t = time.perf_counter()
            await index.upsert([extra], [unit(rng, args.dim)])
            single.append(time.perf_counter() - t)
        queries: list[float] = []
        misses = 0
        for _ in range(args.queries):
            i = rng.randrange(args.n)
            t = time.perf_counter()
            hits = await index.query(entries[i].user_id, vectors[i], 10)
            queries.append(time.perf_counter() - t)
            misses += bool(not hits or hits[0] != entries[i].id)
        ids_t: list[float] = []
        for u in range(min(args.users, 50)):
            t = time.perf_counter()
            await index.ids(f"user-{u}")
            ids_t.append(time.perf_counter() - t)
        return {"batch/s": batch_rate, "single p50": ms(single, 50), "query p50": ms(queries, 50),
                "query p95": ms(queries, 95), "ids p50": ms(ids_t, 50), "misses": misses}
    finally:
        await index.aclose()
        await cleanup()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", nargs="*", default=None, help="backend names to run")
    args = parser.parse_args()
    print(f"n={args.n} users={args.users} batch={args.batch} queries={args.queries} "
          f"dim={args.dim} k=10 seed={args.seed}")
    header = ("backend", "upsert vec/s", "1-upsert p50 ms", "query p50 ms", "query p95 ms",
              "ids p50 ms", "top1 misses")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    with EmbeddedProvider() as provider:
        for name, opener in BACKENDS.items():
            if args.only and name not in args.only:
                continue
            r = await bench(name, opener, provider, args)
            print(f"| {name} | {r['batch/s']:.0f} | {r['single p50']:.2f} | "
                  f"{r['query p50']:.2f} | {r['query p95']:.2f} | {r['ids p50']:.2f} | "
                  f"{r['misses']:.0f}/{args.queries} |", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
