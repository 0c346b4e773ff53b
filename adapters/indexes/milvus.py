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
consistency, so an upsert is searchable once it returns, or with Session where that
reads what the caller needs (``MilvusIndex._read_level``): then ``query`` on a pooled
collection may still return an id deleted since the index's last upsert, which the
store's archive drops.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import shutil
import tempfile
from collections.abc import Awaitable, Sequence
from pathlib import Path
from typing import Any

from pymilvus import AsyncMilvusClient, DataType, MilvusClient
from pymilvus.client.types import LoadState
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_fixed

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
from .milvus_pool import CollectionPool as CollectionPool
from .milvus_pool import pool_for

__all__ = ["CollectionPool", "MilvusIndex", "ServerMilvusIndex", "pool_for", "user_filter"]

_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_PAGE = 16_384  # Milvus' cap on offset + limit of one query
_FIELDS = ["user_id", "entry_id"]


def _sent_away(exc: BaseException) -> bool:
    """Whether a connect failed only because the server sent its connection away."""
    seen: set[int] = set()  # a chain may loop back (an error raised while handling itself)
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        if "Too many pings" in str(link):
            return True
        link = link.__cause__ or link.__context__
    return False


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


class MilvusIndex(IndexBase, SelfCheckingByCompleteness):
    """Vectors in one Milvus collection per namespace (or one lent by a ``CollectionPool``)."""

    name = "milvus"
    # Strong, or Session after this process's own upserts: every upsert is searchable
    # once it returns; measured in tests/test_indexes.py.
    search_staleness = 0.0

    def __init__(self, uri: str | None = None, *, namespace: str | None = None, dim: int = 384,
                 timeout: float = 5.0, token: str = "", reuse: bool = False,
                 pool: CollectionPool | None = None) -> None:
        super().__init__(namespace=namespace, dim=dim, timeout=timeout, reuse=reuse)
        self.collection = self.namespace
        """The collection this index reads and writes: its namespace, or one borrowed
        from ``pool`` (a reused namespace never borrows: its collection keeps its name)."""
        if pool is not None and (pool.uri, pool.dim) != (uri, dim):
            raise ValueError(f"the pool holds collections of dimension {pool.dim} on "
                             f"{pool.uri!r}, not {dim} on {uri!r}")
        self._pool = None if reuse else pool
        self._borrowed = False
        self._session_reads = True
        self._ticks = itertools.count(2)  # orders write starts and delete ends, for reads
        self._emptied_at = 1  # the pool's emptying, before any write of this index
        self._deleted_at = self._emptied_at  # as if a delete just returned
        self._upserted_from = 0
        self._complete = Completeness(self.name)
        self._tmp = tempfile.mkdtemp(prefix="nomnesia-milvus-") if uri is None else None
        self.uri = uri if uri is not None else str(Path(self._tmp or "") / "milvus.db")
        self._lite = not self.uri.startswith(("http://", "https://", "tcp://", "unix:"))
        self._token = token
        self._sync: MilvusClient | None = None
        self._async: AsyncMilvusClient | None = None
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
        """Connect, and create the collection (Strong consistency) if absent.

        With a pool, an empty collection of the pool's is borrowed instead when it has
        one, and a collection created here is given back to it on ``aclose``.
        """
        def connect_and_create() -> None:
            self._sync = self._connect()
            scalar_index: str | None = None
            if not self._lite:
                self._templates, scalar_index = server_features(
                    self._sync.get_server_version())
            if self._pool is not None:
                borrowed = self._pool.take(self._sync)
                if borrowed is not None:
                    self.collection, self._borrowed, self._created = borrowed, True, True
                    return
                self.collection = self._pool.new_name()
            elif self._sync.has_collection(self.collection):
                self._load_existing()
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
            self._sync.create_collection(self.collection, schema=schema,
                                         consistency_level="Strong")
            self._created = True
            self._borrowed = self._pool is not None
            self._complete.complete = not self.reuse
            # pymilvus waits 0.5 s before its first look at a new index, and
            # polls every 0.5 s; an empty collection's index is ready at once, on
            # Milvus Lite as on a server (the load below checks it exists).
            self._sync.create_index(self.collection, params, sync=False)
            self._sync.load_collection(self.collection)
        await self._calls(self.timeout, asyncio.to_thread(connect_and_create))
        self._async = AsyncMilvusClient(self.uri, token=self._token, timeout=self.timeout,
                                        **self._channel_options())

    def _load_existing(self) -> None:
        """Have a reused collection loaded, without waiting on a server that is reloading it.

        A restarted Milvus server reloads its loaded collections by itself, and its
        load progress lags behind: a blocking ``load_collection`` returned about 0.8 s
        after the collection already answered searches, and it had no deadline of its
        own. With the nemesis' 1 s store timeout every reopen after a server restart
        timed out in it, each attempt leaving a thread blocked in the wait, and a
        crashed client's successor took up to 28 s to answer. So a collection the
        server is reloading gets a load request only: writes go on, reads fail fast
        ("collection not loaded") until it serves, and a new store answered as soon
        as the server was healthy (``bench/bench_reopen.py``). Only a collection the
        server has not loaded at all (released by someone) is waited for, within
        the store's timeout.
        """
        assert self._sync is not None
        state = LoadState.NotLoad if self._lite else (
            self._sync.get_load_state(self.collection).get("state"))
        if state == LoadState.Loaded:
            return
        self._sync.load_collection(self.collection, timeout=self.timeout,
                                   _async=state == LoadState.Loading)

    def _connect(self) -> MilvusClient:
        """A sync client, with a connection the server has not just sent away.

        A Milvus server may end a connection with a GOAWAY "too_many_pings"
        (ENHANCE_YOUR_CALM: its keepalive policy counted the client's pings as
        abuse); the RPC in flight then fails UNAVAILABLE "Too many pings", unprocessed.
        pymilvus shares one connection per address among its clients, so a new
        client met it in its own Connect call (twice in about 30 runs of the
        tests, each time with two servers on 2 loaded cores; the server side of it
        is not understood). A fresh connection is fine, so that error alone is
        retried, twice; any other failure is the engine's and is raised at once.
        """
        for attempt in Retrying(retry=retry_if_exception(_sent_away), stop=stop_after_attempt(3),
                                wait=wait_fixed(0.1), reraise=True):
            with attempt:
                return MilvusClient(self.uri, token=self._token, timeout=self.timeout,
                                    **self._channel_options())
        raise AssertionError("unreachable: tenacity reraises the last error")

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
        await self._write(self._client().upsert(self.collection, rows, timeout=self.timeout),
                          upsert=True)
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
                sync.flush(self.collection)
                sync.compact(self.collection)
            await self._calls(self.timeout, asyncio.to_thread(flush_and_compact))

    async def _write(self, call: Awaitable[Any], *, upsert: bool = False) -> None:
        """A bounded write, with what ``_read_level`` needs to know of it."""
        started = next(self._ticks)
        try:
            await self._calls(self.timeout, call)
        except BaseException:
            self._session_reads = False  # it may land with a timestamp never seen here
            raise
        finally:
            if not upsert:
                self._deleted_at = next(self._ticks)
        if upsert:
            self._upserted_from = max(self._upserted_from, started)

    def _read_level(self, *, search: bool = False) -> str:
        """``Session`` where it reads what the caller needs, else ``Strong``.

        A Strong read waits for the server's next time tick after the read arrived
        (about 20 ms at the embedded server's 10 ms tick); a Session read only until
        the server has applied the newest write timestamp that pymilvus recorded in
        this process for the collection, so a read soon after another answers at once.
        It is Session only for the writers this process knows of: so only on a
        collection borrowed from the pool, whose name no other process or index is
        given, and never again after a write that failed or was given up on (it may
        land with a timestamp pymilvus never saw).

        Milvus 2.3 returns no timestamp for a delete (0; an upsert's is there), so a
        Session read may still see what a delete removed. ``ids`` (``search=False``)
        feeds ``consistent_state`` and the store's repairs, which must see deletes: it
        is Session only once an upsert that started after the last delete returned
        (a borrowed collection starts "after a delete", the pool's emptying). A
        ``search`` read needs only this index's own upserts, once it made one (whose
        timestamp is later than the pool's emptying, so no earlier borrower's row is
        read): its ids go through the archive, which decides what is live
        (``TieredMemoryStore.search``), so an id this index deleted since its last
        upsert is dropped there, and search never lags behind a compaction or a forget
        (SPEC G4). In a ``milvus-server`` suite run 2,800 of 5,400 searches were Strong
        only because of a delete, each waiting a tick (25 ms against 15 ms, loaded).
        """
        if not (self._borrowed and self._session_reads):
            return "Strong"
        horizon = self._emptied_at if search else self._deleted_at
        return "Session" if self._upserted_from > horizon else "Strong"

    async def delete(self, user_id: str, entry_ids: Sequence[str]) -> None:
        if not entry_ids:
            return
        pks = [str(point_uuid(user_id, i)) for i in entry_ids]
        await self._write(self._client().delete(self.collection, ids=pks, timeout=self.timeout))
        await self._wrote(len(pks))

    async def query(self, user_id: str, vector: Sequence[float], k: int) -> list[str]:
        k = check_k(k)
        self._complete.check()
        expr, params = self._filter(user_id)
        hits = await self._calls(self.timeout, self._client().search(
            self.collection, [[float(x) for x in vector]], limit=min(k, _PAGE), filter=expr,
            filter_params=params, output_fields=_FIELDS, anns_field="vec",
            consistency_level=self._read_level(search=True), timeout=self.timeout))
        return [str(h["entity"]["entry_id"]) for h in hits[0]
                if h["entity"].get("user_id") == user_id]

    async def ids(self, user_id: str) -> set[str]:
        expr, params = self._filter(user_id)
        rows = await self._calls(self.timeout, self._client().query(
            self.collection, filter=expr, filter_params=params, output_fields=_FIELDS,
            limit=_PAGE, consistency_level=self._read_level(), timeout=self.timeout))
        if len(rows) >= _PAGE:  # more than one query can return: iterate (rare)
            rows = await self._calls(self.timeout * 10,
                                 asyncio.to_thread(self._iterate, expr, params))
        return {str(r["entry_id"]) for r in rows if r.get("user_id") == user_id}

    def _iterate(self, expr: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        assert self._sync is not None
        iterator = self._sync.query_iterator(self.collection, batch_size=4096, filter=expr,
                                             filter_params=params, output_fields=_FIELDS,
                                             consistency_level=self._read_level())
        rows: list[dict[str, Any]] = []
        try:
            while batch := iterator.next():
                rows.extend(batch)
        finally:
            iterator.close()
        return rows

    async def delete_user(self, user_id: str) -> None:
        expr, params = self._filter(user_id)
        await self._write(self._client().delete(
            self.collection, filter=expr, filter_params=params, timeout=self.timeout))

    async def drop(self) -> None:
        if self._sync is not None:
            await self._calls(self.timeout,
                          asyncio.to_thread(self._sync.drop_collection, self.collection))
        self._created = False

    async def aclose(self) -> None:
        """Drop the collection if created here (or give it back to the pool); stop a
        private Milvus Lite."""
        try:
            if self._borrowed:
                await self._give_back()
            else:
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

    async def _give_back(self) -> None:
        """Empty the borrowed collection and return it to the pool, or else drop it.

        Only once every call given up on is over: one still running could write into
        the next borrower's collection. Whatever goes wrong, the collection is dropped
        (best effort) rather than pooled.
        """
        self._borrowed = False
        assert self._pool is not None
        pool, sync, name = self._pool, self._sync, self.collection
        try:
            await self._calls.drain(self.timeout)
            if sync is None:
                return
            await self._calls(self.timeout, asyncio.to_thread(pool.give, sync, name))
        except Exception:
            if sync is not None:
                with contextlib.suppress(Exception):
                    await self._calls(self.timeout, asyncio.to_thread(pool.discard, sync, name))
        finally:
            self._created = False


class ServerMilvusIndex(MilvusIndex):
    """MilvusIndex on a Milvus server, borrowing collections from its provider's pool.

    A server takes seconds to create and load a collection (Milvus Lite takes
    milliseconds, and searches a reused one's deleted rows one by one: its model
    test ran 16 s unpooled, 26 s pooled), so the stores of one provider lend each
    other emptied ones; a reopened namespace keeps its own collection.
    """

    @classmethod
    def for_provider(cls, provider: Any, target: str, *, namespace: str | None, dim: int,
                     timeout: float, reuse: bool) -> ServerMilvusIndex:
        """What ``stacks.open_engine_stack`` calls instead of the constructor."""
        pool = None if reuse else pool_for(provider, target, dim, timeout=timeout)
        return cls(target, namespace=namespace, dim=dim, timeout=timeout, reuse=reuse,
                   pool=pool)


def _release_lite(uri: str) -> None:
    """Stop the in-process Milvus Lite server that pymilvus started for ``uri``."""
    try:
        from milvus_lite.server_manager import server_manager_instance
    except ImportError:  # pragma: no cover - a server URI needs no milvus-lite
        return
    server_manager_instance.release_server(uri)
