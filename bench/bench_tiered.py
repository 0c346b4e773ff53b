"""Benchmark: TieredMemoryStore stacks against the raw engine writes one append needs.

    python bench/bench_tiered.py [--stacks pgvector,qdrant] [--n 300] [--users 8]

One row per registered stack that runs on engines (all of them by default),
on one shared set of embedded engines (or NOMNESIA_BACKENDS). For each stack:
append / get_history / search / compact latency (p50, p99), append throughput
with ``--users`` concurrent users, and the same numbers for the raw writes an
append is made of: a PostgreSQL INSERT (autocommit), a Redis/Valkey RPUSH and
the stack's own VectorIndex.upsert of one entry, with its embedding (of a text
of its own: the embedder caches vectors by text).

An append commits the archive, then writes the log and the index at once
(issue 35.4), so it should cost archive + max(log, index). Each append is timed
interleaved with one of each raw write, and per round ``raw par`` is pg +
max(log, index) (``raw sum`` is pg + log + index, what writing the tiers one
after the other costs); ``ratio`` is the append p50 over the p50 of raw par
(the target is <= 1.05). ``tiers par`` and ``tiers ratio`` do the same with the
store's own tier calls timed directly (its archive transaction with the outbox
row, its log script, its index upsert), so what the store adds around its
tiers shows apart from what its tiers cost beyond a plain INSERT or RPUSH.

Not a test: it prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import secrets
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from redis.asyncio import Redis

from nomnesia.adapters import ADAPTERS, MissingDependency, open_store
from nomnesia.adapters.engines import get_provider
from nomnesia.adapters.postgres import create_pool, drop_schema
from nomnesia.adapters.text import HashingEmbedder
from nomnesia.suite.contract import Entry

Op = Callable[[int], Awaitable[Any]]


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000.0


async def timed(op: Op, n: int) -> list[float]:
    samples = []
    for i in range(n):
        started = time.perf_counter()
        await op(i)
        samples.append(time.perf_counter() - started)
    return samples


async def throughput(op: Callable[[int, int], Awaitable[Any]], users: int, per_user: int) -> float:
    async def run(u: int) -> None:
        for i in range(per_user):
            await op(u, i)

    started = time.perf_counter()
    await asyncio.gather(*(run(u) for u in range(users)))
    return users * per_user / (time.perf_counter() - started)


def content(i: int, who: str = "") -> str:
    """The i-th message; ``who`` makes the texts of the store, the raw writes and the tier
    calls differ, so that none of them finds its vector in the embedder's cache."""
    return (f"message number {i}: the user said something worth remembering about topic "
            f"{i % 17}{who}")


class RawWrites:
    """The engine writes one append is made of, without any of the store's logic."""

    def __init__(self, index: Any, pg_url: str, log_url: str, users: int, tag: str) -> None:
        self.index, self.pg_url, self.log_url, self.users, self.tag = (
            index, pg_url, log_url, users, tag)
        self.embed = HashingEmbedder(index.dim)
        self.schema = f"nm_{secrets.token_hex(8)}"
        self.redis: Redis = Redis.from_url(log_url)

    async def __aenter__(self) -> RawWrites:
        self.pool = await create_pool(self.pg_url, max_size=self.users)
        async with self.pool.connection() as conn:
            await conn.execute(f"CREATE SCHEMA {self.schema}")
            await conn.execute(f"CREATE TABLE {self.schema}.raw (uid text, id bytea, seq bigint, "
                               "role text, content bytea)")
        self.insert = f"INSERT INTO {self.schema}.raw VALUES (%s, %s, %s, %s, %s)"
        return self

    async def __aexit__(self, *exc: object) -> None:
        await drop_schema(self.pool, self.schema)
        await self.pool.close()
        async for key in self.redis.scan_iter(match=f"{self.schema}:*"):
            await self.redis.unlink(key)
        await self.redis.aclose()

    async def pg(self, i: int) -> None:
        async with self.pool.connection() as conn:
            await conn.execute(self.insert, (f"raw{i % self.users}", secrets.token_bytes(16), i,
                                             "user", content(i).encode()))

    async def log(self, i: int) -> None:
        await self.redis.rpush(f"{self.schema}:raw{i % self.users}", content(i))

    async def vector(self, i: int) -> None:
        # Its own text: the embedder caches vectors by text, and a vector the store just
        # computed for content(i) would make this write's embedding free.
        entry = Entry(secrets.token_hex(16), f"raw-{self.tag}", i, "user", content(i, "raw"))
        await self.index.upsert([entry], self.embed.embed([entry.content]))

    async def append(self, u: int, i: int) -> None:
        await self.pg(u * 100_000 + i)
        await self.log(u * 100_000 + i)
        await self.vector(u * 100_000 + i)


class TierWrites:
    """The store's own tier calls for one append, timed one by one, outside the store.

    What the store's append awaits, without its validation, embedding, locks and
    bounds: the archive's transaction (entry, seq and outbox row), the log's
    script and the index's upsert. Written under users of their own (``tier-*``),
    so the store's users never see them; their outbox rows are cleared as the
    store clears its own (lazily, with the next archive call).
    """

    def __init__(self, store: Any, tag: str) -> None:
        self.store, self.tag = store, tag
        self.embed = HashingEmbedder(store.index.dim)

    async def write(self, u: int, i: int) -> tuple[float, float, float]:
        text = content(i, "tier")
        t0 = time.perf_counter()
        entry, outbox = await self.store.archive.append(
            f"tier{u}-{self.tag}", secrets.token_hex(16), "user", text)
        t1 = time.perf_counter()
        await self.store.log.put([entry])
        t2 = time.perf_counter()
        await self.store.index.upsert([entry], self.embed.embed([text]))
        t3 = time.perf_counter()
        if outbox is not None:
            await self.store.archive.clear([outbox], lazy=True)
        return t1 - t0, t2 - t1, t3 - t2


async def convergence(store: Any, n: int, tag: str, bound: float = 10.0) -> list[float]:
    """Seconds from an append's acknowledgement until a search finds that exact content."""
    samples = []
    for i in range(n):
        user, text = f"v{i}-{tag}", f"convergence probe {i} {secrets.token_hex(6)}"
        await store.append_message(user, "user", text)
        started = time.perf_counter()
        while not any(hit.content == text for hit in await store.search(user, text, 5)):
            if time.perf_counter() - started > bound:
                raise TimeoutError(f"{text!r} not searchable after {bound} s")
            await asyncio.sleep(0.001)  # poll interval, bounded above
        samples.append(time.perf_counter() - started)
    return samples


async def bench_stack(name: str, provider: Any, n: int, users: int) -> dict[str, float]:
    """One stack's row; a stack without engines (``memory``) gets no raw baseline."""
    spec = ADAPTERS[name]
    tag = secrets.token_hex(4)
    out: dict[str, float] = {}
    async with contextlib.AsyncExitStack() as stack:
        store = await stack.enter_async_context(open_store(name, provider=provider, keep_last=4))
        raw: RawWrites | None = None
        if spec.engines:
            log_engine = "valkey" if "valkey" in spec.engines else "redis"
            urls = await asyncio.to_thread(provider.urls, "postgres", log_engine)
            raw = await stack.enter_async_context(
                RawWrites(store.index, urls["postgres"], urls[log_engine], users, tag))
        for i in range(20):  # warm up connections and prepared statements
            await store.append_message(f"warm-{tag}", "user", content(i))
            if raw is not None:
                await raw.append(0, i)

        # Interleaved, so that the store and the raw writes see the same machine load.
        lat: dict[str, list[float]] = {k: [] for k in (
            "append", "pg", "log", "index", "sum", "par", "t_archive", "t_log", "t_index",
            "t_par")}
        tiers = TierWrites(store, tag)
        for i in range(n):
            t0 = time.perf_counter()
            await store.append_message(f"u{i % users}-{tag}", "user", content(i, "store"))
            t1 = time.perf_counter()
            lat["append"].append(t1 - t0)
            if raw is None:
                continue
            await raw.pg(i)
            t2 = time.perf_counter()
            await raw.log(i)
            t3 = time.perf_counter()
            await raw.vector(i)
            t4 = time.perf_counter()
            for key, value in (("pg", t2 - t1), ("log", t3 - t2), ("index", t4 - t3),
                               ("sum", t4 - t1), ("par", t2 - t1 + max(t3 - t2, t4 - t3))):
                lat[key].append(value)
            archive, log, index = await tiers.write(i % users, i)
            for key, value in (("t_archive", archive), ("t_log", log), ("t_index", index),
                               ("t_par", archive + max(log, index))):
                lat[key].append(value)
        out["append_p50"], out["append_p99"] = pct(lat["append"], 0.5), pct(lat["append"], 0.99)
        if raw is not None:
            for key in ("pg", "log", "index", "sum", "par"):
                out[f"raw_{key}_p50"] = pct(lat[key], 0.5)
            for key in ("t_archive", "t_log", "t_index", "t_par"):
                out[f"{key}_p50"] = pct(lat[key], 0.5)
            out["ratio"] = out["append_p50"] / out["raw_par_p50"]
            out["sum_ratio"] = out["append_p50"] / out["raw_sum_p50"]
            out["tiers_ratio"] = out["append_p50"] / out["t_par_p50"]

        samples = await timed(lambda i: store.get_history(f"u{i % users}-{tag}", 10), n)
        out["history_p50"], out["history_p99"] = pct(samples, 0.5), pct(samples, 0.99)
        samples = await timed(
            lambda i: store.search(f"u{i % users}-{tag}", content(i, "store"), 5), n)
        out["search_p50"], out["search_p99"] = pct(samples, 0.5), pct(samples, 0.99)
        samples = await convergence(store, max(5, n // 5), tag)
        out["converge_p50"], out["converge_p99"] = pct(samples, 0.5), pct(samples, 0.99)

        compact_lat: list[float] = []
        for i in range(max(10, n // 20)):
            user = f"c{i}-{tag}"
            for j in range(12):
                await store.append_message(user, "user", content(j))
            started = time.perf_counter()
            await store.compact(user)
            compact_lat.append(time.perf_counter() - started)
        out["compact_p50"], out["compact_p99"] = pct(compact_lat, 0.5), pct(compact_lat, 0.99)

        # Throughput: alternate rounds, best of each, for the same reason.
        for label, count in (("1", 1), ("", users)):
            out[f"append{label}_per_s"] = 0.0
            if raw is not None:
                out[f"raw{label}_per_s"] = 0.0
            for round_ in range(2):
                async def append(u: int, i: int, r: int = round_, c: int = count) -> None:
                    await store.append_message(f"t{c}-{u}-{r}-{tag}", "user", content(i))

                out[f"append{label}_per_s"] = max(out[f"append{label}_per_s"], await throughput(
                    append, count, max(1, n // users)))
                if raw is not None:
                    out[f"raw{label}_per_s"] = max(out[f"raw{label}_per_s"], await throughput(
                        raw.append, count, max(1, n // users)))
    return out


COLUMNS = [("append_p50", "append p50"), ("append_p99", "p99"), ("history_p50", "history p50"),
           ("history_p99", "p99"), ("search_p50", "search p50"), ("search_p99", "p99"),
           ("compact_p50", "compact p50"), ("compact_p99", "p99"), ("raw_pg_p50", "raw pg"),
           ("raw_log_p50", "raw log"), ("raw_index_p50", "raw index"),
           ("raw_sum_p50", "raw sum"), ("sum_ratio", "sum ratio"), ("raw_par_p50", "raw par"),
           ("ratio", "ratio"), ("t_archive_p50", "tier arch"), ("t_log_p50", "tier log"),
           ("t_index_p50", "tier index"), ("t_par_p50", "tiers par"),
           ("tiers_ratio", "tiers ratio"), ("append_per_s", "appends/s"),
           ("raw_per_s", "raw/s"), ("append1_per_s", "1-user/s"),
           ("converge_p50", "converge p50"), ("converge_p99", "p99")]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stacks", default="", help="comma-separated; default: every engine stack")
    parser.add_argument("--n", type=int, default=300, help="operations per measurement")
    parser.add_argument("--users", type=int, default=8, help="concurrent users for throughput")
    args = parser.parse_args()
    names = [s for s in args.stacks.split(",") if s] or [
        name for name, spec in ADAPTERS.items() if spec.engines]
    provider = get_provider()
    rows: dict[str, dict[str, float]] = {}
    try:
        for name in names:
            try:
                ADAPTERS[name].load()
                rows[name] = await bench_stack(name, provider, args.n, args.users)
            except (MissingDependency, Exception) as exc:  # one broken stack must not hide the rest
                print(f"{name}: skipped ({type(exc).__name__}: {exc})")
    finally:
        await asyncio.to_thread(provider.close)
    print(f"\nlatency in ms (n={args.n}), throughput with {args.users} concurrent users; "
          "per append, interleaved with the store's: raw sum = p50 of (pg + log + index), "
          "raw par = p50 of (pg + max(log, index)); ratio = append p50 / raw par p50 "
          "(target <= 1.05), sum ratio = append p50 / raw sum p50; tiers par, tiers ratio: "
          "the same with the store's own tier calls (archive transaction, log script, "
          "index upsert) timed directly")
    header = f"{'stack':<12}" + "".join(f"{title:>12}" for _, title in COLUMNS)
    print(header)
    print("-" * len(header))
    for name, row in rows.items():
        cells = "".join(f"{'-':>12}" if key not in row else f"{row[key]:>12.2f}"
                        if not key.endswith("_per_s") else f"{row[key]:>12.0f}"
                        for key, _ in COLUMNS)
        print(f"{name:<12}{cells}")
    par = [(name, row) for name, row in rows.items() if "ratio" in row]
    if par:  # the append-cost target (issue 35.4), apart from the wide table
        print("\nappend vs its writes, p50 ms: archive + max(log, index)")
        print(f"{'stack':<12}{'append':>9}{'pg':>8}{'log':>8}{'index':>8}{'raw par':>9}"
              f"{'ratio':>7}{'tier arch':>10}{'tier log':>9}{'tier idx':>9}{'tiers par':>10}"
              f"{'ratio':>7}")
        for name, row in par:
            print(f"{name:<12}{row['append_p50']:>9.3f}{row['raw_pg_p50']:>8.3f}"
                  f"{row['raw_log_p50']:>8.3f}{row['raw_index_p50']:>8.3f}"
                  f"{row['raw_par_p50']:>9.3f}{row['ratio']:>7.2f}{row['t_archive_p50']:>10.3f}"
                  f"{row['t_log_p50']:>9.3f}{row['t_index_p50']:>9.3f}{row['t_par_p50']:>10.3f}"
                  f"{row['tiers_ratio']:>7.2f}")
    if rows:
        print(f"\n(median of raw p50 sum over stacks: "
              f"{statistics.median(r.get('raw_sum_p50', 0.0) for r in rows.values()):.2f} ms)")


if __name__ == "__main__":
    asyncio.run(main())
