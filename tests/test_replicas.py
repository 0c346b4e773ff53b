"""Replicas: two TieredMemoryStores on one namespace, as two app processes would run them.

Each replica has its own connection pools and clients, so every cross-replica
interaction goes through the engines, exactly as between processes. The recorded
workload sends each call to a replica at random, and the checker judges the
merged history. ``shared=False`` is the positive control: the same workload
must catch the G5/G7 breakage that motivated ``shared=True``.
"""

from __future__ import annotations

import asyncio
import random
import secrets
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from functools import partial
from typing import Any

import psycopg
import pytest

from nomnesia.adapters import open_store
from nomnesia.adapters.engines import EmbeddedProvider
from nomnesia.adapters.memory_tiers import InMemoryArchive, InMemoryIndex, InMemoryLog
from nomnesia.adapters.stacks import drop_kept_namespace, open_engine_stack
from nomnesia.adapters.tiered import TieredMemoryStore
from nomnesia.suite.core.workload import Mix, Outcome, Workload, resolve_seed, run
from nomnesia.suite.standard import MemoryStoreSuite

open_pgvector = partial(open_engine_stack, "pgvector")
open_valkey = partial(open_engine_stack, "valkey")
USERS = ("ann", "bob", "o'b \"q\" {x}:%\\ 🙂")
# Two users and many compactions: replicas collide on the same user all the time.
CONTENTIOUS = Mix(append=0.4, read=0.26, search=0.08, compact=0.24, forget=0.02)


class Replicas:
    """One store interface over several replicas: each call goes to one at random."""

    def __init__(self, replicas: list[TieredMemoryStore], seed: int) -> None:
        self.replicas = replicas
        self.rng = random.Random(seed)
        self.keep_last = replicas[0].keep_last
        self.search_staleness = replicas[0].search_staleness

    def __getattr__(self, name: str) -> Any:
        return getattr(self.rng.choice(self.replicas), name)


@asynccontextmanager
async def replicas(opener: Callable[..., AbstractAsyncContextManager[TieredMemoryStore]],
                   engines: EmbeddedProvider, *, shared: bool,
                   count: int = 2) -> AsyncIterator[list[TieredMemoryStore]]:
    namespace = f"nm_{secrets.token_hex(8)}"
    try:
        async with AsyncExitStack() as stack:
            yield [await stack.enter_async_context(
                opener(provider=engines, namespace=namespace, shared=shared))
                for _ in range(count)]
    finally:  # a store given its namespace keeps the data on exit
        urls = await asyncio.to_thread(engines.urls, "postgres", "redis", "valkey")
        await drop_kept_namespace(urls, namespace)


async def _rounds(opener: Callable[..., AbstractAsyncContextManager[TieredMemoryStore]],
                  engines: EmbeddedProvider, *, shared: bool, rounds: int,
                  contentious: bool = False) -> list[Outcome]:
    seed = resolve_seed()
    print(f"replicas seed {seed} (replay with NOMNESIA_SEED={seed})")
    outcomes = []
    for r in range(rounds):
        async with replicas(opener, engines, shared=shared) as stores:
            workload = Workload(seed=seed + r, ops=500, processes=8, users=USERS[:2] if
                                contentious else USERS, mix=CONTENTIOUS if contentious else Mix())
            outcome = await run(Replicas(stores, seed + r), workload)
        outcome.round = r
        outcomes.append(outcome)
        if not outcome:
            break
    return outcomes


@pytest.mark.slow  # four workload rounds on two replicas: nox -s slow
@pytest.mark.parametrize("opener", [open_pgvector, open_valkey], ids=["pgvector", "valkey"])
async def test_shared_replicas_keep_every_guarantee(
        opener: Callable[..., AbstractAsyncContextManager[TieredMemoryStore]],
        engines: EmbeddedProvider) -> None:
    outcomes = await _rounds(opener, engines, shared=True, rounds=2)
    outcomes += await _rounds(opener, engines, shared=True, rounds=2, contentious=True)
    failed = [o for o in outcomes if not o]
    assert not failed, f"{failed[0].guarantee}: {failed[0].detail()}"


@pytest.mark.slow  # up to 30 workload rounds: nox -s slow
async def test_unshared_replicas_are_caught(engines: EmbeddedProvider) -> None:
    """The positive control: without ``shared`` the workload must find the breakage."""
    outcomes = await _rounds(open_pgvector, engines, shared=False, rounds=30, contentious=True)
    print(f"caught in round {len(outcomes)}: {outcomes[-1].guarantee}")
    assert not outcomes[-1], (
        f"{len(outcomes)} rounds of unshared replicas and no anomaly: the workload no "
        "longer exercises what shared=True protects")


async def test_shared_needs_tiers_that_can_be_shared() -> None:
    class PlainArchive(InMemoryArchive):
        user_lock = None  # type: ignore[assignment]

    with pytest.raises(ValueError, match="archive is not a SharedArchive"):
        TieredMemoryStore(log=InMemoryLog(), index=InMemoryIndex(), archive=PlainArchive(),
                          shared=True)


async def test_a_write_that_died_elsewhere_is_repaired_by_the_next_writer() -> None:
    """A replica that died mid-append leaves its marker: the other re-syncs before writing."""
    log, index, archive = InMemoryLog(), InMemoryIndex(), InMemoryArchive()
    a = TieredMemoryStore(log=log, index=index, archive=archive, shared=True)
    b = TieredMemoryStore(log=log, index=index, archive=archive, shared=True)
    await a.recover()
    await b.recover()
    # Replica a dies between its archive commit and the log: as a crash leaves it.
    await log.begin_write("ann", "a-died")
    await archive.append("ann", "m1", "user", "hello")
    assert await log.tail_if_idle("ann", 10) is None
    assert [e.id for e in await b.get_history("ann")] == ["m1"]  # read from the archive
    await b.append_message("ann", "user", "again", message_id="m2")
    assert [e.id for e in await log.tail_if_idle("ann", 10) or []] == ["m1", "m2"]
    assert await b.consistent_state("ann")


async def test_the_user_lock_is_exclusive_bounded_and_dies_with_its_session(
        engines: EmbeddedProvider) -> None:
    from nomnesia.adapters.postgres import PostgresArchive, create_pool, drop_schema
    from nomnesia.suite.contract.errors import BackendTimeout

    pool = await create_pool(engines.url("postgres"))
    schema = f"nm_{secrets.token_hex(8)}"
    a, b = PostgresArchive(pool, schema), PostgresArchive(pool, schema)  # two replicas
    try:
        async with a.user_lock("ann", 0.5):
            async with b.user_lock("bob", 0.5):  # another user: no wait
                pass
            started = time.monotonic()
            with pytest.raises(BackendTimeout, match="waiting for the lock of 'ann'"):
                async with b.user_lock("ann", 0.5):
                    pytest.fail("two replicas held ann's lock at once")
            assert time.monotonic() - started < 2.0
        async with b.user_lock("ann", 0.5):  # released on exit
            pass
        # A holder whose session dies (a crashed replica) frees the user at once,
        # though it never left its block.
        entered, release = asyncio.Event(), asyncio.Event()

        async def hold() -> None:
            async with a.user_lock("ann", 5.0):
                entered.set()
                await release.wait()

        holder = asyncio.ensure_future(hold())
        await asyncio.wait_for(entered.wait(), 5)
        async with await psycopg.AsyncConnection.connect(engines.url("postgres"),
                                                         autocommit=True) as admin:
            killed = await (await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' "
                "AND objsubid = 2 AND classid = (hashtext(%s)::bigint & 4294967295)::oid",
                (schema,))).fetchall()
        assert killed == [(True,)]
        async with b.user_lock("ann", 2.0):
            pass
        release.set()
        await asyncio.wait_for(holder, 5)  # its unlock fails quietly: the session is gone
    finally:
        await a.aclose()
        await b.aclose()
        await drop_schema(pool, schema)
        await pool.close()


@pytest.mark.slow  # the whole suite, twice more: nox -s slow (and .ci/run) runs it
class TestSharedPgvectorKeepsTheContract(MemoryStoreSuite):
    """The identical conformance suite on the pgvector stack opened with ``shared=True``.

    It caught what the replica workload did not: a lock wait cut short by a
    cancellation closed the lock connection from outside its statement's task,
    and the next connection given that fd number failed.
    """

    @pytest.fixture
    def store(self, engines: EmbeddedProvider) -> Callable[[], Any]:
        return partial(open_store, "pgvector", provider=engines, shared=True)


@pytest.mark.slow
class TestSharedValkeyKeepsTheContract(MemoryStoreSuite):
    """The same on the valkey stack (the write marker on Valkey's Lua)."""

    @pytest.fixture
    def store(self, engines: EmbeddedProvider) -> Callable[[], Any]:
        return partial(open_store, "valkey", provider=engines, shared=True)


async def test_a_kept_namespace_is_dropped_from_every_engine(engines: EmbeddedProvider) -> None:
    import redis.asyncio as aioredis

    urls = await asyncio.to_thread(engines.urls, "postgres", "redis", "valkey")
    namespace = f"nm_{secrets.token_hex(8)}"
    for opener in (open_pgvector, open_valkey):  # the Redis log, then the Valkey log
        async with opener(provider=engines, namespace=namespace, shared=True) as store:
            await store.append_message("ann", "user", "kept on exit")
    await drop_kept_namespace(urls, namespace)
    async with await psycopg.AsyncConnection.connect(urls["postgres"]) as conn:
        rows = await (await conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s",
                                         (namespace,))).fetchall()
    assert rows == [], "the schema outlived drop_kept_namespace"
    for engine in ("redis", "valkey"):
        client = aioredis.Redis.from_url(urls[engine])
        try:
            left = [key async for key in client.scan_iter(match=f"{namespace}:*")]
        finally:
            await client.aclose()
        assert left == [], f"{engine} kept {left[:3]}"
