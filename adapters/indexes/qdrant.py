"""QdrantIndex: a VectorIndex on Qdrant through qdrant-client's AsyncQdrantClient.

``target`` is ``":memory:"`` (local mode, in-process), a directory (local mode
on disk) or an ``http(s)://`` URL (a server). One collection per namespace.
Point ids are uuid5 of (user id, entry id), so an upsert replayed after a crash
overwrites instead of duplicating. The user filter is a structured
``FieldCondition``/``MatchValue``: the id is a value, never parsed.
"""

from __future__ import annotations

from collections.abc import Sequence

from qdrant_client import AsyncQdrantClient, models

from nomnesia.suite.contract import Entry

from ._common import (
    Completeness,
    IndexBase,
    SelfCheckingByCompleteness,
    check_batch,
    check_k,
    point_uuid,
    settle_and_drop,
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
        await self._calls(self.timeout, self._client.delete_collection(self.namespace))
        self._created = False

    async def upsert(self, entries: Sequence[Entry], vectors: Sequence[Sequence[float]]) -> None:
        check_batch(entries, vectors, self.dim)
        if not entries:
            return
        points = [
            models.PointStruct(id=str(point_uuid(e.user_id, e.id)), vector=list(map(float, v)),
                               payload={"user_id": e.user_id, "entry_id": e.id})
            for e, v in zip(entries, vectors, strict=True)
        ]
        await self._calls(self.timeout,
                      self._client.upsert(self.namespace, points, wait=True))

    async def delete(self, user_id: str, entry_ids: Sequence[str]) -> None:
        if not entry_ids:
            return
        selector = models.PointIdsList(points=[str(point_uuid(user_id, i)) for i in entry_ids])
        await self._calls(self.timeout,
                      self._client.delete(self.namespace, points_selector=selector, wait=True))

    async def query(self, user_id: str, vector: Sequence[float], k: int) -> list[str]:
        k = check_k(k)
        self._complete.check()
        response = await self._calls(self.timeout, self._client.query_points(
            self.namespace, query=list(map(float, vector)), query_filter=_user_filter(user_id),
            limit=k, with_payload=["user_id", "entry_id"]))
        return [str(p.payload["entry_id"]) for p in response.points
                if p.payload is not None and p.payload.get("user_id") == user_id]

    async def ids(self, user_id: str) -> set[str]:
        found: set[str] = set()
        offset: models.ExtendedPointId | None = None
        while True:
            points, offset = await self._calls(self.timeout, self._client.scroll(
                self.namespace, scroll_filter=_user_filter(user_id), limit=1024, offset=offset,
                with_payload=["user_id", "entry_id"]))
            found.update(str(p.payload["entry_id"]) for p in points
                         if p.payload is not None and p.payload.get("user_id") == user_id)
            if offset is None:
                return found

    async def delete_user(self, user_id: str) -> None:
        selector = models.FilterSelector(filter=_user_filter(user_id))
        await self._calls(self.timeout,
                      self._client.delete(self.namespace, points_selector=selector, wait=True))

    async def aclose(self) -> None:
        """Drop the namespace if this index created it, then close the client."""
        try:
            await settle_and_drop(self)
        finally:
            await self._client.close()
