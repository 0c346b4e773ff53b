"""Redis (and Valkey) primary + 2 replicas + 3 Sentinels, embedded (``resp_ha``).

What the topology promises the short-term log, checked on real processes: one
``redis+sentinel://`` URL reaches whichever server is the primary; replication is
asynchronous, so a failover may lose the old primary's last writes; the log
(``RedisLog``) then distrusts itself, because the promoted replica answers with
another replication id, and the store reads the archive until ``recover()``.

Two positive controls, each a log that breaks one rule, are caught by the suite's
checker with the guarantee and the entry ids: a log that keeps trusting itself
after a failover, and a log that reads history from a replica.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator
from typing import Any

import pytest

from nomnesia.adapters.engines import EmbeddedProvider
from nomnesia.adapters.engines.resp_ha import SentinelGroup
from nomnesia.adapters.engines.urls import parse_sentinel_url, sentinel_url
from nomnesia.adapters.redis_log import RedisLog, drop_namespace
from nomnesia.adapters.resp import resp_client
from nomnesia.adapters.tiers import TierLost, new_namespace

# Failovers take seconds each: these run in ``nox -s slow``, the URL parsing in ``tests``.
pytestmark = pytest.mark.xdist_group("redis-sentinel")
slow = pytest.mark.slow


@pytest.fixture
def groups(engines: EmbeddedProvider) -> EmbeddedProvider:
    """This worker's shared engines (conftest's ``engines``), under this module's name."""
    return engines


def _group(provider: EmbeddedProvider, engine: str = "redis-sentinel") -> SentinelGroup:
    provider.url(engine)
    part = provider._parts[engine]
    assert isinstance(part, SentinelGroup)
    return part


def test_a_sentinel_url_names_sentinels_service_and_db() -> None:
    url = sentinel_url([("127.0.0.1", 26379), ("::1", 26380)], "memory", db=3)
    address = parse_sentinel_url(url)
    assert address.sentinels == (("127.0.0.1", 26379), ("::1", 26380))
    assert (address.service, address.db) == ("memory", 3)
    for bad in ("redis://h:1/0", "redis+sentinel://h:1/", "redis+sentinel://h/x",
                "redis+sentinel://h:1/x?db=a"):
        with pytest.raises(ValueError):
            parse_sentinel_url(bad)


@slow
@pytest.mark.parametrize("engine", ["redis-sentinel", "valkey-sentinel"])
async def test_one_url_reaches_the_primary_before_and_after_a_failover(
        groups: EmbeddedProvider, engine: str) -> None:
    url = await asyncio.to_thread(groups.url, engine)
    group = _group(groups, engine)
    client = resp_client(url, timeout=2.0)
    try:
        await client.redis.set("before", "1")
        old = group.primary_url
        figures = await asyncio.to_thread(groups.failover, engine)
        assert group.primary_url != old
        assert 0 < figures["promoted_s"] <= figures["rejoined_s"]
        await _until_ok(lambda: client.redis.set("after", "2"))  # the same URL, new primary
        assert await client.redis.get("after") == b"2"
    finally:
        await client.aclose()
    assert "3 Sentinels" in await asyncio.to_thread(groups.self_check, engine)


@slow
async def test_the_log_distrusts_itself_after_a_failover_until_rebuilt(
        groups: EmbeddedProvider) -> None:
    url = await asyncio.to_thread(groups.url, "redis-sentinel")
    log = RedisLog(url, new_namespace(), timeout=2.0)
    try:
        assert await log.mark_intact(await log.begin_rebuild())
        assert await log.intact()
        await asyncio.to_thread(groups.failover, "redis-sentinel")
        assert not await _until_ok(log.intact)  # a new replication id: not vouched for
        with pytest.raises(TierLost):
            await log.tail("ann", 10)
        assert await log.mark_intact(await log.begin_rebuild())  # what recover() does
        assert await log.intact()
    finally:
        await drop_namespace(url, log.namespace)
        await log.aclose()


@slow
async def test_a_primary_cut_off_from_its_replicas_is_not_trusted(
        groups: EmbeddedProvider) -> None:
    """What an old primary thawed after a freeze looks like while Sentinel has not yet
    demoted it: its replication id unchanged, its replicas gone (they follow the new
    primary). The log vouched for with replicas distrusts it until they are back."""
    url = await asyncio.to_thread(groups.url, "redis-sentinel")
    group = _group(groups)
    await asyncio.to_thread(group._settle, groups)
    log = RedisLog(url, new_namespace(), timeout=2.0)
    try:
        assert await log.mark_intact(await log.begin_rebuild())
        async with _cut_off(group):
            assert not await _until_ok(log.intact)
            with pytest.raises(TierLost):
                await log.tail("ann", 10)
        await _replicated(group)
        assert await log.intact()  # the same history, replicas back: vouched for again
    finally:
        await drop_namespace(url, log.namespace)
        await log.aclose()


@slow
async def test_a_frozen_primary_is_failed_over_and_demoted(groups: EmbeddedProvider) -> None:
    url = await asyncio.to_thread(groups.url, "redis-sentinel")
    group = _group(groups)
    old = group.primary_url
    figures = await asyncio.to_thread(functools.partial(groups.failover, "redis-sentinel",
                                                        freeze=True))
    assert group.primary_url != old and figures["promoted_s"] <= figures["rejoined_s"]
    assert old in group.replica_urls  # thawed, then demoted by the Sentinels
    client = resp_client(url, timeout=2.0)
    try:
        await _until_ok(lambda: client.redis.set("after-freeze", "1"))
    finally:
        await client.aclose()


# -- positive controls ---------------------------------------------------------------

_TRUSTING_TAIL = """
if redis.call('EXISTS', KEYS[2]) == 0 then return false end
if KEYS[3] and redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
return redis.call('ZRANGE', KEYS[1], ARGV[1], -1)
"""


class TrustingLog(RedisLog):
    """Vouches for itself while its marker exists, whatever server answers: the log
    before replication ids, which trusts a promoted replica that lacks writes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._tail = self._redis.register_script(_TRUSTING_TAIL)


class ReplicaReadLog(RedisLog):
    """Reads the tail from a replica (to offload the primary), which may be behind."""

    def __init__(self, url: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(url, *args, **kwargs)
        self._replica = resp_client(url, timeout=2.0, replica=True)
        self._tail = self._replica.redis.register_script(_TRUSTING_TAIL)

    async def aclose(self) -> None:
        await self._replica.aclose()
        await super().aclose()


@contextlib.asynccontextmanager
async def sentinel_store(groups: EmbeddedProvider, log_cls: type[RedisLog], *,
                         timeout: float = 5.0) -> AsyncIterator[Any]:
    """A recorded TieredMemoryStore: archive on PostgreSQL, log ``log_cls`` on the group
    (``tests/test_failover_appends.py`` uses it too)."""
    from nomnesia.adapters.memory_tiers import InMemoryIndex
    from nomnesia.adapters.postgres import PostgresArchive, create_pool, drop_schema
    from nomnesia.adapters.tiered import TieredMemoryStore
    from nomnesia.suite.core.recorder import LoggedStore

    urls = await asyncio.to_thread(groups.urls, "postgres", "redis-sentinel")
    namespace = new_namespace()
    pool = await create_pool(urls["postgres"], max_size=2, timeout=5.0)
    archive = PostgresArchive(pool, namespace)
    await archive.create()
    log = log_cls(urls["redis-sentinel"], namespace, timeout=2.0)
    try:
        async with TieredMemoryStore(log=log, index=InMemoryIndex(), archive=archive,
                                     timeout=timeout) as store:
            yield LoggedStore(store)
    finally:
        await drop_namespace(urls["redis-sentinel"], namespace)
        await drop_schema(pool, namespace)
        await pool.close()


@contextlib.asynccontextmanager
async def _cut_off(group: SentinelGroup) -> AsyncIterator[None]:
    """Both replicas cut off from the primary (``REPLICAOF`` a port where nothing
    listens), as a partition would leave them: still replicas, serving what they had.
    Not SIGSTOP: the primary's stream would wait in their sockets' kernel buffers and
    arrive on SIGCONT. On exit the replicas follow the primary again."""
    await _replicated(group)  # m1 everywhere first
    replicas = [resp_client(u, timeout=2.0) for u in group.replica_urls]
    try:
        for replica in replicas:
            await replica.redis.execute_command("REPLICAOF", "127.0.0.1", "1")
        yield
    finally:
        for replica in replicas:
            with contextlib.suppress(Exception):  # a promoted one is no replica now
                if (await replica.redis.info("replication"))["role"] == "slave":
                    await replica.redis.execute_command(
                        "REPLICAOF", "127.0.0.1", str(group._nodes[0].port))
            await replica.aclose()


async def _lost_write_failover(groups: EmbeddedProvider, store: Any) -> None:
    """Append m1; cut both replicas off; append m2 (the primary acknowledges it alone);
    fail over: the Sentinels promote a replica without m2."""
    group = _group(groups)
    await store.append_message("ann", "user", "m1")
    async with _cut_off(group):
        await store.append_message("ann", "user", "m2")
        await asyncio.to_thread(groups.failover, "redis-sentinel")


async def _history_until_answered(store: Any) -> None:
    """Read until a read answers (the first ones may meet the dead primary's sockets)."""
    for _ in range(20):  # bounded
        with contextlib.suppress(Exception):
            await store.get_history("ann", 10)
            return
    raise AssertionError("get_history never answered after the failover")


def _anomalies(store: Any) -> list[Any]:
    from nomnesia.suite.core.checker import check

    return check(store.log, keep_last=store.inner.keep_last,
                 search_staleness=store.inner.search_staleness)


@slow
async def test_a_store_reads_the_archive_when_a_failover_lost_log_writes(
        groups: EmbeddedProvider) -> None:
    async with sentinel_store(groups, RedisLog) as store:
        await _lost_write_failover(groups, store)
        await _history_until_answered(store)
        assert not _anomalies(store), "\n".join(map(str, _anomalies(store)))
        assert [e.content for e in await store.get_history("ann", 10)] == ["m1", "m2"]


@slow
async def test_control_a_log_trusted_after_a_failover_is_caught(
        groups: EmbeddedProvider) -> None:
    async with sentinel_store(groups, TrustingLog) as store:
        await _lost_write_failover(groups, store)
        await _history_until_answered(store)
        found = _anomalies(store)
        assert found, "the checker missed a history read from a log that lost m2"
        text = str(found[0])
        assert text.startswith(("G1 ", "G3 ")), text
        from nomnesia.suite.core.history import short_id

        m2 = [op.value.id for op in store.log if op.f == "append" and op.type == "ok"][-1]
        assert short_id(m2) in text, text  # the acknowledged append the read missed


@slow
async def test_control_history_read_from_a_replica_is_caught(
        groups: EmbeddedProvider) -> None:
    """The replicas are cut off from the primary; the primary acknowledges m2; a
    history read from a replica misses it, and once they follow the primary again a
    read returns it: not lost, a stale read, reported as G3."""
    group = _group(groups)
    async with sentinel_store(groups, ReplicaReadLog) as store:
        await store.append_message("ann", "user", "m1")
        async with _cut_off(group):
            await store.append_message("ann", "user", "m2")
            await store.get_history("ann", 10)
        await _replicated(group)
        await store.get_history("ann", 10)
        found = _anomalies(store)
        assert found and str(found[0]).startswith("G3 "), "\n".join(map(str, found))
        from nomnesia.suite.core.history import short_id

        m2 = [op.value.id for op in store.log if op.f == "append" and op.type == "ok"][-1]
        assert short_id(m2) in str(found[0]), str(found[0])
    await asyncio.to_thread(group._settle, groups)


async def _until(condition: Any, within: float = 30.0) -> None:
    from nomnesia.suite.core.loop import wait_until

    async def probe() -> bool:
        return bool(condition())

    done, _ = await wait_until(probe, bool, within=within)
    assert done, f"not true within {within:g}s"


async def _until_ok(call: Any, within: float = 30.0) -> Any:
    """``await call()`` until it stops raising (a client meeting a dead primary's
    socket reconnects through the Sentinels on the next call); bounded."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        try:
            return await call()
        except Exception:
            if loop.time() > deadline:
                raise
            await asyncio.sleep(0.05)


async def _replicated(group: SentinelGroup) -> None:
    """Until every replica acknowledged the primary's writes so far (bounded: 10 s)."""
    primary = resp_client(group.primary_url, timeout=12.0)
    try:
        replicas = len(group.replica_urls)
        assert await primary.redis.wait(replicas, 10_000) == replicas
    finally:
        await primary.aclose()
