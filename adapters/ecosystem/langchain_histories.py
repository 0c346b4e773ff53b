"""LangChain chat message histories from the integration packages, for ``--langchain-history``.

Each factory takes the session id (the suite passes the user id) and returns an
async context manager that yields the library's own ``BaseChatMessageHistory``;
the suite's mapping (``nomnesia.suite.interfaces.langchain``) calls its async
methods (``aadd_messages``, ``aget_messages``, ``aclear``), or the sync ones with
``--langchain-sync``. Nothing is added that the library lacks (no lock, retry,
id or ordering):

- :func:`redis_history`: langchain-redis's ``RedisChatMessageHistory(session_id,
  redis_client=..., key_prefix=..., index_name=...)`` on the ``redis-search``
  engine (Redis 8.2 with RediSearch and RedisJSON, which it needs: each message
  is a JSON document, read back with ``FT.SEARCH``). The class has no async
  methods of its own, so the base class runs the sync ones in a thread, as it
  does for any application;
- :func:`redis_history_resp2`: the same with a redis-py client made with
  ``protocol=2`` (RESP2), the one configuration on which the class's index code
  works;
- :func:`sql_sqlite`: langchain-community's ``SQLChatMessageHistory(session_id,
  table_name=..., connection=AsyncEngine)`` on a SQLite file through aiosqlite
  (an ``AsyncEngine`` puts the class in its async mode, which has its own
  ``aget_messages``/``aadd_messages``/``aclear``; the table is created by the
  class on first use);
- :func:`sql_postgres`: the same on the embedded PostgreSQL 18 through asyncpg.

Why the backends are shared per *store*: the factory is called once per user of
a store, but the suite opens a fresh store for each test, and each must start
empty while its users share a backend as an application's users do (one index
or table per user would hide every collision between users). So a *generation*
(:class:`Generation`) is a fresh namespace (key prefix and index, SQLite file,
table) made when the first history of a store opens, shared by every history
opened while any is open, and dropped when the last one closes. The suite opens
one store at a time. (The same scheme as :mod:`.openai_agents`, restated here so
that this module does not import the Agents SDK.)
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from ._engines import (
    Generation,
    asyncpg_engine,
    drop_tables,
    remove_sqlite,
    sqlite_path,
    url,
)

__all__ = ["redis_history", "redis_history_resp2", "sql_postgres", "sql_sqlite"]

# --- langchain-redis ------------------------------------------------------------------

async def _redis_start(name: str) -> Any:
    """A sync client (the class takes a ``redis.Redis``), shared by a store's histories."""
    from redis import Redis

    return Redis.from_url(url("redis-search"))


async def _redis_stop(name: str, client: Any) -> None:
    """Drop the store's index and its documents (``FT.DROPINDEX ... DD``), then the client."""
    try:
        client.ft(name).dropindex(delete_documents=True)
    finally:
        client.close()


async def _redis_start_resp2(name: str) -> Any:
    """The same client speaking RESP2 (``protocol=2``), as redis-py 7 and earlier did by default."""
    from redis import Redis

    return Redis.from_url(url("redis-search"), protocol=2)


_REDIS: Generation[Any] = Generation("lc_redis", _redis_start, _redis_stop)
_REDIS_RESP2: Generation[Any] = Generation("lc_redis", _redis_start_resp2, _redis_stop)


@asynccontextmanager
async def _redis_history(session_id: str,
                         generation: Generation[Any] = _REDIS) -> AsyncIterator[Any]:
    from langchain_redis import RedisChatMessageHistory

    async with generation.open() as gen:
        # The key prefix ends with ":" as the library's default ("chat:") does.
        yield RedisChatMessageHistory(session_id, redis_client=gen.resource,
                                      key_prefix=f"{gen.name}:", index_name=gen.name)


def redis_history(session_id: str) -> AbstractAsyncContextManager[Any]:
    """``--langchain-history ...langchain_histories:redis_history``: one client, key prefix
    and RediSearch index per store (the constructor creates the index if missing)."""
    return _redis_history(session_id)


def redis_history_resp2(session_id: str) -> AbstractAsyncContextManager[Any]:
    """``--langchain-history ...langchain_histories:redis_history_resp2``: as
    :func:`redis_history`, with a redis-py client made with ``protocol=2``.

    This is the configuration on which the library's index code works: its
    constructor parses ``FT.INFO``'s reply as RESP2's flat list, so with redis-py 8's
    default (RESP3) every history after the first on an index fails to construct
    (cause ``langchain-redis-index-info-dict``), which hides every other finding.
    It is audited separately so that what a team that sets ``protocol=2`` (or pins
    redis-py 7) meets is shown too, not hidden behind that one failure."""
    return _redis_history(session_id, _REDIS_RESP2)


# --- langchain-community SQLChatMessageHistory ----------------------------------------

async def _sqlite_start(name: str) -> Any:
    from sqlalchemy.ext.asyncio import create_async_engine

    return create_async_engine(f"sqlite+aiosqlite:///{sqlite_path(name)}")


async def _sqlite_stop(name: str, engine: Any) -> None:
    """Dispose of the engine, then remove the store's file (the whole database)."""
    try:
        await engine.dispose()
    finally:
        remove_sqlite(sqlite_path(name))


async def _pg_stop(name: str, engine: Any) -> None:
    """Drop the store's table (the class made it), then dispose of the engine."""
    await drop_tables(engine, name)


_SQLITE: Generation[Any] = Generation("lc_sql", _sqlite_start, _sqlite_stop)
_PG: Generation[Any] = Generation("lc_sql", asyncpg_engine, _pg_stop)


@asynccontextmanager
async def _sql_history(generation: Generation[Any], session_id: str) -> AsyncIterator[Any]:
    from langchain_community.chat_message_histories import SQLChatMessageHistory

    async with generation.open() as gen:
        yield SQLChatMessageHistory(session_id, table_name=gen.name, connection=gen.resource)


def sql_sqlite(session_id: str) -> AbstractAsyncContextManager[Any]:
    """``--langchain-history ...langchain_histories:sql_sqlite``: one aiosqlite
    ``AsyncEngine`` on a fresh SQLite file per store."""
    return _sql_history(_SQLITE, session_id)


def sql_postgres(session_id: str) -> AbstractAsyncContextManager[Any]:
    """``--langchain-history ...langchain_histories:sql_postgres``: one asyncpg
    ``AsyncEngine`` and a fresh table per store."""
    return _sql_history(_PG, session_id)
