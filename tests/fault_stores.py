"""Four-method stores on the suite's engines, as a team would write them: the faults' controls.

Each is the seed's profile (``append_message``, ``get_history``, ``compact``,
``consistent_state``) on engines from ``engine_url``, so the partial-failure test
(``suite/test_faults.py``) and the nemesis can fault them:

- :func:`retrying`: a Redis list written with a plain ``RPUSH`` through redis-py's
  default client (``redis.asyncio.Redis(host=..., port=...)``), which resends a
  command after a connection error, a lost reply included. One acknowledged
  append is then stored twice (G2).
- :func:`not_retrying`: the same store with redis-py's retries turned off: a lost
  reply raises, and the append is stored once. Correct.
- :func:`takeback`: a Redis list plus a PostgreSQL copy; when the PostgreSQL insert
  raises, the store takes the Redis entry back. Wrong exactly when PostgreSQL
  committed and only the reply was lost: the tiers disagree forever (G11). Its two
  writes are shielded from cancellation, so every fault-free test passes it.

- :func:`ephemeral`: the not-retrying store written the way many are, with a fresh random
  key prefix per store object, deleted on close: correct for one object, but its data
  dies with it, so the nemesis (whose workers and final reader each open their own) must
  refuse it with its usage sentence, never report its appends lost.

- :func:`tagged`: asks for the namespace, but tags its keys with an id of its own store
  object too (as AutoGen's ``RedisMemory`` tags each message with its instance's id): a
  second object in the same namespace reads nothing the first wrote (G1 across a reopen).

- :func:`half_forget`: the Redis list and its PostgreSQL copy, with a ``forget`` that
  deletes the list and leaves the rows: every read after the forget is empty, so only a
  look inside the engines finds the user (G8, the suite's scan after forget).

- :func:`threaded_pg`: a history on PostgreSQL through psycopg's *synchronous* driver,
  every call in ``asyncio.to_thread`` (as agno's stores are reached): under a paused
  engine its calls fill the default executor, which must not keep the suite's faults from
  healing (issue 48).

Every other store keeps its data under ``engines.store_namespace()`` (a key prefix, a table)
and drops it on close unless ``engines.keep_data()``: fresh and dropped in the suite,
shared and kept across the nemesis's worker processes until its final read.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import threading
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import redis.asyncio as aioredis
from psycopg_pool import AsyncConnectionPool
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from nomnesia.adapters.engines.session import engine_url, keep_data, store_namespace

KEEP = 4

_COMPACT = """
local items = redis.call('LRANGE', KEYS[1], 0, -1)
local keep = tonumber(ARGV[1])
local covered, first = 0, 1
if #items > 0 then
  local head = cjson.decode(items[1])
  if head['covers'] then covered, first = head['covers'], 2 end
end
local messages = #items - first + 1
if messages <= keep then return 0 end
local n = messages - keep
local summary = cjson.encode({role='system', content='summary of ' .. (covered + n) ..
  ' messages ' .. ARGV[2], covers=covered + n})
redis.call('LTRIM', KEYS[1], first - 1 + n, -1)
redis.call('LPUSH', KEYS[1], summary)
return n
"""


class RedisListStore:
    """A user's history as one Redis list of JSON items, a summary first after compaction."""

    def __init__(self, url: str, *, retries: bool, prefix: str | None = None) -> None:
        # redis-py's constructor, as most code calls it: it retries a command after a
        # connection error (``Redis.from_url`` in redis-py 8.2 does not, by default).
        parts = urlsplit(url)
        options: dict[str, Any] = {"host": parts.hostname, "port": parts.port,
                                   "socket_timeout": 2.0, "socket_connect_timeout": 2.0}
        if not retries:
            options["retry"] = Retry(NoBackoff(), 0)
        self.redis = aioredis.Redis(**options)
        self.prefix = prefix or f"nmfs:{store_namespace()}:"
        self._compact = self.redis.register_script(_COMPACT)

    def key(self, user_id: str) -> str:
        return self.prefix + user_id

    async def append_message(self, user_id: str, role: str, content: str) -> None:
        await self.redis.rpush(self.key(user_id), json.dumps({"role": role, "content": content}))

    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]:
        limit = min(limit, 1 << 40)
        raw = await self.redis.lrange(self.key(user_id), -limit, -1)
        items = [json.loads(item) for item in raw]
        return [{"role": item["role"], "content": item["content"]} for item in items]

    async def compact(self, user_id: str) -> None:
        await self._compact(keys=[self.key(user_id)], args=[KEEP, secrets.token_hex(4)])

    async def consistent_state(self, user_id: str) -> bool:
        return True  # one tier: nothing to disagree with

    async def _items(self, user_id: str) -> list[dict[str, Any]]:
        return [json.loads(item) for item in await self.redis.lrange(self.key(user_id), 0, -1)]

    async def aclose(self) -> None:
        try:
            if not keep_data():
                keys = [key async for key in self.redis.scan_iter(match=self.prefix + "*")]
                if keys:
                    await self.redis.delete(*keys)
        finally:
            await self.redis.aclose()


class TakebackStore(RedisListStore):
    """The Redis list plus a PostgreSQL copy; a failed insert takes the Redis entry back."""

    def __init__(self, redis_url: str, pool: AsyncConnectionPool[Any], table: str) -> None:
        super().__init__(redis_url, retries=False)
        self.pool = pool
        self.table = table

    async def append_message(self, user_id: str, role: str, content: str) -> None:
        # Shielded, so a cancelled caller cannot split the two writes: without faults this
        # store passes the whole suite, cancellation tests included.
        await asyncio.shield(self._append(user_id, role, content))

    async def _append(self, user_id: str, role: str, content: str) -> None:
        item = json.dumps({"role": role, "content": content})
        await self.redis.rpush(self.key(user_id), item)
        try:
            async with self.pool.connection() as conn:
                await conn.execute(f"INSERT INTO {self.table} (user_id, content) VALUES (%s, %s)",
                                   (user_id, json.dumps(content)))
        except Exception:
            await self.redis.lrem(self.key(user_id), -1, item)  # the compensation: wrong
            raise                                                # when the insert committed

    async def consistent_state(self, user_id: str) -> bool:
        """Every live message is archived, and the archive holds no message the list lost."""
        items = await self._items(user_id)
        covered = int(items[0]["covers"]) if items and "covers" in items[0] else 0
        live = Counter(json.dumps(i["content"]) for i in items if "covers" not in i)
        async with self.pool.connection() as conn:
            cur = await conn.execute(f"SELECT content FROM {self.table} WHERE user_id = %s",
                                     (user_id,))
            archived = Counter(row[0] for row in await cur.fetchall())
        return live <= archived and archived.total() == covered + live.total()


@asynccontextmanager
async def _closing(store: RedisListStore) -> AsyncIterator[RedisListStore]:
    try:
        yield store
    finally:
        await store.aclose()


def retrying() -> AbstractAsyncContextManager[RedisListStore]:
    return _closing(RedisListStore(engine_url("redis"), retries=True))


def not_retrying() -> AbstractAsyncContextManager[RedisListStore]:
    return _closing(RedisListStore(engine_url("redis"), retries=False))


class HalfForgetStore(TakebackStore):
    """Reads come from the Redis list; ``forget`` deletes only that, the archive keeps the rows."""

    async def forget(self, user_id: str) -> None:
        await self.redis.delete(self.key(user_id))

    async def consistent_state(self, user_id: str) -> bool:
        return True  # it does not know it kept the rows: only a scan can tell


def half_forget() -> AbstractAsyncContextManager[TakebackStore]:
    return takeback(HalfForgetStore)


@asynccontextmanager
async def takeback(kind: type[TakebackStore] = TakebackStore) -> AsyncIterator[TakebackStore]:
    table = f"nmfs_{store_namespace()}"  # letters, digits and _ only
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        engine_url("postgres"), min_size=1, max_size=4, open=False, timeout=5.0,
        kwargs={"autocommit": True, "connect_timeout": 2})
    await pool.open(wait=True)
    try:
        async with pool.connection() as conn:
            await conn.execute(f"CREATE TABLE IF NOT EXISTS {table} (user_id text, content text)")
        store = kind(engine_url("redis"), pool, table)
        try:
            yield store
        finally:
            try:
                if not keep_data():
                    async with pool.connection() as conn:
                        await conn.execute(f"DROP TABLE IF EXISTS {table}")
            finally:
                await store.aclose()
    finally:
        await pool.close()


def pgvector_stack() -> Any:
    """The built-in pgvector stack as a user's ``--store`` factory on the suite's engines:
    ``open_store`` with the engine session's provider, routed so faults reach it."""
    from nomnesia.adapters import open_store
    from nomnesia.adapters.engines.session import current_session

    return open_store("pgvector", provider=current_session().routed())


class NeverAnswers(RedisListStore):
    """Reaches Redis, then fails every call for a reason of its own, faults or not."""

    async def append_message(self, user_id: str, role: str, content: str) -> None:
        await self.redis.ping()
        raise RuntimeError("this store fails every call")

    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]:
        await self.redis.ping()
        raise RuntimeError("this store fails every call")


def never_answers() -> AbstractAsyncContextManager[RedisListStore]:
    return _closing(NeverAnswers(engine_url("redis"), retries=False))


class EphemeralStore(RedisListStore):
    """Its own random prefix, always dropped on close: nothing outlives the object."""

    def __init__(self, url: str) -> None:
        super().__init__(url, retries=False, prefix=f"nmfs:eph{secrets.token_hex(6)}:")

    async def aclose(self) -> None:
        try:
            keys = [key async for key in self.redis.scan_iter(match=self.prefix + "*")]
            if keys:
                await self.redis.delete(*keys)
        finally:
            await self.redis.aclose()


def ephemeral() -> AbstractAsyncContextManager[RedisListStore]:
    return _closing(EphemeralStore(engine_url("redis")))


def tagged() -> AbstractAsyncContextManager[RedisListStore]:
    return _closing(RedisListStore(engine_url("redis"), retries=False,
                                   prefix=f"nmfs:{store_namespace()}:{secrets.token_hex(3)}:"))


class ThreadedPgStore:
    """A user's history as rows of one table, each call a synchronous query in a worker thread
    on that thread's own connection: correct, and unable to answer while its engine is paused.

    One connection per worker thread, kept between calls, as a synchronous client of a
    thread pool keeps one. A store that opened a connection per call was never hit by a
    lost reply unless a call happened to be in flight when the fault was set (the toxic
    loses replies on the connections open at that moment), and a round of ``nox -s
    tests``, loaded, found none: not exercised, so the test that runs this store failed.
    A connection a fault broke is dropped, and the thread opens a new one on its next call.
    """

    def __init__(self, url: str, table: str) -> None:
        self.url, self.table = url, table
        self._local = threading.local()
        self._all: list[Any] = []
        self._lock = threading.Lock()

    def _connection(self) -> Any:
        import psycopg

        conn = getattr(self._local, "conn", None)
        if conn is None or conn.closed:
            conn = psycopg.connect(self.url, autocommit=True)  # no timeout: it waits
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    def _run(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        import psycopg

        conn = self._connection()
        try:
            cur = conn.execute(sql, args)
            return cur.fetchall() if cur.description else []
        except psycopg.OperationalError:
            self._local.conn = None
            conn.close()
            raise

    def close(self) -> None:
        """Close every thread's connection (from any thread: psycopg allows it)."""
        with self._lock:
            conns, self._all = self._all, []
        for conn in conns:
            conn.close()

    async def append_message(self, user_id: str, role: str, content: str) -> None:
        await asyncio.to_thread(self._run, f"INSERT INTO {self.table} (user_id, role, content)"
                                           " VALUES (%s, %s, %s)", (user_id, role, content))

    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]:
        rows = await asyncio.to_thread(
            self._run, f"SELECT role, content FROM {self.table} WHERE user_id = %s "
                       "ORDER BY id DESC LIMIT %s", (user_id, min(limit, 1 << 40)))
        return [{"role": role, "content": content} for role, content in reversed(rows)]

    async def forget(self, user_id: str) -> None:
        await asyncio.to_thread(self._run, f"DELETE FROM {self.table} WHERE user_id = %s",
                                (user_id,))


@asynccontextmanager
async def threaded_pg() -> AsyncIterator[ThreadedPgStore]:
    store = ThreadedPgStore(engine_url("postgres"), f"nmfs_{store_namespace()}")
    await asyncio.to_thread(store._run, f"CREATE TABLE IF NOT EXISTS {store.table} "
                                        "(id bigserial PRIMARY KEY, user_id text, role text, "
                                        "content text)")
    try:
        yield store
    finally:
        try:
            if not keep_data():
                await asyncio.to_thread(store._run, f"DROP TABLE IF EXISTS {store.table}")
        finally:
            store.close()


class PingsOnce(RedisListStore):
    """Asks for Redis and pings it once, then keeps every history in memory: correct, but
    no fault on Redis can hit any of its calls (the control of "not exercised")."""

    def __init__(self, url: str) -> None:
        super().__init__(url, retries=False)
        self.lists: dict[str, list[dict[str, str]]] = {}
        self.pinged = False

    async def append_message(self, user_id: str, role: str, content: str) -> None:
        self.lists.setdefault(user_id, []).append({"role": role, "content": content})

    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]:
        if not self.pinged:
            await self.redis.ping()
            self.pinged = True
        items = self.lists.get(user_id, [])
        return items[-limit:] if limit > 0 else []

    async def compact(self, user_id: str) -> None:
        """Nothing to compact: the list is kept whole."""

    async def consistent_state(self, user_id: str) -> bool:
        return True


def pings_once() -> AbstractAsyncContextManager[RedisListStore]:
    return _closing(PingsOnce(engine_url("redis")))
