"""Four-method stores on the suite's replicated topologies: the replication-lag test's controls.

Teams offload reads from the primary. Each store here writes a user's history to the
primary and reads it back either from the primary (correct) or from a replica
(breaks SPEC.md's guarantee 3 whenever the replica is behind):

- :func:`sentinel_primary` / :func:`sentinel_replica`: a Redis list on the suite's
  ``redis-sentinel``, through redis-py's ``Sentinel``: ``master_for`` writes,
  ``master_for`` or ``slave_for`` reads.
- :func:`postgres_primary` / :func:`postgres_standby`: a table on the suite's
  ``postgres-ha`` pair; the standby reader connects with
  ``target_session_attrs=standby``, as a read-only pool would.

Every store keeps its data under ``engines.store_namespace()`` and drops it on close.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from redis.asyncio.sentinel import Sentinel

from nomnesia.adapters.engines.session import engine_url, store_namespace


class SentinelListStore:
    """A user's history as one Redis list of JSON items on a Sentinel group."""

    def __init__(self, url: str, *, read_replica: bool) -> None:
        parts = urlsplit(url)
        hosts = [(h.rpartition(":")[0], int(h.rpartition(":")[2]))
                 for h in parts.netloc.split(",")]
        service = parts.path.strip("/")
        self.sentinel = Sentinel(hosts, socket_timeout=2.0)
        self.primary = self.sentinel.master_for(service, socket_timeout=2.0)
        self.reader = (self.sentinel.slave_for(service, socket_timeout=2.0) if read_replica
                       else self.primary)
        self.prefix = f"nmrs:{store_namespace()}:"

    async def append_message(self, user_id: str, role: str, content: str) -> None:
        await self.primary.rpush(self.prefix + user_id,
                                 json.dumps({"role": role, "content": content}))

    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]:
        raw = await self.reader.lrange(self.prefix + user_id, -min(limit, 1 << 40), -1)
        return [json.loads(item) for item in raw]

    async def compact(self, user_id: str) -> None:
        return None  # keeps everything: a correct, if lazy, compaction

    async def consistent_state(self, user_id: str) -> bool:
        return True

    async def aclose(self) -> None:
        try:
            keys = [key async for key in self.primary.scan_iter(match=self.prefix + "*")]
            if keys:
                await self.primary.delete(*keys)
        finally:
            await self.primary.aclose()
            if self.reader is not self.primary:
                await self.reader.aclose()


@asynccontextmanager
async def _sentinel(read_replica: bool) -> AsyncIterator[SentinelListStore]:
    store = SentinelListStore(engine_url("redis-sentinel"), read_replica=read_replica)
    try:
        yield store
    finally:
        await store.aclose()


def sentinel_primary() -> Any:
    return _sentinel(read_replica=False)


def sentinel_replica() -> Any:
    return _sentinel(read_replica=True)


def _with(url: str, **query: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(query=urlencode({**dict(parse_qsl(parts.query)),
                                                      **query})))


def _raw(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _text(raw: bytes) -> str:
    return bytes(raw).decode("utf-8", "surrogatepass")


class PostgresTableStore:
    """A user's history as rows of one table on a PostgreSQL pair; ids and contents as
    ``bytea`` (a ``text`` column refuses NUL, which SPEC allows in both)."""

    def __init__(self, writer: psycopg.AsyncConnection[Any],
                 reader: psycopg.AsyncConnection[Any], table: str) -> None:
        self.writer, self.reader, self.table = writer, reader, table

    async def append_message(self, user_id: str, role: str, content: str) -> None:
        await self.writer.execute(
            f"INSERT INTO {self.table} (user_id, role, content) VALUES (%s, %s, %s)",
            (_raw(user_id), role, _raw(content)))

    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]:
        cur = await self.reader.execute(
            f"SELECT role, content FROM (SELECT seq, role, content FROM {self.table} "
            "WHERE user_id = %s ORDER BY seq DESC LIMIT %s) AS newest ORDER BY seq",
            (_raw(user_id), min(limit, 1 << 62)))
        return [{"role": role, "content": _text(content)}
                for role, content in await cur.fetchall()]

    async def compact(self, user_id: str) -> None:
        return None

    async def consistent_state(self, user_id: str) -> bool:
        return True


@asynccontextmanager
async def _postgres(read_standby: bool) -> AsyncIterator[PostgresTableStore]:
    url = engine_url("postgres-ha")
    table = f"nmrs_{store_namespace()}"
    writer = await psycopg.AsyncConnection.connect(url, autocommit=True)
    reader = writer
    try:
        await writer.execute(f"CREATE TABLE {table} (seq bigserial PRIMARY KEY, "
                             "user_id bytea, role text, content bytea)")
        if read_standby:
            reader = await psycopg.AsyncConnection.connect(
                _with(url, target_session_attrs="standby"), autocommit=True)
        yield PostgresTableStore(writer, reader, table)
    finally:
        try:
            await writer.execute(f"DROP TABLE IF EXISTS {table}")
        finally:
            await writer.close()
            if reader is not writer:
                await reader.close()


def postgres_primary() -> Any:
    return _postgres(read_standby=False)


def postgres_standby() -> Any:
    return _postgres(read_standby=True)
