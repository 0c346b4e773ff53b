"""One contract test for the VectorIndex protocol, run on every backend that runs here.

TieredMemoryStore replays index calls after a crash and trusts ``ids`` for
``consistent_state``, so each backend must be idempotent, exact about what it
holds, and isolate users whatever their ids contain. Backend-specific syntax
(Milvus filters, Redis key names) gets its own tests at the end.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from seeds import seeds

from nomnesia.adapters.indexes._common import point_uuid, user_key
from nomnesia.adapters.tiers import VectorIndex, new_namespace
from nomnesia.suite.contract import Entry

DIM = 16
SEED = int(os.environ.get("NOMNESIA_SEED", seeds("indexes", 1)[0]))  # tests/seeds.py
print(f"tests/test_indexes.py: NOMNESIA_SEED={SEED}")

ADVERSARIAL_IDS = [
    '" or user_id != "', "' or '1'='1", "ann", "anna", "*", "{}", "\\", '"', "'",
    "@user_id:{*}", "a" * 256, "😀" * 256, "user with spaces\nand newline", "%", ":",
    "ann*", "a,b", "$k", "|", "-1", "u\\*", "{ann}",
]
ENTRY_IDS = ["e1", "e\x00nul", "é", "x" * 128, "😀" * 128, "*", '"', "a:b"]

Opener = Callable[..., Awaitable[Any]]


async def _open_memory(namespace: str, **_: Any) -> VectorIndex:
    from nomnesia.adapters.memory_tiers import InMemoryIndex
    return InMemoryIndex(dim=DIM)


def _openers(tmp_path: Path, request: pytest.FixtureRequest) -> dict[str, Opener]:
    async def qdrant(namespace: str, **kw: Any) -> Any:
        from nomnesia.adapters.indexes.qdrant import QdrantIndex
        index = QdrantIndex(":memory:", namespace=namespace, dim=DIM, **kw)
        await index.create()
        return index

    async def qdrant_edge(namespace: str, **kw: Any) -> Any:
        from nomnesia.adapters.indexes.qdrant_edge import QdrantEdgeIndex
        index = QdrantEdgeIndex(tmp_path / "edge", namespace=namespace, dim=DIM, **kw)
        await index.create()
        return index

    async def milvus(namespace: str, **kw: Any) -> Any:
        from nomnesia.adapters.indexes.milvus import MilvusIndex
        uri = str(tmp_path / "milvus.db")
        request.addfinalizer(lambda: _release_milvus_lite(uri))
        index = MilvusIndex(uri, namespace=namespace, dim=DIM, **kw)
        await index.create()
        return index

    async def redis_vsets(namespace: str, **kw: Any) -> Any:
        from nomnesia.adapters.indexes.redis_vsets import RedisVsetIndex
        url = request.getfixturevalue("engines").url("redis")
        index = RedisVsetIndex(url, namespace=namespace, dim=DIM, **kw)
        await index.create()
        return index

    async def redis_search(namespace: str, **kw: Any) -> Any:
        from nomnesia.adapters.indexes.redis_search import RedisSearchIndex
        url = (os.environ.get("NOMNESIA_REDIS_SEARCH_URL")
               or request.getfixturevalue("engines").url("redis-search"))
        index = RedisSearchIndex(url, namespace=namespace, dim=DIM, **kw)
        await index.create()
        return index

    async def pgvector(namespace: str, **kw: Any) -> Any:
        from nomnesia.adapters.indexes.pgvector import PgVectorIndex
        url = request.getfixturevalue("engines").url("postgres")
        index = PgVectorIndex(url, namespace=namespace, dim=DIM, **kw)
        await index.create()
        return index

    return {"memory": _open_memory, "qdrant": qdrant, "qdrant-edge": qdrant_edge,
            "milvus": milvus, "redis-vsets": redis_vsets, "redis-search": redis_search,
            "pgvector": pgvector}


def _release_milvus_lite(uri: str) -> None:
    """Milvus Lite serves a .db from a thread until released: stop it with the test."""
    from milvus_lite.server_manager import server_manager_instance
    server_manager_instance.release_server(uri)


BACKENDS = ["memory", "qdrant", "qdrant-edge", "milvus", "redis-vsets", "redis-search",
            "pgvector"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def opener(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Opener:
    return _openers(tmp_path, request)[backend]


@pytest.fixture
async def index(opener: Opener) -> AsyncIterator[Any]:
    opened = await opener(new_namespace())
    try:
        yield opened
    finally:
        await opened.aclose()


def unit(rng: random.Random) -> list[float]:
    v = [rng.gauss(0, 1) for _ in range(DIM)]
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def entry(user_id: str, entry_id: str, seq: int = 1) -> Entry:
    return Entry(id=entry_id, user_id=user_id, seq=seq, role="user", content=entry_id)


async def test_is_a_vector_index(index: Any) -> None:
    assert isinstance(index, VectorIndex)
    assert index.dim == DIM
    assert index.search_staleness >= 0


async def test_upsert_query_ids_delete(index: Any) -> None:
    rng = random.Random(SEED)
    vectors = {f"e{i}": unit(rng) for i in range(6)}
    await index.upsert([entry("u", i) for i in vectors], list(vectors.values()))
    assert await index.ids("u") == set(vectors)
    for entry_id, vector in vectors.items():
        assert (await index.query("u", vector, 3))[0] == entry_id
    await index.delete("u", ["e0", "e1", "absent"])
    assert await index.ids("u") == set(vectors) - {"e0", "e1"}
    assert "e0" not in await index.query("u", vectors["e0"], 6)
    await index.delete("u", ["e0"])  # absent now: still fine
    await index.delete_user("u")
    assert await index.ids("u") == set()
    assert await index.query("u", vectors["e2"], 5) == []
    await index.delete_user("u")  # twice is fine
    await index.delete_user("never-written")
    assert await index.query("never-written", vectors["e2"], 5) == []


async def test_upsert_is_idempotent_and_overwrites(index: Any) -> None:
    rng = random.Random(SEED + 1)
    first, second, other = unit(rng), unit(rng), unit(rng)
    batch = [entry("u", "a"), entry("u", "b")]
    await index.upsert(batch, [first, other])
    await index.upsert(batch, [first, other])
    assert await index.ids("u") == {"a", "b"}
    hits = await index.query("u", first, 10)
    assert hits[0] == "a" and sorted(hits) == ["a", "b"]
    await index.upsert([entry("u", "a")], [second])  # replayed with a new vector
    hits = await index.query("u", second, 10)
    assert hits[0] == "a" and sorted(hits) == ["a", "b"]
    await index.upsert([], [])
    await index.delete("u", [])


async def test_read_after_write_matches_declared_staleness(index: Any) -> None:
    """search_staleness is 0 for every backend here, so no wait is allowed."""
    rng = random.Random(SEED + 2)
    if index.search_staleness != 0:
        pytest.skip(f"{index.name} declares search_staleness={index.search_staleness}")
    for i in range(20):
        vector = unit(rng)
        await index.upsert([entry("rw", f"m{i}", i)], [vector])
        assert (await index.query("rw", vector, 1)) == [f"m{i}"]
        await index.delete("rw", [f"m{i}"])
        assert f"m{i}" not in await index.query("rw", vector, 1)


async def test_k_bounds(index: Any) -> None:
    rng = random.Random(SEED + 3)
    vectors = [unit(rng) for _ in range(5)]
    await index.upsert([entry("k", f"e{i}") for i in range(5)], vectors)
    assert len(await index.query("k", vectors[0], 1)) == 1
    assert len(await index.query("k", vectors[0], 5)) == 5
    hits = await index.query("k", vectors[0], 1000)
    assert len(hits) == 5 and len(set(hits)) == 5


async def test_bad_k_is_rejected(index: Any, backend: str) -> None:
    if backend == "memory":
        pytest.skip("the in-memory index leaves validation to the store")
    for bad in (0, -1):
        with pytest.raises(ValueError):
            await index.query("u", [1.0] * DIM, bad)
    with pytest.raises(TypeError):
        await index.query("u", [1.0] * DIM, True)


async def test_adversarial_user_ids_are_isolated(index: Any) -> None:
    """G9: each user sees only its own entries, even with identical entry ids."""
    rng = random.Random(SEED + 4)
    vectors: dict[tuple[str, str], list[float]] = {}
    for uid in ADVERSARIAL_IDS:
        for eid in ENTRY_IDS:
            vectors[uid, eid] = unit(rng)
    keys = list(vectors)
    await index.upsert([entry(u, e) for u, e in keys], [vectors[k] for k in keys])
    for uid in ADVERSARIAL_IDS:
        assert await index.ids(uid) == set(ENTRY_IDS), uid
        for eid in ENTRY_IDS[:3]:
            hits = await index.query(uid, vectors[uid, eid], len(ENTRY_IDS) + 5)
            assert hits[0] == eid and sorted(hits) == sorted(ENTRY_IDS), uid
    victim, attacker = "anna", '" or user_id != "'
    await index.delete(attacker, ENTRY_IDS)
    await index.delete_user("*")
    await index.delete_user("@user_id:{*}")
    await index.delete_user("ann")
    assert await index.ids(victim) == set(ENTRY_IDS)
    assert await index.ids(attacker) == set()
    for gone in ("*", "@user_id:{*}", "ann"):
        assert await index.ids(gone) == set()
    survivors = set(ADVERSARIAL_IDS) - {attacker, "*", "@user_id:{*}", "ann"}
    for uid in survivors:
        assert await index.ids(uid) == set(ENTRY_IDS), uid


async def test_namespaces_do_not_see_each_other(opener: Opener, backend: str) -> None:
    if backend == "memory":
        pytest.skip("the in-memory index has no namespaces")
    rng = random.Random(SEED + 5)
    first, second = await opener(new_namespace()), await opener(new_namespace())
    try:
        vector = unit(rng)
        await first.upsert([entry("u", "only-in-first")], [vector])
        assert await second.ids("u") == set()
        assert await second.query("u", vector, 5) == []
        await second.delete_user("u")
        assert await first.ids("u") == {"only-in-first"}
    finally:
        await first.aclose()
        await second.aclose()


async def test_aclose_drops_the_namespace_it_created(opener: Opener, backend: str) -> None:
    if backend == "memory":
        pytest.skip("the in-memory index has no namespaces")
    if backend == "qdrant":
        pytest.skip("a :memory: Qdrant dies with its client; nothing to leak")
    namespace = new_namespace()
    index = await opener(namespace)
    await index.upsert([entry("u", "e")], [[1.0] + [0.0] * (DIM - 1)])
    await index.aclose()
    reopened = await opener(namespace)
    try:
        assert await reopened.ids("u") == set()
    finally:
        await reopened.aclose()


async def test_a_reopened_namespace_keeps_its_data_or_says_it_lost_it(
        opener: Opener, backend: str) -> None:
    """``reuse``: data kept on close; an index recreated empty is not complete (SelfChecking)."""
    from nomnesia.adapters.tiers import SelfChecking, TierLost
    if backend == "memory":
        pytest.skip("the in-memory index has no namespaces")
    namespace, vector = new_namespace(), [1.0] + [0.0] * (DIM - 1)
    first = await opener(namespace, reuse=True)
    try:
        assert isinstance(first, SelfChecking) or backend == "redis-search"
        if isinstance(first, SelfChecking) and not await first.intact():
            with pytest.raises(TierLost):
                await first.query("u", vector, 1)
            assert await first.mark_intact(await first.begin_rebuild())
        await first.upsert([entry("u", "e")], [vector])
    finally:
        await first.aclose()
    second = await opener(namespace, reuse=True)
    try:
        if isinstance(second, SelfChecking) and not await second.intact():
            assert backend == "qdrant", "only a :memory: engine forgets on close"
            with pytest.raises(TierLost):
                await second.query("u", vector, 1)
        else:
            assert await second.ids("u") == {"e"}
            assert await second.query("u", vector, 1) == ["e"]
    finally:
        await second.drop()
        await second.aclose()


# --- each backend's own syntax -------------------------------------------------------


def test_point_ids_are_deterministic_and_injective() -> None:
    assert point_uuid("u", "e") == point_uuid("u", "e")
    assert point_uuid("ab", "c") != point_uuid("a", "bc")
    assert point_uuid("u", "e") != point_uuid("e", "u")
    assert len({point_uuid(u, "e") for u in ADVERSARIAL_IDS}) == len(ADVERSARIAL_IDS)


def test_milvus_filter_never_contains_the_user_id() -> None:
    from nomnesia.adapters.indexes.milvus import user_filter
    for uid in ADVERSARIAL_IDS:
        expr, params = user_filter(uid, templates=False)
        assert expr == f'user_key == "{user_key(uid)}"' and params == {}
        expr, params = user_filter(uid, templates=True)
        assert expr == "user_key == {uk}" and params == {"uk": user_key(uid)}


async def test_milvus_injection_in_filter_reads_nothing(tmp_path: Path) -> None:
    from nomnesia.adapters.indexes.milvus import MilvusIndex
    index = MilvusIndex(str(tmp_path / "m.db"), dim=DIM)
    await index.create()
    try:
        await index.upsert([entry("victim", "secret")], [[1.0] + [0.0] * (DIM - 1)])
        for uid in ('" or user_id != "', '" || user_key != "', "') or (1 == 1"):
            assert await index.ids(uid) == set()
            assert await index.query(uid, [1.0] + [0.0] * (DIM - 1), 5) == []
            await index.delete_user(uid)
        assert await index.ids("victim") == {"secret"}
    finally:
        await index.aclose()
        _release_milvus_lite(str(tmp_path / "m.db"))


async def test_milvus_ids_beyond_one_query_page(monkeypatch: pytest.MonkeyPatch) -> None:
    """More rows than one query may return: ``ids`` falls back to an iterator."""
    from nomnesia.adapters.indexes import milvus
    monkeypatch.setattr(milvus, "_PAGE", 3)
    index = milvus.MilvusIndex(dim=DIM)
    await index.create()
    try:
        rng = random.Random(SEED + 6)
        await index.upsert([entry("u", e) for e in ENTRY_IDS], [unit(rng) for _ in ENTRY_IDS])
        await index.upsert([entry("v", "other")], [unit(rng)])
        assert await index.ids("u") == set(ENTRY_IDS)
    finally:
        await index.aclose()


def test_redis_vset_keys_are_hex_under_the_namespace() -> None:
    from nomnesia.adapters.indexes.redis_vsets import RedisVsetIndex
    index = RedisVsetIndex("redis://127.0.0.1:1/0", namespace="nm_test")
    for uid in ADVERSARIAL_IDS:
        assert index.key(uid) == f"nm_test:v:{user_key(uid)}"


async def test_private_milvus_lite_is_stopped_on_close() -> None:
    from milvus_lite.server_manager import server_manager_instance

    from nomnesia.adapters.indexes.milvus import MilvusIndex
    index = MilvusIndex(dim=DIM)
    await index.create()
    await index.upsert([entry("u", "e")], [[1.0] + [0.0] * (DIM - 1)])
    path = Path(index.uri)  # absolute: a private Lite lives in a temp dir
    await index.aclose()
    assert str(path) not in server_manager_instance._servers
    assert not path.parent.exists()


async def test_private_qdrant_edge_root_is_removed_on_close() -> None:
    from nomnesia.adapters.indexes.qdrant_edge import QdrantEdgeIndex
    index = QdrantEdgeIndex(dim=DIM)
    await index.create()
    root = index.path.parent
    assert root.exists()
    await index.aclose()
    assert not root.exists()


@pytest.mark.parametrize("backend_name", ["qdrant", "milvus", "redis-vsets", "redis-search"])
async def test_a_down_server_raises_naming_the_backend(backend_name: str) -> None:
    """G12: nothing listens on port 1; each call fails fast, naming the backend."""
    import time

    from nomnesia.suite.contract.errors import BackendUnavailable
    index: Any
    if backend_name == "qdrant":
        from nomnesia.adapters.indexes.qdrant import QdrantIndex
        index = QdrantIndex("http://127.0.0.1:1", dim=DIM, timeout=1.0)
    elif backend_name == "milvus":
        from nomnesia.adapters.indexes.milvus import MilvusIndex
        index = MilvusIndex("http://127.0.0.1:1", dim=DIM, timeout=1.0)
    elif backend_name == "redis-vsets":
        from nomnesia.adapters.indexes.redis_vsets import RedisVsetIndex
        index = RedisVsetIndex("redis://127.0.0.1:1/0", dim=DIM, timeout=1.0)
    else:
        from nomnesia.adapters.indexes.redis_search import RedisSearchIndex
        index = RedisSearchIndex("redis://127.0.0.1:1/0", dim=DIM, timeout=1.0)
    started = time.monotonic()
    with pytest.raises(BackendUnavailable) as caught:
        await index.create()
    assert caught.value.backend == index.name
    assert time.monotonic() - started < 5
    await index.aclose()


async def test_a_call_given_up_on_lands_before_the_next_call() -> None:
    """A cancelled or timed-out request may still reach the engine: later calls wait for it."""
    import asyncio

    from nomnesia.adapters.indexes._common import Calls
    from nomnesia.suite.contract.errors import BackendTimeout

    calls, order, gate = Calls("engine"), [], asyncio.Event()

    async def late_write() -> None:
        await gate.wait()
        order.append("late write")

    async def read() -> None:
        order.append("read")

    first = asyncio.ensure_future(calls(5.0, late_write()))
    await asyncio.sleep(0)  # let it start: the request is "on its way"
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    with pytest.raises(BackendTimeout, match="still running"):
        await calls(0.01, read())
    second = asyncio.ensure_future(calls(5.0, read()))
    await asyncio.sleep(0)
    assert order == []
    gate.set()
    await second
    assert order == ["late write", "read"]

    gate.clear()
    with pytest.raises(BackendTimeout):
        await calls(0.01, late_write())
    gate.set()
    await calls(5.0, read())
    assert order == ["late write", "read", "late write", "read"]


async def test_redis_vsets_tells_when_its_engine_lost_the_data(engines: Any) -> None:
    """SelfChecking: a restart without persistence empties Redis; the index must say so."""
    import redis.asyncio as aioredis

    from nomnesia.adapters.indexes.redis_vsets import RedisVsetIndex
    from nomnesia.adapters.tiers import SelfChecking, TierLost
    url = engines.url("redis")
    index = RedisVsetIndex(url, dim=DIM)
    await index.create()
    raw = aioredis.Redis.from_url(url)
    vector = [1.0] + [0.0] * (DIM - 1)

    async def lose_everything() -> None:  # what a restart of a memory-only Redis does
        keys = [k async for k in raw.scan_iter(match=f"{index.namespace}:*")]
        await raw.delete(*keys)
    try:
        assert isinstance(index, SelfChecking) and await index.intact()
        await index.upsert([entry("u", "e")], [vector])
        await lose_everything()
        assert not await index.intact()
        with pytest.raises(TierLost):
            await index.query("u", vector, 1)
        token = await index.begin_rebuild()
        await lose_everything()  # lost again during the rebuild: not vouched for
        assert not await index.mark_intact(token)
        token = await index.begin_rebuild()
        await index.upsert([entry("u", "e")], [vector])
        assert await index.mark_intact(token)
        assert await index.intact() and await index.query("u", vector, 1) == ["e"]
    finally:
        await index.aclose()
        assert [k async for k in raw.scan_iter(match=f"{index.namespace}:*")] == []
        await raw.aclose()


def test_a_milvus_connect_sent_away_by_the_server_is_retried_and_nothing_else(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A GOAWAY "too_many_pings" ends one connection, not the server: a new client is
    made again; a refused connect is raised at once, not retried into a timeout."""
    pytest.importorskip("pymilvus")
    from nomnesia.adapters.indexes import milvus

    calls: list[str] = []

    def sent_away_once(uri: str, **kwargs: object) -> str:
        calls.append(uri)
        if len(calls) == 1:
            try:
                raise RuntimeError("UNAVAILABLE: Too many pings")
            except RuntimeError as grpc_error:
                raise ValueError("Fail connecting to server") from grpc_error
        return "client"

    monkeypatch.setattr(milvus, "MilvusClient", sent_away_once)
    index = milvus.MilvusIndex("http://127.0.0.1:1", timeout=1.0)
    assert index._connect() == "client" and len(calls) == 2

    def refused(uri: str, **kwargs: object) -> str:
        calls.append(uri)
        raise ValueError("Fail connecting to server: connection refused")

    calls.clear()
    monkeypatch.setattr(milvus, "MilvusClient", refused)
    with pytest.raises(ValueError, match="refused"):
        index._connect()
    assert len(calls) == 1


def test_an_error_chain_that_loops_back_ends_the_sent_away_check() -> None:
    """An exception may be its own context's context: the check must still end."""
    pytest.importorskip("pymilvus")
    from nomnesia.adapters.indexes.milvus import _sent_away

    first, second = ValueError("connect failed"), RuntimeError("UNAVAILABLE")
    first.__context__, second.__context__ = second, first
    assert _sent_away(first) is False
    second.__cause__ = RuntimeError("Too many pings")
    assert _sent_away(first) is True
