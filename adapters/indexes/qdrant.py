"""QdrantIndex: a VectorIndex on Qdrant through qdrant-client's AsyncQdrantClient.

``target`` is ``":memory:"`` (local mode, in-process), a directory (local mode
on disk) or an ``http(s)://`` URL (a server). One collection per namespace, where
a server's tenant index on ``user_id`` keeps a user's reads to that user's points.
Point ids are uuid5 of (user id, entry id), so an upsert replayed after a crash
overwrites instead of duplicating. The user filter is a structured
``FieldCondition``/``MatchValue``: the id is a value, never parsed.

Local mode has no payload index: a filtered read checks the filter on every point of
the collection, in Python. In memory, where the client and its data are this index's
alone, each user therefore gets a collection of its own instead, read without a filter:
in a ``qdrant`` suite run, filtered searches over the store's shared collection were a
fifth of the run's CPU. Its name is the namespace and a random token (kept in this
object, which is the only one that sees the data), never the id nor a digest of it, and
``delete_user`` drops it: a forgotten user leaves no collection that anyone holding the
user id could find (SPEC G8; a SHA-256 of an id still names the id).
"""

from __future__ import annotations

import asyncio
import secrets
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
        self._users: dict[str, str] = {}  # user id -> its collection, while it has one
        self._making = asyncio.Lock()

    def _collection(self, user_id: str) -> str | None:
        """The collection holding ``user_id``'s points (None: the user has none now)."""
        return self._users.get(user_id) if self._per_user else self.namespace

    def _gone(self, user_id: str, name: str, exc: Exception) -> bool:
        """Whether ``exc`` came from ``name`` being dropped by a forget of ``user_id`` that
        raced the call (then the user has no points: an empty answer, not an error)."""
        return self._per_user and self._users.get(user_id) != name

    def _filter(self, user_id: str) -> models.Filter | None:
        """The user filter, where the collection is not the user's alone."""
        return None if self._per_user else _user_filter(user_id)

    async def _user_collection(self, user_id: str) -> str:
        """The user's collection, created if absent (in memory: per user, on first write)."""
        name = self._collection(user_id)
        if name is not None:
            return name
        async with self._making:  # two first writes of one user: one creates
            name = self._users.get(user_id)
            if name is None:
                name = f"{self.namespace}_{secrets.token_hex(8)}"
                await self._client.create_collection(name, vectors_config=models.VectorParams(
                    size=self.dim, distance=models.Distance.COSINE))
                self._users[user_id] = name
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
            for user_id, name in sorted(self._users.items()):
                await self._client.delete_collection(name)
                self._users.pop(user_id, None)
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
        if name is None:
            return
        selector = models.PointIdsList(points=[str(point_uuid(user_id, i)) for i in entry_ids])
        try:
            await self._calls(self.timeout,
                              self._client.delete(name, points_selector=selector, wait=True))
        except Exception as exc:
            if not self._gone(user_id, name, exc):
                raise

    async def query(self, user_id: str, vector: Sequence[float], k: int) -> list[str]:
        k = check_k(k)
        self._complete.check()
        name = self._collection(user_id)
        if name is None:
            return []
        try:
            response = await self._calls(self.timeout, self._client.query_points(
                name, query=list(map(float, vector)), query_filter=self._filter(user_id),
                limit=k, with_payload=["user_id", "entry_id"]))
        except Exception as exc:
            if self._gone(user_id, name, exc):
                return []
            raise
        return [str(p.payload["entry_id"]) for p in response.points
                if p.payload is not None and p.payload.get("user_id") == user_id]

    async def ids(self, user_id: str) -> set[str]:
        found: set[str] = set()
        offset: models.ExtendedPointId | None = None
        name = self._collection(user_id)
        if name is None:
            return found
        while True:
            try:
                points, offset = await self._calls(self.timeout, self._client.scroll(
                    name, scroll_filter=self._filter(user_id), limit=1024, offset=offset,
                    with_payload=["user_id", "entry_id"]))
            except Exception as exc:
                if self._gone(user_id, name, exc):
                    return set()
                raise
            found.update(str(p.payload["entry_id"]) for p in points
                         if p.payload is not None and p.payload.get("user_id") == user_id)
            if offset is None:
                return found

    async def delete_user(self, user_id: str) -> None:
        if self._per_user:
            # The user's own collection goes with the user; a read racing this finds it
            # gone and answers empty (``_gone``), as it would for a user never written.
            async with self._making:
                name = self._users.pop(user_id, None)
                if name is None:
                    return
                try:
                    await self._calls(self.timeout, self._client.delete_collection(name))
                except BaseException:
                    self._users.setdefault(user_id, name)  # still there: forget again later
                    raise
            return
        selector = models.FilterSelector(filter=_user_filter(user_id))
        await self._calls(self.timeout,
                          self._client.delete(self.namespace, points_selector=selector,
                                              wait=True))

    async def aclose(self) -> None:
        """Drop the namespace if this index created it, then close the client."""
        try:
            await settle_and_drop(self)
        finally:
            await self._client.close()
