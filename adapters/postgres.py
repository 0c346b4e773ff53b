"""The PostgreSQL archive, with psycopg 3 and one connection pool per store.

Everything lives in one schema per store (``nm_<hex>``), created by ``create``
and dropped by ``drop``, so many stores share one server unseen and a test run
leaves nothing behind. User ids, entry ids and contents are always bound
parameters; the schema name is composed with ``sql.Identifier``.

Each archive write is one call of a PL/pgSQL function, i.e. one round trip and
one transaction: the per-user row in ``users`` is locked (by the upsert that
hands out the seq), so appends, compactions and forgets of one user serialise
in the database even across processes. Ids and contents are stored as bytea
(UTF-8): PostgreSQL ``text`` cannot hold NUL, which SPEC.md allows.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Any

import psycopg
from psycopg import AsyncConnection, sql
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from nomnesia.suite.contract import SUMMARY_ROLE, Entry
from nomnesia.suite.contract.errors import BackendTimeout, BackendUnavailable

from .abandoned import retrieve
from .bounds import clamp_limit
from .tiers import StalePrefix, check_namespace

__all__ = ["PostgresArchive", "connection", "create_pool", "drop_schema", "in_schema"]

_COLUMNS = "id, seq, role, content, covers"

_DDL = """
CREATE SCHEMA {s};
CREATE TABLE {s}.users (uid text PRIMARY KEY, next_seq bigint NOT NULL);
CREATE TABLE {s}.entries (
    uid text NOT NULL, id bytea NOT NULL, seq bigint NOT NULL, role text NOT NULL,
    content bytea NOT NULL, covers bytea[] NOT NULL DEFAULT '{{}}', covered_by bytea,
    PRIMARY KEY (uid, id));
CREATE UNIQUE INDEX ON {s}.entries (uid, seq) WHERE covered_by IS NULL;
CREATE TABLE {s}.outbox (id bigserial PRIMARY KEY, uid text NOT NULL);
CREATE INDEX ON {s}.outbox (uid);

CREATE FUNCTION {s}.append(p_uid text, p_id bytea, p_role text, p_content bytea, p_done bigint[])
RETURNS TABLE (r_seq bigint, r_role text, r_content bytea, r_outbox bigint)
LANGUAGE plpgsql AS $f$
DECLARE v_seq bigint; v_ob bigint;
BEGIN
    IF cardinality(p_done) > 0 THEN DELETE FROM {s}.outbox WHERE id = ANY(p_done); END IF;
    -- the upsert locks the user's row until commit: one writer per user at a time
    INSERT INTO {s}.users AS u (uid, next_seq) VALUES (p_uid, 2)
        ON CONFLICT (uid) DO UPDATE SET next_seq = u.next_seq + 1
        RETURNING u.next_seq - 1 INTO v_seq;
    RETURN QUERY SELECT e.seq, e.role, e.content, NULL::bigint
        FROM {s}.entries e WHERE e.uid = p_uid AND e.id = p_id;
    IF FOUND THEN RETURN; END IF;
    INSERT INTO {s}.entries (uid, id, seq, role, content)
        VALUES (p_uid, p_id, v_seq, p_role, p_content);
    INSERT INTO {s}.outbox (uid) VALUES (p_uid) RETURNING id INTO v_ob;
    RETURN QUERY SELECT v_seq, p_role, NULL::bytea, v_ob;
END $f$;

CREATE FUNCTION {s}.compact(p_uid text, p_prefix bytea[], p_last_seq bigint, p_sid bytea,
                            p_content bytea, p_covers bytea[])
RETURNS bigint LANGUAGE plpgsql AS $f$
DECLARE v_ob bigint; v_live bytea[];
BEGIN
    PERFORM 1 FROM {s}.users WHERE uid = p_uid FOR UPDATE;
    SELECT coalesce(array_agg(id ORDER BY seq), '{{}}') INTO v_live FROM {s}.entries
        WHERE uid = p_uid AND covered_by IS NULL AND seq <= p_last_seq;
    IF v_live IS DISTINCT FROM p_prefix THEN RETURN NULL; END IF;
    DELETE FROM {s}.entries WHERE uid = p_uid AND id = ANY(p_prefix) AND role = 'summary';
    UPDATE {s}.entries SET covered_by = p_sid WHERE uid = p_uid AND id = ANY(p_prefix);
    INSERT INTO {s}.entries (uid, id, seq, role, content, covers)
        VALUES (p_uid, p_sid, p_last_seq, 'summary', p_content, p_covers);
    INSERT INTO {s}.outbox (uid) VALUES (p_uid) RETURNING id INTO v_ob;
    RETURN v_ob;
END $f$;

CREATE FUNCTION {s}.forget(p_uid text) RETURNS bigint LANGUAGE plpgsql AS $f$
DECLARE v_ob bigint;
BEGIN
    PERFORM 1 FROM {s}.users WHERE uid = p_uid FOR UPDATE;
    DELETE FROM {s}.entries WHERE uid = p_uid;
    DELETE FROM {s}.users WHERE uid = p_uid;
    DELETE FROM {s}.outbox WHERE uid = p_uid;
    INSERT INTO {s}.outbox (uid) VALUES (p_uid) RETURNING id INTO v_ob;
    RETURN v_ob;
END $f$;
"""


def in_schema(text: str, schema: str) -> sql.Composed:
    """``text`` with ``{s}`` replaced by the quoted schema (a checked namespace)."""
    return sql.SQL(text).format(s=sql.Identifier(check_namespace(schema)))


async def create_pool(dsn: str, *, max_size: int = 8, timeout: float = 5.0,
                      application_name: str = "nomnesia") -> AsyncConnectionPool:
    """An open pool in autocommit mode: every statement here is its own transaction.

    ``application_name`` (the stack passes its namespace) lets an operator see
    in ``pg_stat_activity`` which store a connection belongs to.
    """

    async def configure(conn: AsyncConnection[TupleRow]) -> None:
        await conn.set_autocommit(True)

    # Half the store's timeout to wait for a pooled connection: the rest is left
    # for a direct one (``connection``) and the statement itself.
    pool: AsyncConnectionPool = AsyncConnectionPool(
        dsn, min_size=1, max_size=max_size, open=False, configure=configure,
        timeout=timeout / 2,
        kwargs={"connect_timeout": max(2, int(timeout)), "application_name": application_name,
                # Acknowledged means durable, whatever the server's default: with
                # synchronous_commit=off a crash loses commits we already reported.
                "options": "-c synchronous_commit=on"})
    await pool.open(wait=True, timeout=timeout)
    return pool


async def drop_schema(pool: AsyncConnectionPool, schema: str) -> None:
    async with pool.connection() as conn:
        await conn.execute(in_schema("DROP SCHEMA IF EXISTS {s} CASCADE", schema))


_DIRECT: weakref.WeakKeyDictionary[AsyncConnectionPool, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary())
"""At most two connections outside each pool at a time (see ``connection``)."""


@asynccontextmanager
async def connection(pool: AsyncConnectionPool) -> AsyncIterator[AsyncConnection[TupleRow]]:
    """A pooled connection, or a direct one when the pool is backing off.

    After failed reconnects (a network partition, a server restart) psycopg's
    pool waits 1, 2, 4 ... seconds between attempts, so it may stay empty for
    seconds after the server is back. A direct connection answers as soon as
    the server does; a semaphore keeps an overloaded store from opening many.
    A broken pooled connection makes the pool check all the others at once:
    a restarted server breaks them together, and each would fail one call.
    """
    direct = _DIRECT.setdefault(pool, asyncio.Semaphore(2))
    conn: AsyncConnection[TupleRow] | None
    try:
        conn = await pool.getconn()
    except PoolTimeout:
        if direct.locked():
            raise
        conn = None
    if conn is None:
        async with direct:
            kwargs = pool.kwargs if isinstance(pool.kwargs, dict) else {}
            own = await AsyncConnection.connect(str(pool.conninfo), autocommit=True, **kwargs)
            try:
                yield own
            finally:
                await own.close()
        return
    try:
        yield conn
    except psycopg.OperationalError:
        with suppress(Exception):
            await pool.check()
        raise
    finally:
        await pool.putconn(conn)


async def _bounded(conn: AsyncConnection[TupleRow], query: str, params: Sequence[Any],
                   timeout: float) -> None:
    """Run one statement within ``timeout``; on timeout or cancellation close ``conn``.

    Closing ends the session, and any lock it holds or is about to be granted, at
    once; waiting for psycopg's server-side cancel could take as long as the
    network lets it. The statement's task closes the connection itself
    (``_abort``): closed from outside, its socket would stay registered with the
    event loop, and the next connection to get that fd number would fail.
    """
    task = asyncio.ensure_future(conn.execute(query, params))
    try:
        done, _ = await asyncio.wait((task,), timeout=timeout)
    except BaseException:
        await _abort(conn, task)
        raise
    if not done:
        await _abort(conn, task)
        raise TimeoutError(f"no answer within {timeout:g}s")
    task.result()


async def _abort(conn: AsyncConnection[TupleRow], task: asyncio.Future[Any]) -> None:
    """Stop ``task`` (a statement on ``conn``) and leave ``conn`` closed.

    psycopg answers a cancellation by asking the server to cancel, and a second
    one by closing the connection (psycopg#1435): cancel until the task is over.
    """
    deadline = time.monotonic() + 1.0
    while not task.done() and time.monotonic() < deadline:
        task.cancel()
        await asyncio.wait((task,), timeout=0.01)
    if task.done():
        retrieve(task)  # expected
        await conn.close()  # nothing waits on its socket any more
    else:  # still inside psycopg (never seen): it closes the connection when it ends
        task.add_done_callback(retrieve)


def _b(text: str) -> bytes:
    return text.encode("utf-8")


def _entry(user_id: str, row: Sequence[Any]) -> Entry:
    entry_id, seq, role, content, covers = row
    return Entry(bytes(entry_id).decode(), user_id, int(seq), str(role), bytes(content).decode(),
                 tuple(bytes(c).decode() for c in covers))


class _LockSessions:
    """Connections that only hold advisory user locks: a free list, no background tasks.

    Apart from the store's pool: a holder runs archive calls while it holds a lock,
    and from one pool, as many holders as connections would wait for a connection
    none of them returns. Not a second psycopg pool either: its reconnect tasks,
    backing off through an outage, kept a closed store's event loop from ending.
    """

    def __init__(self, pool: AsyncConnectionPool) -> None:
        self._conninfo = str(pool.conninfo)
        self._kwargs = dict(pool.kwargs) if isinstance(pool.kwargs, dict) else {}
        self._keep = pool.max_size
        self._idle: list[AsyncConnection[TupleRow]] = []
        self._closed = False

    async def get(self, timeout: float) -> AsyncConnection[TupleRow]:
        while self._idle:
            conn = self._idle.pop()
            if not conn.closed:
                return conn
        kwargs = dict(self._kwargs)
        # The server gives up waiting first, cleanly; the client-side bound is the backstop.
        kwargs["options"] = (f"{kwargs.get('options', '')} "
                             f"-c lock_timeout={max(1, int(timeout * 900))}").strip()
        try:
            return await asyncio.wait_for(
                AsyncConnection.connect(self._conninfo, autocommit=True, **kwargs), timeout)
        except (TimeoutError, asyncio.TimeoutError):
            raise BackendTimeout("postgres", timeout, "connecting to lock a user") from None
        except psycopg.Error as exc:
            raise BackendUnavailable("postgres", f"{type(exc).__name__}: {exc}") from exc

    async def put(self, conn: AsyncConnection[TupleRow]) -> None:
        status = conn.info.transaction_status
        if conn.closed or status == psycopg.pq.TransactionStatus.ACTIVE:
            return  # closed, or still closing itself in an aborted statement (``_abort``)
        if self._closed or status != psycopg.pq.TransactionStatus.IDLE or (
                len(self._idle) >= self._keep):
            await conn.close()
        else:
            self._idle.append(conn)

    async def broken(self) -> None:
        """One lock session failed: a restarted server broke the idle ones too."""
        idle, self._idle = self._idle, []
        for conn in idle:
            await conn.close()

    async def close(self) -> None:
        self._closed = True
        await self.broken()


class PostgresArchive:
    """The ArchiveTier on PostgreSQL (see adapters/tiers.py for the contract)."""

    name = "postgres"

    def __init__(self, pool: AsyncConnectionPool, schema: str) -> None:
        self._pool = pool
        self._schema = check_namespace(schema)
        self._done: list[int] = []  # outbox rows to delete with the next append
        self._locks = _LockSessions(pool)  # SharedArchive: connected on first use
        q = self._q
        self._sql_append = q("SELECT * FROM {s}.append(%s, %s, %s, %s, %s::bigint[])")
        self._sql_compact = q("SELECT {s}.compact(%s, %s::bytea[], %s, %s, %s, %s::bytea[])")
        self._sql_forget = q("SELECT {s}.forget(%s)")
        self._sql_tail = q(f"SELECT {_COLUMNS} FROM {{s}}.entries WHERE uid = %s "
                           "AND covered_by IS NULL ORDER BY seq DESC LIMIT %s")
        self._sql_live = q(f"SELECT {_COLUMNS} FROM {{s}}.entries WHERE uid = %s "
                           "AND covered_by IS NULL ORDER BY seq")
        self._sql_among = q(f"SELECT {_COLUMNS} FROM {{s}}.entries WHERE uid = %s "
                            "AND covered_by IS NULL AND (id = ANY(%s::bytea[]) OR content = %s)")
        self._sql_users = q("SELECT uid FROM {s}.users")
        self._sql_pending = q("SELECT id, uid FROM {s}.outbox ORDER BY id")
        self._sql_pending_user = q("SELECT id, uid FROM {s}.outbox WHERE uid = %s ORDER BY id")
        self._sql_clear = q("DELETE FROM {s}.outbox WHERE id = ANY(%s::bigint[])")

    def _q(self, text: str) -> sql.Composed:
        return in_schema(text, self._schema)

    async def create(self, *, reuse: bool = False) -> bool:
        """Create the schema, tables and functions; returns whether it created them.

        With ``reuse`` an existing schema is kept (reopening a store's data);
        without, an existing schema is an error: two stores never share one.
        """
        async with connection(self._pool) as conn, conn.transaction():
            if reuse:
                cur = await conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s",
                                         (self._schema,))
                if await cur.fetchone() is not None:
                    return False
            await conn.execute(self._q(_DDL))
            return True

    async def drop(self) -> None:
        await drop_schema(self._pool, self._schema)

    async def _rows(self, query: sql.Composed, params: Sequence[Any]) -> list[TupleRow]:
        async with connection(self._pool) as conn:
            cur = await conn.execute(query, params)
            return await cur.fetchall()

    async def append(self, user_id: str, entry_id: str, role: str,
                     content: str) -> tuple[Entry, int | None]:
        done, self._done = self._done, []
        try:
            rows = await self._rows(self._sql_append,
                                    (user_id, _b(entry_id), role, _b(content), done))
        except BaseException:
            self._done.extend(done)  # not deleted: try again with the next write
            raise
        seq, stored_role, stored_content, outbox = rows[0]
        if outbox is not None:
            return Entry(entry_id, user_id, int(seq), role, content), int(outbox)
        if stored_role == SUMMARY_ROLE:
            raise ValueError(f"message_id {entry_id!r} is the id of a summary")
        existing = Entry(entry_id, user_id, int(seq), str(stored_role),
                         bytes(stored_content).decode())
        if (existing.role, existing.content) != (role, content):
            raise ValueError(f"message_id {entry_id!r} already holds a different message")
        return existing, None

    async def commit_compaction(self, user_id: str, prefix: Sequence[Entry],
                                summary: Entry) -> int:
        rows = await self._rows(self._sql_compact, (
            user_id, [_b(e.id) for e in prefix], summary.seq, _b(summary.id),
            _b(summary.content), [_b(c) for c in summary.covers]))
        if rows[0][0] is None:
            raise StalePrefix(user_id)
        return int(rows[0][0])

    async def forget(self, user_id: str) -> int:
        rows = await self._rows(self._sql_forget, (user_id,))
        return int(rows[0][0])

    async def tail(self, user_id: str, limit: int) -> list[Entry]:
        # LIMIT is a bigint: 2**64 would be "bigint out of range" (issue 14).
        rows = await self._rows(self._sql_tail, (user_id, clamp_limit(limit)))
        return [_entry(user_id, r) for r in reversed(rows)]

    async def live(self, user_id: str) -> list[Entry]:
        return [_entry(user_id, r) for r in await self._rows(self._sql_live, (user_id,))]

    async def live_among(self, user_id: str, ids: Sequence[str], content: str) -> list[Entry]:
        rows = await self._rows(self._sql_among, (user_id, [_b(i) for i in ids], _b(content)))
        return [_entry(user_id, r) for r in rows]

    async def _flush(self) -> None:
        done, self._done = self._done, []
        if done:
            try:
                await self._rows_none(self._sql_clear, (done,))
            except BaseException:
                self._done.extend(done)
                raise

    async def _rows_none(self, query: sql.Composed, params: Sequence[Any]) -> None:
        async with connection(self._pool) as conn:
            await conn.execute(query, params)

    async def users(self) -> list[str]:
        return [str(r[0]) for r in await self._rows(self._sql_users, ())]

    async def pending(self, user_id: str | None = None) -> list[tuple[int, str]]:
        await self._flush()
        if user_id is None:
            rows = await self._rows(self._sql_pending, ())
        else:
            rows = await self._rows(self._sql_pending_user, (user_id,))
        return [(int(ob), str(uid)) for ob, uid in rows]

    async def clear(self, outbox_ids: Sequence[int], *, lazy: bool = False) -> None:
        if lazy:
            self._done.extend(outbox_ids)
            return
        await self._rows_none(self._sql_clear, (list(outbox_ids),))

    @asynccontextmanager
    async def user_lock(self, user_id: str, timeout: float) -> AsyncIterator[None]:
        """A session-level advisory lock on (schema, user): it dies with the session.

        A holder that crashes or loses its connection releases it, so no user stays
        locked. Taking and releasing are bounded by ``timeout`` on the client too
        (a black-holed network answers nothing, not even the server's
        ``lock_timeout``); one that runs out closes the connection, so a lock
        granted after the caller gave up ends with the session.
        """
        key = (self._schema, user_id)
        conn = await self._locks.get(timeout)
        try:
            try:
                await _bounded(conn, "SELECT pg_advisory_lock(hashtext(%s), hashtext(%s))",
                               key, timeout)
            except (TimeoutError, asyncio.TimeoutError, psycopg.errors.LockNotAvailable):
                raise BackendTimeout(self.name, timeout,
                                     f"waiting for the lock of {user_id!r}") from None
            except psycopg.Error as exc:
                await self._locks.broken()
                raise BackendUnavailable(self.name, f"{type(exc).__name__}: {exc}") from exc
            try:
                yield
            finally:
                with suppress(Exception):  # if it fails, the closed session ends the lock
                    await _bounded(conn, "SELECT pg_advisory_unlock(hashtext(%s), hashtext(%s))",
                                   key, timeout)
        finally:
            await self._locks.put(conn)

    async def aclose(self) -> None:
        """Delete the outbox rows still buffered; the pool belongs to the stack."""
        try:
            await self._flush()
        finally:
            await self._locks.close()
