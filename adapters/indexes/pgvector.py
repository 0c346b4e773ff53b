"""PgVectorIndex: a VectorIndex on PostgreSQL with pgvector, in the store's schema.

``target`` is a PostgreSQL DSN, or an open ``psycopg_pool.AsyncConnectionPool``.
A stack passes the pool of its archive (``open_engine_stack`` gives an index
the connection it already holds to the index's engine): one pool per store,
and the ``vectors`` table sits in the archive's schema, which is the stack's
to drop. Given a DSN, the namespace is the index's own: it opens (and closes)
a pool of its own, and creates (and drops) the schema. Entry ids are bytea
(PostgreSQL ``text`` cannot hold NUL).

Exact scan (no HNSW) on purpose: an approximate index with a per-user filter
can miss a user's nearest entries, and the search guarantee needs
exact-content hits. A write is visible when it returns: staleness 0.
"""

from __future__ import annotations

from collections.abc import Sequence

from psycopg import sql
from psycopg_pool import AsyncConnectionPool

from nomnesia.suite.contract import Entry

from ..bounds import check_k
from ..postgres import connection, create_pool, in_schema
from ._common import Completeness, IndexBase, SelfCheckingByCompleteness, check_batch

__all__ = ["PgVectorIndex"]


class PgVectorIndex(IndexBase, SelfCheckingByCompleteness):
    """Vectors in ``<namespace>.vectors``, keyed by (user id, entry id); exact cosine search."""

    name = "pgvector"
    search_staleness = 0.0

    def __init__(self, target: str | AsyncConnectionPool, *, namespace: str | None = None,
                 dim: int = 384, timeout: float = 5.0, reuse: bool = False) -> None:
        super().__init__(namespace=namespace, dim=dim, timeout=timeout, reuse=reuse)
        self._complete = Completeness(self.name)
        self._dsn = target if isinstance(target, str) else None
        self._pool: AsyncConnectionPool | None = None if isinstance(target, str) else target
        # Created by this index, so ``aclose`` drops it: the schema with a DSN, else the table.
        q = self._q
        self._sql_upsert = q("INSERT INTO {s}.vectors (uid, id, embedding) "
                             "VALUES (%s, %s, %s::vector) ON CONFLICT (uid, id) "
                             "DO UPDATE SET embedding = EXCLUDED.embedding")
        self._sql_delete = q("DELETE FROM {s}.vectors WHERE uid = %s AND id = ANY(%s::bytea[])")
        self._sql_query = q("SELECT id FROM {s}.vectors WHERE uid = %s "
                            "ORDER BY embedding <=> %s::vector, id LIMIT %s")
        self._sql_ids = q("SELECT id FROM {s}.vectors WHERE uid = %s")
        self._sql_delete_user = q("DELETE FROM {s}.vectors WHERE uid = %s")

    def _q(self, text: str) -> sql.Composed:
        return in_schema(text, self.namespace)

    @property
    def pool(self) -> AsyncConnectionPool:
        if self._pool is None:
            raise RuntimeError("PgVectorIndex: call create() first")
        return self._pool

    async def create(self) -> None:
        """Create the schema (if missing) and the vectors table; ``aclose`` drops what it made.

        With ``reuse``, a table that had to be created is empty while the archive
        is not: queries raise ``TierLost`` until ``recover()`` rebuilt it.
        """
        if self._pool is None and self._dsn is not None:
            self._pool = await create_pool(self._dsn, max_size=4, timeout=self.timeout,
                                           application_name=self.namespace)
        async with connection(self.pool) as conn:
            await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        async with connection(self.pool) as conn, conn.transaction():
            cur = await conn.execute("SELECT to_regnamespace(%s), to_regclass(%s)",
                                     (self.namespace, f"{self.namespace}.vectors"))
            row = await cur.fetchone()
            schema_exists, table_exists = (row[0] is not None, row[1] is not None) if row else (
                False, False)
            if not schema_exists:
                await conn.execute(self._q("CREATE SCHEMA {s}"))
            if not table_exists:
                await conn.execute(sql.SQL(
                    "CREATE TABLE {s}.vectors (uid text NOT NULL, id bytea NOT NULL, "
                    "embedding vector({dim}) NOT NULL, PRIMARY KEY (uid, id))").format(
                        s=sql.Identifier(self.namespace), dim=sql.Literal(self.dim)))
        self._created = self._created or not (schema_exists if self._dsn else table_exists)
        if not table_exists:
            self._complete.complete = not self.reuse

    async def drop(self) -> None:
        """Drop the namespace: the schema with a DSN, the table in a stack's schema."""
        what = "SCHEMA IF EXISTS {s} CASCADE" if self._dsn else "TABLE IF EXISTS {s}.vectors"
        async with connection(self.pool) as conn:
            await conn.execute(self._q(f"DROP {what}"))
        self._created = False

    @staticmethod
    def _text(vector: Sequence[float]) -> str:
        return "[" + ",".join(repr(float(v)) for v in vector) + "]"

    async def upsert(self, entries: Sequence[Entry], vectors: Sequence[Sequence[float]]) -> None:
        check_batch(entries, vectors, self.dim)
        params = [(e.user_id, e.id.encode(), self._text(v))
                  for e, v in zip(entries, vectors, strict=True)]
        if not params:
            return
        async with connection(self.pool) as conn:
            if len(params) == 1:
                await conn.execute(self._sql_upsert, params[0])
            else:
                async with conn.cursor() as cur:
                    await cur.executemany(self._sql_upsert, params)

    async def delete(self, user_id: str, entry_ids: Sequence[str]) -> None:
        if entry_ids:
            async with connection(self.pool) as conn:
                await conn.execute(self._sql_delete, (user_id, [i.encode() for i in entry_ids]))

    async def query(self, user_id: str, vector: Sequence[float], k: int) -> list[str]:
        k = check_k(k)
        self._complete.check()
        async with connection(self.pool) as conn:
            cur = await conn.execute(self._sql_query, (user_id, self._text(vector), k))
            return [bytes(r[0]).decode() for r in await cur.fetchall()]

    async def ids(self, user_id: str) -> set[str]:
        async with connection(self.pool) as conn:
            cur = await conn.execute(self._sql_ids, (user_id,))
            return {bytes(r[0]).decode() for r in await cur.fetchall()}

    async def delete_user(self, user_id: str) -> None:
        async with connection(self.pool) as conn:
            await conn.execute(self._sql_delete_user, (user_id,))

    async def aclose(self) -> None:
        """Drop what this index created (unless ``reuse``); close the pool if it is its own.

        A stack's pool is the archive's: the stack closes it, after the store.
        """
        try:
            if self._created and not self.reuse:
                await self.drop()
        finally:
            if self._dsn is not None and self._pool is not None:
                pool, self._pool = self._pool, None
                await pool.close()
