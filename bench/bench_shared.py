"""Benchmark: what ``shared=True`` (replicas in other processes) costs a stack.

    python bench/bench_shared.py [--stacks pgvector,valkey] [--n 400] [--users 8]

For each stack, on one set of embedded engines: append and get_history latency
(p50, p99) of one user, and append throughput with ``--users`` concurrent users,
with ``shared=False`` and ``shared=True``. A shared write adds an advisory-lock
round trip on PostgreSQL and two marker calls on the log; a shared read is the
same one log call as before.

Not a test: it prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import sys
import time
from pathlib import Path
from typing import Any

from nomnesia.adapters import open_store
from nomnesia.adapters.engines import get_provider
from nomnesia.adapters.stacks import drop_kept_namespace

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_tiered import pct, timed


async def measure(stack: str, provider: Any, shared: bool, n: int, users: int) -> dict[str, float]:
    namespace = f"nm_{secrets.token_hex(8)}"
    # namespace= is what replicas pass; the run below drops what it made.
    try:
        async with open_store(stack, provider=provider, namespace=namespace,
                              shared=shared) as store:
            append = await timed(lambda i: store.append_message("u", "user", f"m{i}"), n)
            read = await timed(lambda i: store.get_history("u", 10), n)
            started = time.perf_counter()

            async def writer(u: int) -> None:
                for i in range(n // users):
                    await store.append_message(f"c{u}", "user", f"m{i}")

            await asyncio.gather(*(writer(u) for u in range(users)))
            rate = (n // users) * users / (time.perf_counter() - started)
    finally:
        await drop_kept_namespace(provider.urls("postgres", "redis", "valkey"), namespace)
    return {"append_p50": pct(append, 0.5), "append_p99": pct(append, 0.99),
            "read_p50": pct(read, 0.5), "read_p99": pct(read, 0.99), "rate": rate}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stacks", default="pgvector,valkey")
    parser.add_argument("--n", type=int, default=400)
    parser.add_argument("--users", type=int, default=8)
    args = parser.parse_args()
    provider = get_provider("embedded")
    try:
        print(f"n={args.n}, {args.users} concurrent users for the rate; times in ms")
        print("| stack | shared | append p50 | append p99 | read p50 | read p99 | appends/s |")
        print("|---|---|---|---|---|---|---|")
        for stack in args.stacks.split(","):
            for shared in (False, True):
                r = await measure(stack, provider, shared, args.n, args.users)
                print(f"| {stack} | {shared} | {r['append_p50']:.2f} | {r['append_p99']:.2f} | "
                      f"{r['read_p50']:.2f} | {r['read_p99']:.2f} | {r['rate']:.0f} |",
                      flush=True)
    finally:
        provider.close()


if __name__ == "__main__":
    asyncio.run(main())
