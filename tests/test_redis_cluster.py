"""Redis Cluster (``redis-cluster``), embedded: 3 primaries with a replica each.

What the topology promises a memory store, checked on real processes: one
``redis+cluster://`` URL reaches every shard; the log and the vector-set index keep
each call in one slot (users in buckets, a marker per bucket); a failover makes
exactly the failed shard's buckets distrust themselves until they are rebuilt; a
``TieredMemoryStore`` on the ``redis-cluster`` stack keeps every acknowledged append
through failovers; and a process that started a cluster leaves nothing when killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
from redis.crc import key_slot
from tenacity import Retrying, retry_if_result, stop_after_delay, wait_exponential

from nomnesia.adapters.engines import EmbeddedProvider
from nomnesia.adapters.engines.resp_cluster import RespCluster, View, _slot_ranges, parse_nodes
from nomnesia.adapters.engines.urls import cluster_url, parse_cluster_url
from nomnesia.adapters.indexes.redis_vsets import RedisVsetIndex
from nomnesia.adapters.redis_log import RedisLog, drop_namespace
from nomnesia.adapters.resp import resp_client
from nomnesia.adapters.tiers import SelfChecking, TierLost
from nomnesia.suite.contract import Entry

pytestmark = pytest.mark.xdist_group("redis-cluster")

DIGITS = "0123456789abcdef"
DIM = 8


@pytest.fixture
def cluster(engines: EmbeddedProvider) -> EmbeddedProvider:
    """This worker's shared engines (conftest's ``engines``), under this module's name."""
    return engines


def _part(provider: EmbeddedProvider) -> RespCluster:
    provider.url("redis-cluster")
    part = provider._parts["redis-cluster"]
    assert isinstance(part, RespCluster)
    return part


def _shard(tag: str) -> int:
    """Which of the 3 slot ranges a hash tag falls in (fixed: slots never migrate here)."""
    slot = key_slot(tag.encode())
    return next(i for i, (lo, hi) in enumerate(_slot_ranges(3)) if lo <= slot <= hi)


def _spread_namespace() -> str:
    """A fresh namespace whose 16 log buckets and 16 index buckets each land on all three
    shards, so that every test sees users on every primary (a random one misses a shard
    about once in 200)."""
    while True:
        namespace = f"nm_{secrets.token_hex(8)}"
        if all({_shard(fmt.format(namespace, d)) for d in DIGITS} == {0, 1, 2}
               for fmt in ("{}.{}", "{}.v.{}")):
            return namespace


def _users() -> list[str]:
    """Users of every bucket (the first hex digit of their SHA-256), hostile ids included."""
    import hashlib

    users = ["*", "{tag}", "a:b", "🙂\n", "[a-z]"]
    i = 0
    while {hashlib.sha256(u.encode()).hexdigest()[0] for u in users} != set(DIGITS):
        users.append(f"user-{i}")
        i += 1
    return users


def _bucket(user: str) -> str:
    import hashlib

    return hashlib.sha256(user.encode()).hexdigest()[0]


def _entries(user: str, n: int) -> list[Entry]:
    return [Entry(f"id{i}", user, i + 1, "user", f"{user} says {i}") for i in range(n)]


def _vector(i: int) -> list[float]:
    return [1.0 if d == i % DIM else 0.0 for d in range(DIM)]


def test_cluster_urls_name_seed_nodes_and_database_0_only() -> None:
    assert cluster_url([("a", 1), ("b", 2)]) == "redis+cluster://a:1,b:2/0"
    assert parse_cluster_url("redis+cluster://a:1,[::1]:2/0") == (("a", 1), ("::1", 2))
    assert parse_cluster_url("redis+cluster://a:1") == (("a", 1),)
    with pytest.raises(ValueError, match="database 0 only"):
        parse_cluster_url("redis+cluster://a:1/3")
    with pytest.raises(ValueError, match="host:port"):
        parse_cluster_url("redis+cluster://a/0")
    with pytest.raises(ValueError, match="redis\\+sentinel"):  # no replica reads here
        resp_client("redis+cluster://a:1/0", timeout=1.0, replica=True)


def test_cluster_nodes_are_read_as_each_node_sees_them() -> None:
    """``myself`` and the pings are left out: two nodes that agree read the same."""
    text = (
        "b1 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-5460 [42->-c3]\n"
        "c3 127.0.0.1:7002@17002 master,fail? - 1 0 2 connected 5461\n"
        "a2 127.0.0.1:7003@17003,host slave b1 0 5 1 connected\n")
    assert parse_nodes(text) == [
        View("a2", 7003, False, "b1", False, ()),
        View("b1", 7001, True, "-", False, ((0, 5460),)),
        View("c3", 7002, True, "-", True, ((5461, 5461),)),
    ]


@pytest.mark.slow  # starts a cluster: nox -s slow
def test_the_cluster_starts_whole_and_its_url_names_every_node(cluster: EmbeddedProvider) -> None:
    started = time.monotonic()
    url = cluster.url("redis-cluster")
    print(f"redis-cluster ready in {time.monotonic() - started:.2f}s")
    part = _part(cluster)
    assert url.startswith("redis+cluster://") and url.endswith("/0")
    assert url.count("127.0.0.1:") == 6
    part._settled()  # whole: raises unless every node agrees, each primary has a replica
    assert len(part.primary_ports()) == 3
    check = cluster.self_check("redis-cluster")
    assert "3 primaries" in check and "cluster_state:ok" in check


@pytest.mark.slow  # starts a cluster: nox -s slow
async def test_a_log_round_trips_users_of_every_bucket_across_the_shards(
        cluster: EmbeddedProvider) -> None:
    url = cluster.url("redis-cluster")
    namespace = _spread_namespace()
    users = _users()
    log = RedisLog(url, namespace, name="redis-cluster")
    try:
        assert await log.mark_intact(await log.begin_rebuild())
        assert await log.intact()
        for user in users:
            await log.put(list(reversed(_entries(user, 5))))
        for user in users:
            assert await log.tail(user, 3) == _entries(user, 5)[2:], user
            assert await log.ids(user) == {f"id{i}" for i in range(5)}
        await log.remove(users[0], ["id0", "id1", "absent"])
        assert await log.tail(users[0], 10) == _entries(users[0], 5)[2:]
        assert not await log.begin_write(users[1], "t1")
        assert await log.tail_if_idle(users[1], 10) is None  # a write is unfinished
        await log.end_write(users[1], "t1")
        assert await log.tail_if_idle(users[1], 10) == _entries(users[1], 5)
        await log.delete_user(users[2])
        assert await log.tail(users[2], 10) == []
    finally:
        await log.aclose()
        await drop_namespace(url, namespace, name="redis-cluster")
    assert _keys_on_primaries(_part(cluster), namespace) == []


def _keys_on_primaries(part: RespCluster, namespace: str) -> list[bytes]:
    """Keys of the namespace on every primary, asked directly (not through the cluster)."""
    import redis

    found: list[bytes] = []
    for port in part.primary_ports():
        client = redis.Redis(port=port)
        try:
            found += list(client.scan_iter(match=f"{namespace}:*"))
        finally:
            client.close()
    return found


@pytest.mark.slow  # failovers take seconds: nox -s slow
async def test_a_failover_distrusts_the_failed_shard_until_a_rebuild(
        cluster: EmbeddedProvider) -> None:
    """The replica a failover promotes may lack its primary's last writes: the buckets on
    that shard (and only they) distrust themselves, in the log and in the index, until
    a rebuild vouches for them again; a rebuild that spans a failover vouches for none."""
    url = cluster.url("redis-cluster")
    part = _part(cluster)
    namespace = _spread_namespace()
    users = _users()
    log = RedisLog(url, namespace, name="redis-cluster")
    index = RedisVsetIndex(url, namespace=namespace, dim=DIM)
    await index.create()

    async def fill() -> None:
        for i, user in enumerate(users):
            await log.put(_entries(user, 3))
            await index.upsert([_entries(user, 1)[0]], [_vector(i)])

    try:
        assert await log.mark_intact(await log.begin_rebuild())
        await fill()
        assert await index.intact()
        before = part.primary_ports()
        figures = await asyncio.to_thread(cluster.failover, "redis-cluster")
        print(f"failover: {figures}")
        assert 0 < figures["promoted_s"] <= figures["rejoined_s"]
        after = part.primary_ports()
        failed = [i for i in range(3) if before[i] != after[i]]
        assert len(failed) == 1, (before, after)
        assert not await log.intact() and not await index.intact()
        for i, user in enumerate(users):
            lost = _shard(f"{namespace}.{_bucket(user)}") == failed[0]
            if lost:
                with pytest.raises(TierLost):
                    await log.tail(user, 10)
            else:
                assert await log.tail(user, 10) == _entries(user, 3)
            if _shard(f"{namespace}.v.{_bucket(user)}") == failed[0]:
                with pytest.raises(TierLost):
                    await index.query(user, _vector(i), 1)
            else:
                assert await index.query(user, _vector(i), 1) == ["id0"]
        tokens = await log.begin_rebuild(), await index.begin_rebuild()
        await fill()
        assert await log.mark_intact(tokens[0]) and await index.mark_intact(tokens[1])
        assert await log.intact() and await index.intact()
        for i, user in enumerate(users):
            assert await log.tail(user, 10) == _entries(user, 3)
            assert await index.query(user, _vector(i), 1) == ["id0"]
        spanning = await log.begin_rebuild(), await index.begin_rebuild()
        await asyncio.to_thread(cluster.failover, "redis-cluster")
        await fill()
        assert not await log.mark_intact(spanning[0])
        assert not await index.mark_intact(spanning[1])
        assert not await log.intact() and not await index.intact()
    finally:
        await log.aclose()
        await index.aclose()
        await drop_namespace(url, namespace, name="redis-cluster")
    assert _keys_on_primaries(part, namespace) == []


@pytest.mark.slow  # failovers take seconds: nox -s slow
async def test_a_store_keeps_every_acknowledged_append_through_failovers(
        cluster: EmbeddedProvider) -> None:
    """The redis-cluster stack, appends before, between and after two failovers by users
    on every shard: every acknowledged one is in the archive, in the history, and (once
    recover() rebuilt the distrusting buckets) in the log, which is trusted again."""
    from nomnesia.adapters.stacks import open_engine_stack
    from nomnesia.suite.contract.errors import BackendUnavailable

    users = _users()
    acknowledged: dict[str, list[str]] = {user: [] for user in users}
    async with open_engine_stack("redis-cluster", provider=cluster, timeout=5.0) as store:
        for failover in range(3):
            for user in users:
                content = f"{user} f{failover}"
                deadline = time.monotonic() + 30  # bounded: a failover takes seconds
                while True:
                    try:
                        await store.append_message(user, "user", content)
                        break
                    except BackendUnavailable:  # not acknowledged: retried
                        assert time.monotonic() < deadline, "the store never answered again"
                acknowledged[user].append(content)
            if failover < 2:
                await asyncio.to_thread(cluster.failover, "redis-cluster")
        for user in users:
            live = [e.content for e in await store.archive.live(user)]
            assert live == acknowledged[user], f"G1: archive of {user!r}: {live}"
            history = [e.content for e in await store.get_history(user, 100)]
            assert history == acknowledged[user], f"G1: history of {user!r}: {history}"
        await store.recover()
        for tier in (store.log, store.index):
            assert isinstance(tier, SelfChecking) and await tier.intact(), tier.name
        for user in users:
            assert [e.content for e in await store.log.tail(user, 100)] == acknowledged[user]
            found = await store.search(user, acknowledged[user][0], k=1)
            assert [e.content for e in found] == [acknowledged[user][0]]


_CHILD = textwrap.dedent("""
    import json, time
    from nomnesia.adapters.engines import EmbeddedProvider
    provider = EmbeddedProvider()
    provider.url("redis-cluster")
    print(json.dumps({"dir": str(provider.directory), "watchdog": provider._watchdog.pid}),
          flush=True)
    time.sleep(120)
""")


def _alive(processes: list[psutil.Process]) -> list[psutil.Process]:
    alive = []
    for proc in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(proc)
    return alive


@pytest.mark.slow
def test_sigkill_of_a_process_that_started_a_cluster_leaves_nothing() -> None:
    child = subprocess.Popen([sys.executable, "-c", _CHILD], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        info = json.loads(child.stdout.readline())
        processes = [p for p in psutil.Process(child.pid).children(recursive=True)
                     if p.pid != info["watchdog"]]
        assert [p.name() for p in processes] == ["redis-server"] * 6
        directory = Path(info["dir"])
        assert directory.is_dir()
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    started = time.monotonic()
    polling = Retrying(stop=stop_after_delay(10), wait=wait_exponential(0.01, max=0.2),
                       retry=retry_if_result(lambda done: not done),
                       retry_error_callback=lambda _: False)
    gone = polling(lambda: not _alive(processes) and not directory.exists())
    print(f"cleanup after SIGKILL took {time.monotonic() - started:.2f}s")
    for proc in _alive(processes):  # never leave them behind, even when failing
        proc.kill()
    assert gone, f"left behind: {_alive(processes)}, directory exists: {directory.exists()}"
