"""SPEC G8 from outside: after ``forget(A)``, no engine of a stack holds anything of A.

Every built-in stack forgets user A while user B stays, and the residue scanner
(``adapters/engines/residue/``) reads every key, row and point of every engine the
stack used, every member of a replicated one, for A's ids and contents in every form
the adapters derive. It must find nothing of A, and must find B: a scanner that sees
nothing would pass anything. The scanner is then shown to find what it should: a key,
a row, a point planted for A directly in each engine kind, named by its place.

Qdrant's local mode in memory lives inside the store's client, which nothing outside
can open: that stack is scanned through the store's own client (``store.index._client``),
the only view there is. Qdrant Edge's shard is read the same way, through the store's
open shard, since a second handle on an open shard directory would be a second writer.
"""

from __future__ import annotations

import asyncio
import secrets
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from nomnesia.adapters import adapter_names, lookup, open_store
from nomnesia.adapters.engines import residue
from nomnesia.adapters.engines.residue import ScanResult, scan, scan_edge_shard, scan_qdrant_client
from nomnesia.adapters.indexes import _common

IN_PROCESS = ("qdrant", "qdrant-edge")
"""Engine kinds whose data only the store's own objects can read (see the module doc)."""
REPLICATED = {"postgres-ha", "redis-sentinel", "redis-cluster"}
"""Engine kinds with several members, each of which holds the data."""
SETTLE = 15.0
"""Seconds a replica may take to apply the forget (Redis replicas are asynchronous; a
synchronous PostgreSQL standby has flushed the WAL, not necessarily applied it)."""


def _family(engine: str) -> str:
    """``redis-cluster 127.0.0.1:7000`` -> ``redis-cluster``: which kind a finding is in."""
    return engine.partition(" ")[0]


async def _scan_stack(store: Any, urls: Mapping[str, str], **needles: list[str]) -> ScanResult:
    """Scan every engine of an open stack: by URL, or through the store's own objects."""
    outside = {kind: url for kind, url in urls.items() if kind not in IN_PROCESS}
    result = await asyncio.to_thread(scan, outside, **needles)
    wanted = residue.needles(needles.get("user_ids", ()), needles.get("contents", ()),
                             needles.get("entry_ids", ()))
    if "qdrant" in urls:
        result.extend(await scan_qdrant_client(store.index._client, wanted,
                                               "qdrant (the store's client)"))
    if "qdrant-edge" in urls:
        index = store.index

        def read_shard() -> ScanResult:
            with index._lock:
                return scan_edge_shard(index._shard, wanted, "qdrant-edge (the store's shard)",
                                       f"shard {index.path.name}")
        result.extend(await asyncio.to_thread(read_shard))
    return result


async def _settled(look: Callable[[], Any], done: Callable[[ScanResult], bool]) -> ScanResult:
    """Scan until ``done`` or ``SETTLE`` seconds passed (replicas apply a forget later)."""
    deadline = time.monotonic() + SETTLE
    while True:
        result: ScanResult = await look()
        if done(result) or time.monotonic() > deadline:
            return result
        await asyncio.sleep(0.2)  # a poll interval, bounded by SETTLE


def _settled_sync(look: Callable[[], ScanResult],
                  done: Callable[[ScanResult], bool]) -> ScanResult:
    """``_settled`` for a blocking scan (statistics reach pg_stat_* a moment later)."""
    deadline = time.monotonic() + SETTLE
    while True:
        result = look()
        if done(result) or time.monotonic() > deadline:
            return result
        time.sleep(0.2)  # a poll interval, bounded by SETTLE


@pytest.mark.parametrize("stack", adapter_names())
async def test_a_forgotten_user_leaves_no_residue_in_any_engine(engines: Any, stack: str) -> None:
    spec = lookup(stack)
    if not spec.engines:
        pytest.skip(f"{stack}: {spec.description}; nothing outside the process to scan")
    tag = secrets.token_hex(6)
    ann, bob = f"ann-{tag}", f"bob-{tag}"
    async with open_store(stack, provider=engines, keep_last=2) as store:
        a_entries = [await store.append_message(ann, "user", f"ann's secret {i} {tag}")
                     for i in range(5)]
        b_entries = [await store.append_message(bob, "user", f"bob's note {i} {tag}")
                     for i in range(5)]
        a_contents = [e.content for e in a_entries] + [
            h.content for h in await store.get_history(ann)]  # summaries too
        await store.forget(ann)
        urls = await asyncio.to_thread(engines.urls, *spec.engines)
        a_needles = {"user_ids": [ann], "contents": a_contents,
                     "entry_ids": [e.id for e in a_entries]}
        of_a = await _settled(lambda: _scan_stack(store, urls, **a_needles),
                              lambda r: not r.residues)
        of_b = await _scan_stack(store, urls, user_ids=[bob],
                                 contents=[e.content for e in b_entries],
                                 entry_ids=[e.id for e in b_entries])
    assert not of_a.unreachable and not of_b.unreachable, of_a.unreachable + of_b.unreachable
    assert of_a.scanned, f"{stack}: the scan read nothing"
    for kind in set(spec.engines) & REPLICATED:  # every member read, not only the primary
        members = {s.engine for s in of_a.scanned if _family(s.engine) == kind}
        assert len(members) >= 2, f"{stack}: only {members} of {kind} scanned"
    assert [str(r) for r in of_a.residues] == [], f"{stack}: user A left residues"
    seen = {_family(r.engine) for r in of_b.residues}
    assert seen >= set(spec.engines), (
        f"{stack}: the scan did not find user B in {set(spec.engines) - seen}: "
        f"it cannot see there ({of_b.summary()})")


def test_the_scanner_derives_keys_as_the_adapters_do() -> None:
    """The scanner repeats the adapters' derivations (it sits below them): they must agree."""
    assert residue.user_key is _common.user_key, "one definition of each key derivation"
    assert residue.point_uuid is _common.point_uuid


@pytest.fixture
def planted() -> Iterator[dict[str, str]]:
    """What a test plants for "user A": an id, a content and an entry id of its own."""
    tag = secrets.token_hex(6)
    yield {"user": f"ann-{tag}", "content": f"ann's planted secret {tag}",
           "entry": f"m-{tag}", "tag": tag}


def _places(result: ScanResult, needle: str) -> set[str]:
    return {f"{_family(r.engine)} {r.place}: {r.what}" for r in result.residues
            if r.needle == needle}


@pytest.mark.parametrize("kind", ["redis", "valkey", "redis-search"])
def test_a_key_planted_in_redis_is_found_by_name_and_value(
        engines: Any, planted: dict[str, str], kind: str) -> None:
    import redis

    url, tag = engines.url(kind), planted["tag"]
    client = redis.Redis.from_url(url)
    keys = [f"plant:{tag}:{planted['user']}", f"plant:{tag}:h", f"plant:{tag}:x",
            f"plant:{tag}:v"]
    try:
        client.set(keys[0], "nothing")
        client.hset(keys[1], mapping={"body": planted["content"]})
        client.xadd(keys[2], {"entry": planted["entry"]})
        if kind == "redis":  # vector sets are Redis 8's
            client.execute_command("VADD", keys[3], "VALUES", 2, 0.5, 0.5, planted["entry"])
        else:
            client.sadd(keys[3], planted["entry"])
        result = scan({kind: url}, user_ids=[planted["user"]],
                      contents=[planted["content"]], entry_ids=[planted["entry"]])
    finally:
        client.delete(*keys)
        client.close()
    assert f"{kind} db0 key {keys[0]!r} (name): user id" in _places(result, planted["user"])
    assert _places(result, planted["content"]) == {
        f"{kind} db0 key {keys[1]!r} (hash value): content"}
    assert _places(result, planted["entry"]) == {
        f"{kind} db0 key {keys[2]!r} (stream value): entry id",
        f"{kind} db0 key {keys[3]!r} ({'vectorset' if kind == 'redis' else 'set'} value): "
        "entry id"}
    assert result.scanned and result.scanned[0].count >= 4


def test_a_row_planted_in_postgres_is_found_with_its_table_and_row(
        engines: Any, planted: dict[str, str]) -> None:
    import psycopg

    url, schema = engines.url("postgres"), f"plant_{planted['tag']}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        try:
            conn.execute(f"CREATE TABLE {schema}.archive (uid text, body bytea)")
            conn.execute(f"INSERT INTO {schema}.archive VALUES ('someone', 'x'), (%s, %s)",
                         (planted["user"], planted["content"].encode()))
            result = scan({"postgres": url}, user_ids=[planted["user"]],
                          contents=[planted["content"]])
            # Deleted, the row is a dead tuple until VACUUM: outside G8, so info only.
            # The deleting backend reports it to the statistics when it exits.
            with psycopg.connect(url, autocommit=True) as deleting:
                deleting.execute(f"DELETE FROM {schema}.archive WHERE uid = %s",
                                 (planted["user"],))
            after = _settled_sync(lambda: scan({"postgres": url}, user_ids=[planted["user"]]),
                                  lambda r: any(schema in line for line in r.info))
        finally:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
    row = f"postgres table {schema}.archive row (0,2)"
    assert _places(result, planted["user"]) == {f"{row}: user id"}
    assert _places(result, planted["content"]) == {f"{row}: content/hex"}  # a bytea
    assert after.residues == []
    assert [line for line in after.info if schema in line] == [
        f"{after.scanned[0].engine} table {schema}.archive: 1 dead tuples, kept until "
        "VACUUM (outside G8, as the WAL is)"]


def test_a_point_planted_in_qdrant_on_disk_is_found_with_its_collection(
        tmp_path: Path, planted: dict[str, str]) -> None:
    from qdrant_client import QdrantClient, models

    path = str(tmp_path / "qdrant")
    client = QdrantClient(path=path)
    point = str(residue.point_uuid(planted["user"], planted["entry"]))
    try:
        client.create_collection("plant", vectors_config=models.VectorParams(
            size=2, distance=models.Distance.COSINE))
        client.upsert("plant", [models.PointStruct(id=point, vector=[0.5, 0.5],
                                                   payload={"body": planted["content"]})])
    finally:
        client.close()
    result = scan({"qdrant": path}, user_ids=[planted["user"]], contents=[planted["content"]],
                  entry_ids=[planted["entry"]])
    assert _places(result, planted["content"]) == {
        f"qdrant collection plant point {point}: content"}
    assert _places(result, planted["entry"]) == {
        f"qdrant collection plant point {point}: entry id/point uuid"}


def test_a_point_planted_in_a_qdrant_edge_shard_is_found(
        tmp_path: Path, planted: dict[str, str]) -> None:
    import qdrant_edge as qe

    shard = qe.EdgeShard.create(str(tmp_path / "nm_plant"), qe.EdgeConfig(
        vectors=qe.EdgeVectorParams(size=2, distance=qe.Distance.Cosine)))
    try:
        shard.update(qe.UpdateOperation.upsert_points([qe.Point(
            "00000000-0000-0000-0000-000000000001", [0.5, 0.5], {"user_id": planted["user"]})]))
    finally:
        shard.close()
    result = scan({"qdrant-edge": str(tmp_path)}, user_ids=[planted["user"]])
    assert _places(result, planted["user"]) == {
        "qdrant-edge shard nm_plant point 00000000-0000-0000-0000-000000000001: user id"}


@pytest.mark.parametrize("kind", ["milvus", "milvus-server"])
def test_a_row_planted_in_milvus_is_found_with_its_collection(
        engines: Any, planted: dict[str, str], kind: str) -> None:
    from pymilvus import MilvusClient

    uri, name = engines.url(kind), f"plant_{planted['tag']}"
    client = MilvusClient(uri=uri)
    try:
        client.create_collection(name, dimension=2, consistency_level="Strong")
        client.insert(name, [{"id": 7, "vector": [0.5, 0.5], "user_key":
                              residue.user_key(planted["user"])}])  # a dynamic field
        result = scan({kind: uri}, user_ids=[planted["user"]])
    finally:
        client.drop_collection(name)
        client.close()
    assert _places(result, planted["user"]) == {
        f"{kind} collection {name} row id=7: user id/sha256"}


def test_an_engine_the_scan_cannot_reach_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pymilvus", None)  # as if the extra were not installed
    result = scan([("redis", "redis://127.0.0.1:1/0"),
                   ("postgres", "postgresql://postgres@127.0.0.1:1/postgres"),
                   ("qdrant", ":memory:"), ("milvus", "/nowhere/milvus.db")],
                  user_ids=["ann"], timeout=2)
    assert not result.clean and not result.scanned
    assert [line.split(" ", 2)[:2] for line in result.unreachable] == [
        ["redis", "redis://127.0.0.1:1/0:"],
        ["postgres", "postgresql://postgres@127.0.0.1:1/postgres:"],
        ["qdrant", ":memory::"], ["milvus", "/nowhere/milvus.db:"]]
    assert "scan_qdrant_client" in result.unreachable[2]
    assert "pip install 'nomnesia[milvus]'" in result.unreachable[3]
    assert "scanned nothing" in result.summary()


def test_the_command_line_exits_1_on_a_residue_and_0_with_a_summary(
        engines: Any, planted: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    import redis

    url, key = engines.url("redis"), f"plant:{planted['tag']}"
    client = redis.Redis.from_url(url)
    try:
        client.set(key, planted["content"])
        assert residue.main(["--redis", url, "--user", planted["user"],
                             "--content", planted["content"]]) == 1
        found = capsys.readouterr().out
        assert f"residue: redis {url[8:-2]} db0 key {key!r} (string value): content" in found
        client.delete(key)
        assert residue.main(["--redis", url, "--user", planted["user"]]) == 0
        summary = capsys.readouterr().out
        assert "scanned redis" in summary and "no residue of 1 user(s)" in summary
    finally:
        client.delete(key)
        client.close()
