"""Qdrant, Qdrant Edge and Milvus: every collection or shard name and every point or row."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .base import Finder, Needle, Scanned, ScanResult, Unreachable, client_module, shown

__all__ = ["scan_edge_shard", "scan_milvus", "scan_qdrant", "scan_qdrant_client",
           "scan_qdrant_edge"]


async def scan_qdrant_client(client: Any, wanted: Sequence[Needle],
                             engine: str = "qdrant") -> ScanResult:
    """Every collection name and point (id and payload) an ``AsyncQdrantClient`` sees.

    The way to scan Qdrant's local mode in memory, which only its own client can see:
    pass the store's client (``store.index._client``).
    """
    result = ScanResult()
    finder = Finder(engine, wanted, result)
    points = 0
    collections = [c.name for c in (await client.get_collections()).collections]
    for name in collections:
        finder.look(f"collection {name} (name)", name)
        offset: Any = None
        while True:
            batch, offset = await client.scroll(name, limit=1024, offset=offset,
                                                with_payload=True, with_vectors=False)
            for point in batch:
                points += 1
                finder.look(f"collection {name} point {point.id}", str(point.id),
                            json.dumps(point.payload, ensure_ascii=False))
            if offset is None:
                break
    result.scanned.append(Scanned(engine, f"points in {len(collections)} collections", points))
    return result


def scan_qdrant(kind: str, url: str, wanted: Sequence[Needle], timeout: float) -> ScanResult:
    if url == ":memory:":
        raise Unreachable(f"{kind} :memory:: an in-memory Qdrant lives in its client's "
                           "process, unseen from outside; scan that client with "
                           "scan_qdrant_client(store.index._client, ...)")
    qdrant_client = client_module("qdrant_client", f"{kind} {shown(url)}")

    async def run() -> ScanResult:
        server = url.startswith(("http://", "https://"))
        client = (qdrant_client.AsyncQdrantClient(url=url, timeout=max(1, int(timeout)),
                                                  check_compatibility=False)
                  if server else qdrant_client.AsyncQdrantClient(path=url))
        try:
            return await scan_qdrant_client(client, wanted, f"{kind} {shown(url)}")
        finally:
            await client.close()
    return asyncio.run(run())


def scan_edge_shard(shard: Any, wanted: Sequence[Needle], engine: str,
                    place: str = "shard") -> ScanResult:
    """Every point (id and payload) of an open Qdrant Edge shard (``qdrant_edge.EdgeShard``)."""
    qe = client_module("qdrant_edge", engine)
    result = ScanResult()
    finder = Finder(engine, wanted, result)
    points = 0
    offset: Any = None
    while True:
        request = qe.ScrollRequest(offset=offset, limit=1024, with_payload=True)
        records, offset = shard.scroll(request)
        for record in records:
            points += 1
            finder.look(f"{place} point {record.id}", str(record.id),
                        json.dumps(record.payload, ensure_ascii=False))
        if offset is None:
            break
    result.scanned.append(Scanned(engine, f"points in {place}", points))
    return result


def scan_qdrant_edge(kind: str, root: str, wanted: Sequence[Needle],
                      timeout: float) -> ScanResult:
    """Each shard directory under ``root`` (one per namespace), loaded and scrolled."""
    qe = client_module("qdrant_edge", f"{kind} {root}")
    engine = f"{kind} {root}"
    if not Path(root).is_dir():
        raise Unreachable(f"{engine}: no such directory")
    result = ScanResult()
    finder = Finder(engine, wanted, result)
    for path in sorted(p for p in Path(root).iterdir() if p.is_dir()):
        finder.look(f"shard {path.name} (name)", path.name)
        shard = qe.EdgeShard.load(str(path))
        try:
            result.extend(scan_edge_shard(shard, wanted, engine, f"shard {path.name}"))
        finally:
            shard.close()
    if not result.scanned:
        result.scanned.append(Scanned(engine, "shards", 0))
    return result


def scan_milvus(kind: str, uri: str, wanted: Sequence[Needle], timeout: float) -> ScanResult:
    pymilvus = client_module("pymilvus", f"{kind} {shown(uri)}")
    engine = f"{kind} {shown(uri)}"
    result = ScanResult()
    finder = Finder(engine, wanted, result)
    client = pymilvus.MilvusClient(uri=uri, timeout=timeout)
    rows = 0
    try:
        collections = list(client.list_collections())
        for name in collections:
            finder.look(f"collection {name} (name)", name)
            described = client.describe_collection(name)
            # Every field but the vectors (numbers, never an id), and the dynamic ones.
            fields = [f["name"] for f in described["fields"]
                      if "VECTOR" not in str(f.get("type"))]
            fields += ["$meta"] if described.get("enable_dynamic_field") else []
            primary = next(f["name"] for f in described["fields"] if f.get("is_primary"))
            client.load_collection(name, timeout=timeout)
            iterator = client.query_iterator(name, batch_size=1000, filter="",
                                             output_fields=fields)
            try:
                while batch := iterator.next():
                    for row in batch:
                        rows += 1
                        finder.look(f"collection {name} row {primary}={row.get(primary)}",
                                    json.dumps(row, ensure_ascii=False, default=str))
            finally:
                iterator.close()
    finally:
        client.close()
    result.scanned.append(Scanned(engine, f"rows in {len(collections)} collections", rows))
    return result
