"""MilvusIndex: a VectorIndex on Milvus through pymilvus (Milvus Lite or a server).

``uri`` is a Milvus Lite ``.db`` path, an ``http(s)://`` server URI, or None for
a private Milvus Lite in a temp dir (stopped and removed on ``aclose``).
Collections are created with the sync ``MilvusClient`` (the async client
cannot create indexes on Milvus Lite); data calls use ``AsyncMilvusClient``.

The user filter compares ``user_key`` (hex SHA-256 of the user id) and never
contains the id itself. On a server of 2.5 or later the value is also passed as
a filter template parameter (``filter_params``); Milvus Lite and older servers
(the embedded ``milvus-server`` is 2.3) have no templates, and the hex-only
value is what keeps their literal free of syntax. Reads run with Strong
consistency, so an upsert is searchable once it returns.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pymilvus import AsyncMilvusClient, DataType, MilvusClient

from nomnesia.suite.contract import Entry

from ..tiers import check_namespace, new_namespace
from ._common import (
    Calls,
    Completeness,
    SelfCheckingByCompleteness,
    check_batch,
    check_k,
    point_uuid,
    settle_and_drop,
    user_key,
)

__all__ = ["MilvusIndex", "user_filter"]

_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_PAGE = 16_384  # Milvus' cap on offset + limit of one query
_FIELDS = ["user_id", "entry_id"]


def server_features(version: str) -> tuple[bool, str | None]:
    """(filter templates, scalar index type for ``user_key``) of a server version.

    Templates came with Milvus 2.5; the INVERTED scalar index with 2.4, before
    which a VARCHAR field takes a ``Trie``. ``v2.3.5-lite`` (the milvus wheel's
    server) and ``2.6.6`` both parse; an unparsable version gets the newest.
    """
    match = re.match(r"^v?(\d+)\.(\d+)", version.strip())
    if match is None:
        return True, "INVERTED"
    release = (int(match.group(1)), int(match.group(2)))
    return release >= (2, 5), "INVERTED" if release >= (2, 4) else "Trie"


def user_filter(user_id: str, *, templates: bool) -> tuple[str, dict[str, Any]]:
    """The filter expression (and its params) that selects one user's rows."""
    key = user_key(user_id)
    assert _HEX64.match(key)  # the literal below must never carry syntax
    if templates:
        return "user_key == {uk}", {"uk": key}
    return f'user_key == "{key}"', {}


class MilvusIndex(SelfCheckingByCompleteness):
    """Vectors in one Milvus collection per namespace."""

    name = "milvus"
    search_staleness = 0.0  # consistency_level="Strong"; measured in tests/test_indexes.py

    def __init__(self, uri: str | None = None, *, namespace: str | None = None, dim: int = 384,
                 timeout: float = 5.0, token: str = "", reuse: bool = False) -> None:
        self.namespace = check_namespace(namespace or new_namespace())
        self.dim = dim
        self.timeout = timeout
        self._calls = Calls(self.name)
        self.reuse = reuse
        self._complete = Completeness(self.name)
        self._tmp = tempfile.mkdtemp(prefix="nomnesia-milvus-") if uri is None else None
        self.uri = uri if uri is not None else str(Path(self._tmp or "") / "milvus.db")
        self._lite = not self.uri.startswith(("http://", "https://", "tcp://", "unix:"))
        self._token = token
        self._sync: MilvusClient | None = None
        self._async: AsyncMilvusClient | None = None
        self._created = False
        self._templates = not self._lite  # settled by the server's version in create()
        # Milvus Lite searches its memtable row by row and never flushes it
        # until 128 MiB: every ``lite_flush_every`` written rows, flush and
        # compact. 128 measured best (600 appends + queries: query time 14.6 s
        # unflushed, 5.2 s at 512, 2.3 s at 128, 2.6 s at 32).
        self.lite_flush_every = 128 if self._lite else 0
        self._unflushed = 0
        self._flushing = asyncio.Lock()

    def _filter(self, user_id: str) -> tuple[str, dict[str, Any]]:
        return user_filter(user_id, templates=self._templates)

    def _client(self) -> AsyncMilvusClient:
        if self._async is None:
            raise RuntimeError("index is not open: call create() first")
        return self._async

    async def create(self) -> None:
        """Connect, and create the collection (Strong consistency) if absent."""
        def connect_and_create() -> None:
            self._sync = MilvusClient(self.uri, token=self._token, timeout=self.timeout,
                                      **self._channel_options())
            scalar_index: str | None = None
            if not self._lite:
                self._templates, scalar_index = server_features(
                    self._sync.get_server_version())
            if self._sync.has_collection(self.namespace):
                self._sync.load_collection(self.namespace)  # released after a restart
                return
            schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
            schema.add_field("pk", DataType.VARCHAR, is_primary=True, max_length=36)
            schema.add_field("user_key", DataType.VARCHAR, max_length=64)
            schema.add_field("user_id", DataType.VARCHAR, max_length=1024)  # 256 code points
            schema.add_field("entry_id", DataType.VARCHAR, max_length=512)  # 128 code points
            schema.add_field("vec", DataType.FLOAT_VECTOR, dim=self.dim)
            params = self._sync.prepare_index_params()
            params.add_index("vec", index_type="FLAT" if self._lite else "AUTOINDEX",
                             metric_type="COSINE")
            if scalar_index is not None:
                params.add_index("user_key", index_type=scalar_index)
            self._sync.create_collection(self.namespace, schema=schema,
                                         consistency_level="Strong")
            self._created = True
            self._complete.complete = not self.reuse
            # pymilvus waits 0.5 s before its first look at a new index, and
            # polls every 0.5 s; an empty collection's index is ready at once, on
            # Milvus Lite as on a server (the load below checks it exists).
            self._sync.create_index(self.namespace, params, sync=False)
            self._sync.load_collection(self.namespace)
        await self._calls(self.timeout, asyncio.to_thread(connect_and_create))
        self._async = AsyncMilvusClient(self.uri, token=self._token, timeout=self.timeout,
                                        **self._channel_options())

    def _channel_options(self) -> dict[str, Any]:
        """gRPC reconnects fast to a server that came back (not Milvus Lite: a file).

        After a failed connect gRPC waits 1 s, then 1.6 times longer each time, up
        to 120 s, before it tries again: the nemesis cut a Milvus server off for
        0.14 s and the store then stopped answering. Retrying within a second
        keeps recovery inside the store's own timeout (G12).
        """
        if self._lite:
            return {}
        return {"grpc_options": {"grpc.initial_reconnect_backoff_ms": 100,
                                 "grpc.min_reconnect_backoff_ms": 100,
                                 "grpc.max_reconnect_backoff_ms": 1000}}

    # Every call carries the store's timeout as its gRPC deadline: a call the store
    # gave up on (``Calls``) must end, since every later call of this index waits for
    # it. Without a deadline a call sent into a network black hole never ended, and
    # the nemesis saw the store fail everything from then on.

    async def upsert(self, entries: Sequence[Entry], vectors: Sequence[Sequence[float]]) -> None:
        check_batch(entries, vectors, self.dim)
        if not entries:
            return
        rows = [{"pk": str(point_uuid(e.user_id, e.id)), "user_key": user_key(e.user_id),
                 "user_id": e.user_id, "entry_id": e.id, "vec": [float(x) for x in v]}
                for e, v in zip(entries, vectors, strict=True)]
        await self._calls(self.timeout, self._client().upsert(self.namespace, rows,
                                                                      timeout=self.timeout))
        await self._wrote(len(rows))

    async def _wrote(self, rows: int) -> None:
        self._unflushed += rows
        if not self.lite_flush_every or self._unflushed < self.lite_flush_every:
            return
        async with self._flushing:
            if self._unflushed < self.lite_flush_every or self._sync is None:
                return
            self._unflushed = 0
            sync = self._sync

            def flush_and_compact() -> None:
                sync.flush(self.namespace)
                sync.compact(self.namespace)
            await self._calls(self.timeout, asyncio.to_thread(flush_and_compact))

    async def delete(self, user_id: str, entry_ids: Sequence[str]) -> None:
        if not entry_ids:
            return
        pks = [str(point_uuid(user_id, i)) for i in entry_ids]
        await self._calls(self.timeout, self._client().delete(self.namespace, ids=pks,
                                                                      timeout=self.timeout))
        await self._wrote(len(pks))

    async def query(self, user_id: str, vector: Sequence[float], k: int) -> list[str]:
        k = check_k(k)
        self._complete.check()
        expr, params = self._filter(user_id)
        hits = await self._calls(self.timeout, self._client().search(
            self.namespace, [[float(x) for x in vector]], limit=min(k, _PAGE), filter=expr,
            filter_params=params, output_fields=_FIELDS, anns_field="vec",
            timeout=self.timeout))
        return [str(h["entity"]["entry_id"]) for h in hits[0]
                if h["entity"].get("user_id") == user_id]

    async def ids(self, user_id: str) -> set[str]:
        expr, params = self._filter(user_id)
        rows = await self._calls(self.timeout, self._client().query(
            self.namespace, filter=expr, filter_params=params, output_fields=_FIELDS,
            limit=_PAGE, timeout=self.timeout))
        if len(rows) >= _PAGE:  # more than one query can return: iterate (rare)
            rows = await self._calls(self.timeout * 10,
                                 asyncio.to_thread(self._iterate, expr, params))
        return {str(r["entry_id"]) for r in rows if r.get("user_id") == user_id}

    def _iterate(self, expr: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        assert self._sync is not None
        iterator = self._sync.query_iterator(self.namespace, batch_size=4096, filter=expr,
                                             filter_params=params, output_fields=_FIELDS)
        rows: list[dict[str, Any]] = []
        try:
            while batch := iterator.next():
                rows.extend(batch)
        finally:
            iterator.close()
        return rows

    async def delete_user(self, user_id: str) -> None:
        expr, params = self._filter(user_id)
        await self._calls(self.timeout, self._client().delete(
            self.namespace, filter=expr, filter_params=params, timeout=self.timeout))

    async def drop(self) -> None:
        if self._sync is not None:
            await self._calls(self.timeout,
                          asyncio.to_thread(self._sync.drop_collection, self.namespace))
        self._created = False

    async def aclose(self) -> None:
        """Drop the collection if created here; stop a private Milvus Lite."""
        try:
            await settle_and_drop(self)
        finally:
            if self._async is not None:
                await self._async.close()
                self._async = None
            if self._sync is not None:
                self._sync.close()
                self._sync = None
            if self._tmp is not None:
                _release_lite(self.uri)
                shutil.rmtree(self._tmp, ignore_errors=True)


def _release_lite(uri: str) -> None:
    """Stop the in-process Milvus Lite server that pymilvus started for ``uri``."""
    try:
        from milvus_lite.server_manager import server_manager_instance
    except ImportError:  # pragma: no cover - a server URI needs no milvus-lite
        return
    server_manager_instance.release_server(uri)
