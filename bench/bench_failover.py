"""Failovers of the embedded topologies: how long each takes, and what was acknowledged.

    python bench/bench_failover.py [--failovers N] [--engines KIND,...]

For each topology (default: ``postgres-ha``, ``postgres-ha-async``, ``redis-sentinel``,
``valkey-sentinel``), N times: one acknowledged write through the topology's one URL
(an INSERT through the multi-host PostgreSQL URL, a SET through ``redis+sentinel://``),
then a failover by the provider. PostgreSQL: SIGKILL of the primary, promotion of the
standby, pg_rewind and restart of the old primary as its standby. Sentinel: SIGKILL
of the primary, promotion by the Sentinels, restart of the old primary as a replica.
Prints, per topology, the time to promotion and to a rejoined member (p50 and max),
and how many acknowledged writes are gone. Redis replication is asynchronous: a quiet
failover loses nothing, and ``tests/test_sentinel.py`` shows what a store must do when
one does. Not a test: it prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
from collections.abc import Callable

import psycopg

from nomnesia.adapters.engines import EmbeddedProvider
from nomnesia.adapters.resp import resp_client

ENGINES = ("postgres-ha", "postgres-ha-async", "redis-sentinel", "valkey-sentinel")


def _postgres(url: str) -> tuple[Callable[[int], None], Callable[[], set[int]]]:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE acknowledged (x int)")

    def write(i: int) -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("INSERT INTO acknowledged VALUES (%s)", (i,))

    def kept() -> set[int]:
        with psycopg.connect(url, autocommit=True) as conn:
            return {r[0] for r in conn.execute("SELECT x FROM acknowledged")}

    return write, kept


def _sentinel(url: str) -> tuple[Callable[[int], None], Callable[[], set[int]]]:
    async def call(command: str, *args: object) -> object:
        client = resp_client(url, timeout=5.0)
        try:
            for _ in range(50):  # bounded: the first calls may meet the dead primary
                try:
                    return await client.redis.execute_command(command, *args)
                except Exception:
                    await asyncio.sleep(0.1)
            return await client.redis.execute_command(command, *args)
        finally:
            await client.aclose()

    def write(i: int) -> None:
        asyncio.run(call("SADD", "acknowledged", i))

    def kept() -> set[int]:
        members = asyncio.run(call("SMEMBERS", "acknowledged"))
        return {int(m) for m in members}  # type: ignore[attr-defined]

    return write, kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--failovers", type=int, default=10)
    parser.add_argument("--engines", default=",".join(ENGINES))
    args = parser.parse_args()
    provider = EmbeddedProvider()
    try:
        for engine in args.engines.split(","):
            url = provider.url(engine)
            write, kept = (_postgres if engine.startswith("postgres") else _sentinel)(url)
            promoted, rejoined = [], []
            for i in range(args.failovers):
                write(i)
                figures = provider.failover(engine)
                promoted.append(figures["promoted_s"])
                rejoined.append(figures["rejoined_s"])
            lost = sorted(set(range(args.failovers)) - kept())
            print(f"{engine}: {args.failovers} failovers; promoted p50 "
                  f"{statistics.median(promoted):.3f} s, max {max(promoted):.3f} s; "
                  f"rejoined p50 {statistics.median(rejoined):.3f} s, max {max(rejoined):.3f} s;"
                  f" acknowledged writes lost: {len(lost)} {lost if lost else ''}", flush=True)
    finally:
        provider.close()


if __name__ == "__main__":
    main()
