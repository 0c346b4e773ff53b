"""The OpenAI Agents SDK's session classes, for ``--openai-session``.

Each factory takes the session id (the suite passes the user id) and returns the
library's own ``Session`` object, or an async context manager that yields one; the
suite's mapping (``nomnesia.suite.interfaces.openai_agents``) does the rest, and
nothing is added that the library lacks (no lock, retry, id or ordering):

- :func:`sqlite_memory`: ``SQLiteSession(session_id)``, the SDK's default, an
  in-memory SQLite database of that session's own (so each user has a database);
- :func:`sqlite_file`: ``SQLiteSession(session_id, db_path)``, every session of a
  store on one SQLite file (its default tables), as an application shares one file;
- :func:`sqlalchemy_postgres`: ``SQLAlchemySession(session_id, engine=...,
  create_tables=True)`` on the embedded PostgreSQL 18 through asyncpg, every
  session of a store on one ``AsyncEngine`` and one pair of tables;
- :func:`redis_session`: ``RedisSession(session_id, redis_client=...,
  key_prefix=...)`` on the embedded Redis 8.2, every session of a store on one
  client and one key prefix.

Why the backends are shared per *store*: the factory is called once per user of
a store, but the suite opens a fresh store for each test, and each must start
empty while its users share a backend as an application's users do (a prefix or
table per user would hide every collision between users). So a *generation*
(:class:`Generation`) is a fresh namespace (file, tables, key prefix) made when
the first session of a store opens, shared by every session opened while any is
open, and dropped when the last one closes. The suite opens one store at a time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

from agents import SQLiteSession

from ._engines import Generation, asyncpg_engine, drop_tables, remove_sqlite, sqlite_path, url

__all__ = ["redis_session", "sqlalchemy_postgres", "sqlite_file", "sqlite_memory"]

def sqlite_memory(session_id: str) -> SQLiteSession:
    """``--openai-session ...openai_agents:sqlite_memory``: the SDK's default session."""
    return SQLiteSession(session_id)


async def _file_start(name: str) -> Path:
    return sqlite_path(name)


async def _file_stop(name: str, path: Path) -> None:
    remove_sqlite(path)


_FILES: Generation[Path] = Generation("agents_sqlite", _file_start, _file_stop)


@asynccontextmanager
async def _sqlite_file(session_id: str) -> AsyncIterator[SQLiteSession]:
    async with _FILES.open() as gen:
        session = SQLiteSession(session_id, db_path=gen.resource)
        try:
            yield session
        finally:
            session.close()


def sqlite_file(session_id: str) -> AbstractAsyncContextManager[SQLiteSession]:
    """``--openai-session ...openai_agents:sqlite_file``: one SQLite file per store."""
    return _sqlite_file(session_id)


async def _pg_stop(name: str, engine: Any) -> None:
    await drop_tables(engine, f"{name}_messages", f"{name}_sessions")


_PG: Generation[Any] = Generation("agents_pg", asyncpg_engine, _pg_stop)


@asynccontextmanager
async def _sqlalchemy_postgres(session_id: str) -> AsyncIterator[Any]:
    from agents.extensions.memory import SQLAlchemySession

    async with _PG.open() as gen:
        yield SQLAlchemySession(session_id, engine=gen.resource, create_tables=True,
                                sessions_table=f"{gen.name}_sessions",
                                messages_table=f"{gen.name}_messages")


def sqlalchemy_postgres(session_id: str) -> AbstractAsyncContextManager[Any]:
    """``--openai-session ...openai_agents:sqlalchemy_postgres``: one engine and one pair
    of tables per store, created by the library (``create_tables=True``)."""
    return _sqlalchemy_postgres(session_id)


async def _redis_start(name: str) -> Any:
    import redis.asyncio as redis

    return redis.from_url(url("redis"))


async def _redis_stop(name: str, client: Any) -> None:
    try:
        keys = [key async for key in client.scan_iter(match=f"{name}:*", count=1000)]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


_REDIS: Generation[Any] = Generation("agents_redis", _redis_start, _redis_stop)


@asynccontextmanager
async def _redis_session(session_id: str) -> AsyncIterator[Any]:
    from agents.extensions.memory import RedisSession

    async with _REDIS.open() as gen:
        session = RedisSession(session_id, redis_client=gen.resource, key_prefix=gen.name)
        try:
            yield session
        finally:
            await session.close()  # the client is injected: this closes nothing of it


def redis_session(session_id: str) -> AbstractAsyncContextManager[Any]:
    """``--openai-session ...openai_agents:redis_session``: one client and one key prefix
    per store."""
    return _redis_session(session_id)
