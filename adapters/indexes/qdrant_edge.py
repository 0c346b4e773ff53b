"""QdrantEdgeIndex: a VectorIndex on Qdrant Edge, the Rust engine in-process.

The engine has only a blocking API, so every call runs in a worker thread
(``asyncio.to_thread``) and the event loop stays free; a thread lock keeps one
call at a time on the shard, even when a timed-out call is still finishing.
One shard directory per namespace under ``root`` (a temp dir by default).
Points need UUID ids: uuid5 of (user id, entry id).
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import qdrant_edge as qe

from nomnesia.suite.contract import Entry

from ..bounds import check_k
from ._common import Completeness, IndexBase, SelfCheckingByCompleteness, check_batch, point_uuid

__all__ = ["QdrantEdgeIndex"]

T = TypeVar("T")


def _user_filter(user_id: str) -> qe.Filter:
    return qe.Filter(must=[qe.FieldCondition(key="user_id", match=qe.MatchValue(user_id))])


def _scroll(request: qe.ScrollRequest) -> Callable[[qe.EdgeShard],
                                                    tuple[list[qe.Record], qe.PointId | None]]:
    return lambda shard: shard.scroll(request)


class QdrantEdgeIndex(IndexBase, SelfCheckingByCompleteness):
    """Vectors in one Edge shard, filtered by the ``user_id`` payload field."""

    name = "qdrant-edge"
    # update() applies to the in-memory segments before it returns; the
    # contract test measures read-after-write with no wait.
    search_staleness = 0.0

    def __init__(self, root: str | Path | None = None, *, namespace: str | None = None,
                 dim: int = 384, timeout: float = 5.0, reuse: bool = False) -> None:
        super().__init__(namespace=namespace, dim=dim, timeout=timeout, reuse=reuse)
        self._complete = Completeness(self.name)
        self._tmp = None if root is not None else tempfile.mkdtemp(prefix="nomnesia-edge-")
        self.path = Path(root if root is not None else self._tmp or "") / self.namespace
        self._lock = threading.Lock()
        self._shard: qe.EdgeShard | None = None
        self._created = False

    async def _run(self, fn: Callable[[qe.EdgeShard], T]) -> T:
        def locked() -> T:
            with self._lock:
                if self._shard is None:
                    raise RuntimeError("shard is not open")
                return fn(self._shard)
        return await self._calls(self.timeout, asyncio.to_thread(locked))

    async def create(self) -> None:
        """Open the shard, creating it if the directory holds none."""
        def open_shard() -> None:
            with self._lock:
                if self._shard is not None:
                    return
                if self.path.exists():
                    self._shard = qe.EdgeShard.load(str(self.path))
                    return
                config = qe.EdgeConfig(vectors=qe.EdgeVectorParams(
                    size=self.dim, distance=qe.Distance.Cosine))
                self._shard = qe.EdgeShard.create(str(self.path), config)
                self._created = True
                self._complete.complete = not self.reuse
                # A tenant index: filtered queries of a small user become an
                # exact scan of that user's points instead of a filtered HNSW walk.
                self._shard.update(qe.UpdateOperation.create_field_index(
                    "user_id", qe.KeywordIndexParams(is_tenant=True)))
        await self._calls(self.timeout, asyncio.to_thread(open_shard))

    async def upsert(self, entries: Sequence[Entry], vectors: Sequence[Sequence[float]]) -> None:
        check_batch(entries, vectors, self.dim)
        if not entries:
            return
        points = [qe.Point(str(point_uuid(e.user_id, e.id)), [float(x) for x in v],
                           {"user_id": e.user_id, "entry_id": e.id})
                  for e, v in zip(entries, vectors, strict=True)]
        await self._run(lambda s: s.update(qe.UpdateOperation.upsert_points(points)))

    async def delete(self, user_id: str, entry_ids: Sequence[str]) -> None:
        if not entry_ids:
            return
        ids: list[qe.PointId] = [str(point_uuid(user_id, i)) for i in entry_ids]
        await self._run(lambda s: s.update(qe.UpdateOperation.delete_points(ids)))

    async def query(self, user_id: str, vector: Sequence[float], k: int) -> list[str]:
        k = check_k(k)
        self._complete.check()
        request = qe.QueryRequest(limit=k, query=qe.Query.Nearest([float(x) for x in vector]),
                                  filter=_user_filter(user_id),
                                  with_payload=["user_id", "entry_id"])
        points = await self._run(lambda s: s.query(request))
        return [str(p.payload["entry_id"]) for p in points
                if p.payload is not None and p.payload.get("user_id") == user_id]

    async def ids(self, user_id: str) -> set[str]:
        found: set[str] = set()
        offset: qe.PointId | None = None
        while True:
            request = qe.ScrollRequest(offset=offset, limit=1024, filter=_user_filter(user_id),
                                       with_payload=["user_id", "entry_id"])
            records, offset = await self._run(_scroll(request))
            found.update(str(r.payload["entry_id"]) for r in records
                         if r.payload is not None and r.payload.get("user_id") == user_id)
            if offset is None:
                return found

    async def delete_user(self, user_id: str) -> None:
        operation = qe.UpdateOperation.delete_points_by_filter(_user_filter(user_id))
        await self._run(lambda s: s.update(operation))

    async def drop(self) -> None:
        """Close the shard and delete its directory (and the temp root, if ours)."""
        def close_and_remove() -> None:
            with self._lock:
                if self._shard is not None:
                    self._shard.close()
                    self._shard = None
                shutil.rmtree(self.path, ignore_errors=True)
                if self._tmp is not None:
                    shutil.rmtree(self._tmp, ignore_errors=True)
        await self._calls(self.timeout, asyncio.to_thread(close_and_remove))
        self._created = False

    async def aclose(self) -> None:
        if (self._created and not self.reuse) or self._tmp is not None:
            await self.drop()
            return
        def close() -> None:
            with self._lock:
                if self._shard is not None:
                    self._shard.close()
                    self._shard = None
        await self._calls(self.timeout, asyncio.to_thread(close))
