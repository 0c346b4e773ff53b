"""QdrantIndex: a VectorIndex on Qdrant through qdrant-client's AsyncQdrantClient.

``target`` is ``":memory:"`` (local mode, in-process), a directory (local mode
on disk) or an ``http(s)://`` URL (a server). One collection per namespace, where
a server's tenant index on ``user_id`` keeps a user's reads to that user's points.
Point ids are uuid5 of (user id, entry id), so an upsert replayed after a crash
overwrites instead of duplicating. The user filter is a structured
``FieldCondition``/``MatchValue``: the id is a value, never parsed.

Local mode has no payload index: a filtered read checks the filter on every point of
the collection, in Python. In memory, where the client and its data are this index's
alone, each user therefore gets a collection of its own instead (named by the
namespace and the user's ``user_key``, never the id), read without a filter: in a
``qdrant`` suite run, filtered searches over the store's shared collection were a
fifth of the run's CPU.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from qdrant_client import AsyncQdrantClient, models

from nomnesia.suite.contract import Entry

from ..bounds import check_k
from ._common import (
    Completeness,
    IndexBase,
    SelfCheckingByCompleteness,
    check_batch,
    point_uuid,
    settle_and_drop,
    user_key,
)

__all__ = ["QdrantIndex"]


def _user_filter(user_id: str) -> models.Filter:
    return models.Filter(must=[
        models.FieldCondition(key="user_id", match=models.MatchValue(value=user_id)),
    ])


class QdrantIndex(IndexBase, SelfCheckingByCompleteness):
    """Vectors in one Qdrant collection, filtered by the ``user_id`` payload field."""

    name = "qdrant"
    # Every write passes wait=True: it returns once the point is searchable
    # (local mode applies writes synchronously; tests/test_indexes.py checks).
    search_staleness = 0.0

    def __init__(self, target: str = ":memory:", *, namespace: str | None = None,
                 dim: int = 384, timeout: float = 5.0, reuse: bool = False) -> None:
        super().__init__(namespace=namespace, dim=dim, timeout=timeout, reuse=reuse)
        self._complete = Completeness(self.name)
        self._server = target.startswith(("http://", "https://"))
        if self._server:
            self._client = AsyncQdrantClient(url=target, timeout=max(1, int(timeout)),
                                             check_compatibility=False)
        elif target == ":memory:":
            self._client = AsyncQdrantClient(location=":memory:")
        else:
            self._client = AsyncQdrantClient(path=target)
        self._created = False
        self._per_user = target == ":memory:"
        """A collection per user (see the module's docstring): only in memory, where no
        other client sees this data and nothing is reopened."""
        self._users: set[str] = set()  # the per-user collections that exist
        self._making = asyncio.Lock()

    def _collection(self, user_id: str) -> str:
        """The collection holding ``user_id``'s points."""
        return f"{self.namespace}_{user_key(user_id)}" if self._per_user else self.namespace

    def _filter(self, user_id: str) -> models.Filter | None:
        """The user filter, where the collection is not the user's alone."""
        return None if self._per_user else _user_filter(user_id)

    async def _user_collection(self, user_id: str) -> str:
        """The user's collection, created if absent (in memory: per user, on first write)."""
        name = self._collection(user_id)
        if not self._per_user or name in self._users:
            return name
        async with self._making:  # two first writes of one user: one creates
            if name not in self._users:
                if not await self._client.collection_exists(name):
                    await self._client.create_collection(name, vectors_config=models.VectorParams(
                        size=self.dim, distance=models.Distance.COSINE))
                self._users.add(name)
        return name

    async def create(self) -> None:
        """Create the collection if absent; ``aclose`` drops it only if created here."""
        async def run() -> None:
            if await self._client.collection_exists(self.namespace):
                return
            await self._client.create_collection(
                self.namespace,
                vectors_config=models.VectorParams(size=self.dim, distance=models.Distance.COSINE))
            self._created = True
            self._complete.complete = not self.reuse
            if self._server:  # local mode ignores payload indexes (and warns)
                await self._client.create_payload_index(
                    self.namespace, "user_id",
                    models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD,
                                              is_tenant=True), wait=True)
        await self._calls(self.timeout, run())

    async def drop(self) -> None:
        async def run() -> None:
            for name in sorted(self._users):
                await self._client.delete_collection(name)
                self._users.discard(name)
            await self._client.delete_collection(self.namespace)
        await self._calls(self.timeout, run())
        self._created = False

    async def upsert(self, entries: Sequence[Entry], vectors: Sequence[Sequence[float]]) -> None:
        check_batch(entries, vectors, self.dim)
        if not entries:
            return
        batches: dict[str, list[models.PointStruct]] = {}
        for e, v in zip(entries, vectors, strict=True):
            batches.setdefault(e.user_id, []).append(models.PointStruct(
                id=str(point_uuid(e.user_id, e.id)), vector=list(map(float, v)),
                payload={"user_id": e.user_id, "entry_id": e.id}))

        async def run() -> None:
            for user_id, points in batches.items():
                name = await self._user_collection(user_id)
                await self._client.upsert(name, points, wait=True)
        await self._calls(self.timeout, run())

    async def delete(self, user_id: str, entry_ids: Sequence[str]) -> None:
        if not entry_ids:
            return
        name = self._collection(user_id)
        if self._per_user and name not in self._users:
            return
        selector = models.PointIdsList(points=[str(point_uuid(user_id, i)) for i in entry_ids])
        await self._calls(self.timeout,
                      self._client.delete(name, points_selector=selector, wait=True))

    async def query(self, user_id: str, vector: Sequence[float], k: int) -> list[str]:
        k = check_k(k)
        self._complete.check()
        name = self._collection(user_id)
        if self._per_user and name not in self._users:
            return []
        response = await self._calls(self.timeout, self._client.query_points(
            name, query=list(map(float, vector)), query_filter=self._filter(user_id),
            limit=k, with_payload=["user_id", "entry_id"]))
        return [str(p.payload["entry_id"]) for p in response.points
                if p.payload is not None and p.payload.get("user_id") == user_id]

    async def ids(self, user_id: str) -> set[str]:
        found: set[str] = set()
        offset: models.ExtendedPointId | None = None
        name = self._collection(user_id)
        if self._per_user and name not in self._users:
            return found
        while True:
            points, offset = await self._calls(self.timeout, self._client.scroll(
                name, scroll_filter=self._filter(user_id), limit=1024, offset=offset,
                with_payload=["user_id", "entry_id"]))
            found.update(str(p.payload["entry_id"]) for p in points
                         if p.payload is not None and p.payload.get("user_id") == user_id)
            if offset is None:
                return found

    async def delete_user(self, user_id: str) -> None:
        name = self._collection(user_id)
        if self._per_user and name not in self._users:
            return
        # A user's own collection is emptied, not dropped: a read racing the forget
        # then finds it empty instead of gone (an error).
        selector = models.FilterSelector(filter=self._filter(user_id) or models.Filter())
        await self._calls(self.timeout,
                      self._client.delete(name, points_selector=selector, wait=True))

    async def aclose(self) -> None:
        """Drop the namespace if this index created it, then close the client."""
        try:
            await settle_and_drop(self)
        finally:
            await self._client.close()
