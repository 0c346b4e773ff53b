"""The Redis/Valkey short-term log on the real servers: ids as data, atomic writes, cleanup."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as aioredis

from nomnesia.adapters.engines import EmbeddedProvider
from nomnesia.adapters.redis_log import RedisLog, drop_namespace
from nomnesia.adapters.resp import resp_client
from nomnesia.adapters.tiers import TierLost
from nomnesia.suite.contract import SUMMARY_ROLE, Entry

HOSTILE = ["*", "ann", "anna", "a:b", "{tag}", "x\\y", "🙂\n", "?", "[a-z]"]


@pytest.fixture(params=["redis", "valkey", pytest.param(
    "redis-cluster", marks=pytest.mark.xdist_group("redis-cluster"))])
async def log(request: pytest.FixtureRequest, engines: Any) -> AsyncIterator[RedisLog]:
    """The log on one server, and on a Redis Cluster (its keys bucketed per slot)."""
    url = engines.url(request.param)
    namespace = f"nm_{secrets.token_hex(8)}"
    log = RedisLog(url, namespace, name=request.param)
    assert await log.mark_intact(await log.begin_rebuild())
    try:
        yield log
    finally:
        await log.aclose()
        await drop_namespace(url, namespace)
        client = resp_client(url, timeout=5.0)  # a cluster's scan covers every primary
        try:
            assert [k async for k in client.redis.scan_iter(match=f"{namespace}:*")] == []
        finally:
            await client.aclose()


def _entries(user: str, n: int) -> list[Entry]:
    return [Entry(f"id{i}\x00", user, i + 1, "user", f"content {i}\x00 ✓") for i in range(n)]


async def test_put_is_idempotent_and_tail_is_ordered(log: RedisLog) -> None:
    entries = _entries("ann", 6)
    await log.put(list(reversed(entries)))
    await log.put(entries[2:4])
    assert await log.tail("ann", 3) == entries[3:]
    assert await log.tail("ann", 100) == entries
    assert await log.ids("ann") == {e.id for e in entries}


async def test_remove_and_summary_round_trip(log: RedisLog) -> None:
    entries = _entries("ann", 4)
    await log.put(entries)
    summary = Entry("s", "ann", 2, SUMMARY_ROLE, "sum", ("id0\x00", "id1\x00"))
    await log.put([summary])
    await log.remove("ann", ["id0\x00", "id1\x00", "absent"])
    assert await log.tail("ann", 10) == [summary, *entries[2:]]


async def test_hostile_user_ids_never_see_each_other(log: RedisLog) -> None:
    for user in HOSTILE:
        await log.put([Entry("e", user, 1, "user", user)])
    for user in HOSTILE:
        assert [e.content for e in await log.tail(user, 10)] == [user]
    await log.delete_user("*")
    assert await log.tail("*", 10) == []
    for user in HOSTILE[1:]:
        assert await log.tail(user, 10), user


async def test_readers_never_see_half_a_write(log: RedisLog) -> None:
    """A compaction's put and remove are two scripts; each is atomic on its own."""
    big = [Entry(f"m{i}", "ann", i + 1, "user", "x" * 1000) for i in range(200)]
    seen: list[int] = []

    async def reader() -> None:
        for _ in range(50):
            seen.append(len(await log.tail("ann", 1000)))

    await asyncio.gather(log.put(big), reader())
    assert set(seen) <= {0, 200}


async def test_a_log_that_lost_its_data_says_so(log: RedisLog, engines: Any) -> None:
    await log.put(_entries("ann", 3))
    assert await log.intact()
    await drop_namespace(engines.url(log.name), log.namespace)  # what a restart without disk does
    await log.put(_entries("ann", 1))  # a write after the loss must not make it look whole
    with pytest.raises(TierLost):
        await log.tail("ann", 10)
    token = await log.begin_rebuild()
    stale = await log.begin_rebuild()
    assert not await log.mark_intact(token)  # a newer rebuild started: only it may vouch
    await log.put(_entries("ann", 3))
    assert await log.mark_intact(stale)
    assert await log.tail("ann", 10) == _entries("ann", 3)


async def _new_replication_id(url: str) -> None:
    """What a failover does to the server the log reaches, short of losing a key: a
    replica promoted in it takes a new replication id. ``REPLICAOF`` a port nothing
    listens on, then ``NO ONE``: the server keeps every key and takes a new id."""
    client = aioredis.Redis.from_url(url)
    try:
        before = (await client.info("replication"))["master_replid"]
        await client.execute_command("REPLICAOF", "127.0.0.1", "1")  # type: ignore[no-untyped-call]
        await client.execute_command("REPLICAOF", "NO", "ONE")  # type: ignore[no-untyped-call]
        assert (await client.info("replication"))["master_replid"] != before
    finally:
        await client.aclose()


@pytest.mark.parametrize("engine", ["redis", "valkey"])
async def test_a_new_replication_id_is_distrusted_and_spoils_a_rebuild(engine: str) -> None:
    """A log cannot tell whether the replica a failover promoted had its last writes:
    it distrusts itself, and a rebuild that began before the failover is not vouched
    for after it (the promoted replica has its token, but maybe not its last puts).
    On a server of its own: the new id makes every log on the server distrust itself."""
    provider = EmbeddedProvider()
    try:
        url = await asyncio.to_thread(provider.url, engine)
        log = RedisLog(url, f"nm_{secrets.token_hex(8)}", name=engine)
        try:
            assert await log.mark_intact(await log.begin_rebuild())
            await log.put(_entries("ann", 3))
            assert await log.tail("ann", 10) == _entries("ann", 3)
            spanning = await log.begin_rebuild()
            await _new_replication_id(url)
            assert not await log.intact()
            with pytest.raises(TierLost):
                await log.tail("ann", 10)
            assert not await log.mark_intact(spanning)
            with pytest.raises(TierLost):
                await log.tail("ann", 10)
            assert await log.mark_intact(await log.begin_rebuild())
            assert await log.tail("ann", 10) == _entries("ann", 3)
        finally:
            await log.aclose()
    finally:
        await asyncio.to_thread(provider.close)
