"""The PostgreSQL archive, the pgvector index and the pgvector stack, on the real engine.

What only a real PostgreSQL can show: NUL and hostile ids as bound data, the
per-user row lock, a query stuck behind a lock timing out with the backend
named, and a stack that leaves no schema and no key behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest
import redis.asyncio as aioredis

from nomnesia.adapters import open_store
from nomnesia.adapters.indexes.pgvector import PgVectorIndex
from nomnesia.adapters.postgres import PostgresArchive, create_pool, drop_schema
from nomnesia.adapters.stacks import open_engine_stack
from nomnesia.adapters.text import HashingEmbedder
from nomnesia.adapters.tiers import StalePrefix
from nomnesia.suite.contract import SUMMARY_ROLE, Entry
from nomnesia.suite.contract.errors import BackendTimeout, BackendUnavailable

open_pgvector = functools.partial(open_engine_stack, "pgvector")

HOSTILE = ["x'; DROP TABLE entries; --", "%s", "a\\b", "*", "{u}", "ann", "anna", "🙂 \n\t"]


@pytest.fixture
async def tiers(engines: Any) -> AsyncIterator[tuple[PostgresArchive, PgVectorIndex]]:
    pool = await create_pool(engines.url("postgres"))
    schema = f"nm_{secrets.token_hex(8)}"
    archive, index = PostgresArchive(pool, schema), PgVectorIndex(pool, namespace=schema, dim=16)
    await archive.create()
    await index.create()
    try:
        yield archive, index
    finally:
        await drop_schema(pool, schema)
        await pool.close()


async def test_archive_round_trips_nul_and_hostile_ids(
        tiers: tuple[PostgresArchive, PgVectorIndex]) -> None:
    archive, _ = tiers
    for user in HOSTILE:
        entry, outbox = await archive.append(user, f"id\x00{user}", "user", f"c\x00{user}")
        assert outbox is not None and entry.seq == 1
    for user in HOSTILE:
        (entry,) = await archive.live(user)
        assert (entry.id, entry.content, entry.user_id) == (f"id\x00{user}", f"c\x00{user}", user)
    again, outbox = await archive.append("ann", "id\x00ann", "user", "c\x00ann")
    assert outbox is None and again.seq == 1
    with pytest.raises(ValueError):
        await archive.append("ann", "id\x00ann", "user", "different")
    assert len(await archive.live("ann")) == 1


async def test_compaction_checks_the_live_prefix(
        tiers: tuple[PostgresArchive, PgVectorIndex]) -> None:
    archive, _ = tiers
    entries = [(await archive.append("u", f"m{i}", "user", f"c{i}"))[0] for i in range(4)]
    summary = Entry("summary-1", "u", entries[1].seq, SUMMARY_ROLE, "s", ("m0", "m1"))
    await archive.commit_compaction("u", entries[:2], summary)
    with pytest.raises(StalePrefix):  # same prefix again: no longer live
        await archive.commit_compaction("u", entries[:2], summary)
    assert [e.id for e in await archive.live("u")] == ["summary-1", "m2", "m3"]
    assert [e.id for e in await archive.tail("u", 2)] == ["m2", "m3"]
    among = await archive.live_among("u", ["m0", "m3"], "c2")
    assert sorted(e.id for e in among) == ["m2", "m3"]  # m0 is covered
    with pytest.raises(ValueError):
        await archive.append("u", "summary-1", "user", "x")


async def test_forget_keeps_nothing_and_pending_is_per_user(
        tiers: tuple[PostgresArchive, PgVectorIndex]) -> None:
    archive, _ = tiers
    _, ob1 = await archive.append("ann", "a", "user", "x")
    _, ob2 = await archive.append("bob", "b", "user", "y")
    assert [u for _, u in await archive.pending("ann")] == ["ann"]
    ob = await archive.forget("ann")
    assert await archive.pending("ann") == [(ob, "ann")]
    await archive.clear([ob])
    assert await archive.pending("ann") == [] and await archive.live("ann") == []
    assert ob1 is not None and ob2 is not None
    await archive.clear([ob2], lazy=True)  # folded into the next write
    await archive.append("bob", "c", "user", "z")
    assert (ob2, "bob") not in await archive.pending()


async def test_pgvector_index_is_exact_and_per_user(
        tiers: tuple[PostgresArchive, PgVectorIndex]) -> None:
    _, index = tiers
    embed = HashingEmbedder(16)
    texts = [f"text {i}" for i in range(10)]
    for user in ("ann", "anna"):
        entries = [Entry(f"{user}{i}", user, i, "user", t) for i, t in enumerate(texts)]
        await index.upsert(entries, embed.embed(texts))
        await index.upsert(entries[:2], embed.embed(texts[:2]))  # idempotent
    assert (await index.query("ann", embed.embed_one("text 7"), 3))[0] == "ann7"
    assert all(i.startswith("ann") and not i.startswith("anna")
               for i in await index.query("ann", embed.embed_one("text 7"), 20))
    await index.delete("ann", ["ann7", "nope"])
    assert "ann7" not in await index.ids("ann") and len(await index.ids("anna")) == 10
    await index.delete_user("ann")
    assert await index.ids("ann") == set() and len(await index.ids("anna")) == 10


async def test_stack_leaves_no_schema_and_no_key(engines: Any) -> None:
    async with open_store("pgvector", provider=engines) as store:
        namespace = store.archive._schema  # type: ignore[attr-defined]
        await store.append_message("ann", "user", "x")
        await store.compact("ann")
    with psycopg.connect(engines.url("postgres")) as conn:
        rows = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (namespace,))
        assert rows.fetchall() == []
    client = aioredis.Redis.from_url(engines.url("redis"))
    try:
        assert [k async for k in client.scan_iter(match=f"{namespace}:*")] == []
    finally:
        await client.aclose()


async def test_a_backend_stuck_behind_a_lock_times_out_naming_postgres(engines: Any) -> None:
    async with open_pgvector(provider=engines, timeout=0.5) as store:
        await store.append_message("ann", "user", "first")
        schema = store.archive._schema  # type: ignore[attr-defined]
        async with await psycopg.AsyncConnection.connect(engines.url("postgres")) as blocker:
            await blocker.execute(f"SELECT 1 FROM {schema}.users WHERE uid = %s FOR UPDATE",
                                  ("ann",))  # holds the user's row in an open transaction
            started = time.monotonic()
            with pytest.raises(BackendTimeout, match="'postgres'"):
                await store.append_message("ann", "user", "second", message_id="second")
            assert time.monotonic() - started < 3
            await blocker.rollback()
        await store.recover()
        history = await store.get_history("ann")
        assert history[0].content == "first"
        assert len([e for e in history if e.id == "second"]) <= 1  # once or not at all
        assert await store.consistent_state("ann")
        again = await store.append_message("ann", "user", "second", message_id="second")
        assert [e.id for e in await store.get_history("ann")][-1] == again.id


async def test_a_redis_that_is_down_is_named(engines: Any) -> None:
    from nomnesia.adapters.redis_log import RedisLog

    async with open_pgvector(provider=engines, timeout=0.5) as store:
        real = store.log
        store.log = RedisLog("redis://127.0.0.1:9/0", "nm_down", timeout=0.5)
        try:
            started = time.monotonic()
            with pytest.raises(BackendUnavailable, match="'redis'"):
                await store.append_message("ann", "user", "x", message_id="x")
            assert time.monotonic() - started < 3
        finally:
            await store.log.aclose()
            store.log = real
        await store.recover()
        assert [e.id for e in await store.get_history("ann")] == ["x"]
        assert await store.consistent_state("ann")


async def test_concurrent_users_on_real_engines(engines: Any) -> None:
    async with open_pgvector(provider=engines, keep_last=3) as store:
        async def user(n: int) -> list[str]:
            ids = []
            for i in range(15):
                ids.append((await store.append_message(f"user {n}", "user", f"m{i}")).id)
                if i % 5 == 4:
                    await store.compact(f"user {n}")
            return ids

        results = await asyncio.gather(*(user(n) for n in range(8)))
        for n, ids in enumerate(results):
            accounted: list[str] = []
            for e in await store.get_history(f"user {n}", 100):
                accounted.extend(e.covers if e.role == SUMMARY_ROLE else (e.id,))
            assert accounted == ids
            assert await store.consistent_state(f"user {n}")


async def test_a_named_namespace_reopens_and_finishes_a_crashed_write(engines: Any) -> None:
    from nomnesia.adapters.redis_log import drop_namespace
    from nomnesia.suite.contract.failpoints import Action, armed

    namespace = f"nm_{secrets.token_hex(8)}"
    try:
        async with open_pgvector(provider=engines, namespace=namespace) as store:
            kept = await store.append_message("ann", "user", "kept")
            with armed("tiered.append.after_archive", Action.cancel()):
                task = asyncio.create_task(
                    store.append_message("ann", "user", "half", message_id="half"))
                await asyncio.gather(task, return_exceptions=True)
        async with open_pgvector(provider=engines, namespace=namespace) as store:
            assert await store.consistent_state("ann")  # recover ran on open
            assert [e.id for e in await store.get_history("ann")] == [kept.id, "half"]
            assert (await store.search("ann", "half", 1))[0].id == "half"
    finally:
        pool = await create_pool(engines.url("postgres"))
        await drop_schema(pool, namespace)
        await pool.close()
        await drop_namespace(engines.url("redis"), namespace)


async def test_broken_connections_cost_one_failed_operation_not_one_each(engines: Any) -> None:
    """A restarted server breaks every pooled connection: the pool must drop them together."""
    async with open_pgvector(provider=engines, pool_size=4) as store:
        namespace = store.archive._schema  # type: ignore[attr-defined]
        await asyncio.gather(*(store.append_message(f"u{i}", "user", "warm") for i in range(8)))
        async with await psycopg.AsyncConnection.connect(engines.url("postgres"),
                                                         autocommit=True) as admin:
            await admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                "WHERE application_name = %s", (namespace,))
        failures, acked = 0, []
        for i in range(8):
            try:
                acked.append((await store.append_message("ann", "user", f"after {i}",
                                                         message_id=f"a{i}")).id)
            except BackendUnavailable as exc:
                assert "postgres" in str(exc)
                failures += 1
        assert failures <= 1
        await store.recover()
        assert await store.consistent_state("ann")
        ids = [e.id for e in await store.get_history("ann", 20)]
        assert [i for i in ids if i in acked] == acked


def _children() -> set[int]:
    """Pids of this process's direct children (engines started by a provider)."""
    import os
    from pathlib import Path

    found = set()
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines()
                          if ":\t" in line)
        except OSError:
            continue
        if fields.get("PPid", "").strip() == str(os.getpid()):
            found.add(int(status.parent.name))
    return found


async def test_without_a_provider_the_stack_starts_and_stops_its_own_engines(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOMNESIA_BACKENDS", "embedded")
    before = _children()
    async with open_store("pgvector") as store:
        assert _children() - before, "expected embedded engines started by the stack"
        await store.append_message("ann", "user", "x")
        assert [e.content for e in await store.get_history("ann")] == ["x"]
    assert _children() - before == set()


async def test_a_redis_restarted_empty_is_detected_and_rebuilt(engines: Any) -> None:
    """What the nemesis's kill:redis does: the log forgets everything, the archive does not."""
    from nomnesia.adapters.redis_log import drop_namespace

    async with open_pgvector(provider=engines) as store:
        ann = [await store.append_message("ann", "user", f"m{i}") for i in range(5)]
        await store.compact("ann")
        history = await store.get_history("ann")
        await drop_namespace(engines.url("redis"), store.archive._schema)  # type: ignore[attr-defined]
        await store.append_message("bob", "user", "after")
        assert await store.get_history("ann") == history
        assert not await store.consistent_state("ann")
        await store.recover()
        assert await store.consistent_state("ann") and await store.consistent_state("bob")
        assert await store.get_history("ann") == history
        assert await store.log.tail("ann", 10) == history
        # Rebuilt from the archive, every acknowledged append is accounted for (G1): live,
        # or covered by the summary, and nothing else is.
        accounted = [c for e in history for c in e.covers] + [e.id for e in history
                                                               if e.role != SUMMARY_ROLE]
        assert sorted(accounted) == sorted(e.id for e in ann)


async def test_answers_soon_after_a_network_partition_heals(engines: Any) -> None:
    """The pool backs off 1, 2, 4 s between reconnects; the store must not wait for it."""
    from urllib.parse import urlsplit

    from nomnesia.adapters.engines.proxy import Proxy
    from nomnesia.adapters.engines.toxics import make
    from nomnesia.adapters.memory_tiers import InMemoryIndex, InMemoryLog
    from nomnesia.adapters.tiered import TieredMemoryStore

    real = engines.url("postgres")
    target = urlsplit(real)
    proxy = await Proxy.start(target.hostname or "127.0.0.1", target.port or 5432, "postgres")
    pool = await create_pool(proxy.url_for(real), max_size=4, timeout=1.0)
    schema = f"nm_{secrets.token_hex(8)}"
    archive = PostgresArchive(pool, schema)
    await archive.create()
    try:
        async with TieredMemoryStore(log=InMemoryLog(), index=InMemoryIndex(), archive=archive,
                                     timeout=1.0) as store:
            await store.append_message("ann", "user", "before")
            proxy.set_toxic(make("stall"))
            for i in range(3):  # fail while partitioned, and let the pool start backing off
                started = time.monotonic()
                with pytest.raises(BackendUnavailable, match="postgres"):
                    await store.append_message("ann", "user", f"during {i}")
                # G12: bounded by the timeout, although psycopg waits for a server-side
                # cancel after a cancelled query (the store abandons that call instead)
                assert time.monotonic() - started < 1.5
            proxy.set_toxic(make("refuse"))  # the old connections die, as a partition ends
            proxy.set_toxic(None)
            healed = time.monotonic()
            while True:
                try:
                    await store.append_message("ann", "user", "after")
                    break
                except BackendUnavailable:
                    assert time.monotonic() - healed < 10, "never answered again"
            assert time.monotonic() - healed < 2.5
            await store.recover()
            assert await store.consistent_state("ann")
    finally:
        await drop_schema(pool, schema)
        await pool.close()
        await proxy.aclose()


async def test_acknowledged_appends_survive_a_sigkill_of_postgres() -> None:
    """What the nemesis's kill:postgres does: every append that returned is in the archive.

    With ``synchronous_commit=off`` COMMIT returns before its WAL is written, and
    a SIGKILL right after lost acknowledged appends (80 in 20 kills). The kill
    comes straight after the last append, with no pause for the WAL writer.
    """
    from nomnesia.adapters.engines import EmbeddedProvider
    from nomnesia.adapters.engines.control import EngineControl

    provider = EmbeddedProvider()  # private: the shared engines must not be killed
    control = EngineControl(provider)
    namespace = f"nm_{secrets.token_hex(8)}"
    try:
        for round_ in range(3):
            async with open_pgvector(provider=provider, namespace=namespace) as store:
                acked = [(await store.append_message("ann", "user", f"r{round_} m{i}")).id
                         for i in range(30)]
                await asyncio.to_thread(control.kill, "postgres")
                await asyncio.to_thread(control.start, "postgres")
                with contextlib.suppress(BackendUnavailable):
                    await store.append_message("bob", "user", "wakes the pool up")
            async with open_pgvector(provider=provider, namespace=namespace) as store:
                archived = {e.id for e in await store.archive.tail("ann", 1000)}
                assert set(acked) <= archived, sorted(set(acked) - archived)
                assert await store.consistent_state("ann")
    finally:
        await asyncio.to_thread(control.close)
        await asyncio.to_thread(provider.close)


async def test_the_archive_asks_for_synchronous_commit_itself(engines: Any) -> None:
    """A server configured with synchronous_commit=off must not lose our acknowledged appends."""
    pool = await create_pool(engines.url("postgres"))
    try:
        async with pool.connection() as conn:
            row = await (await conn.execute("SHOW synchronous_commit")).fetchone()
        assert row is not None and row[0] == "on"
    finally:
        await pool.close()


async def test_open_store_starts_the_backends_it_is_told() -> None:
    before = _children()
    async with open_store("pgvector", backends="embedded") as store:
        assert _children() - before, "expected embedded engines started by the stack"
        await store.append_message("ann", "user", "x")
        assert [e.content for e in await store.get_history("ann")] == ["x"]
    assert _children() - before == set()


async def test_external_backends_without_urls_name_the_variable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("NOMNESIA_POSTGRES_URL", "NOMNESIA_REDIS_URL"):
        monkeypatch.delenv(variable, raising=False)
    with pytest.raises(BackendUnavailable) as caught:
        async with open_store("pgvector", backends="external"):
            pass
    assert "NOMNESIA_POSTGRES_URL" in str(caught.value) or "NOMNESIA_REDIS_URL" in str(
        caught.value)
