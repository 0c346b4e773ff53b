"""Google ADK's session services, for ``--adk-sessions``.

Each factory takes no argument (one service holds every user's sessions) and
returns the library's own ``BaseSessionService``, or an async context manager that
yields one; the suite's mapping (``nomnesia.suite.interfaces.adk``) does the rest,
and nothing is added that the library lacks (no lock, retry, id or ordering):

- :func:`in_memory`: ``InMemorySessionService()``, sessions in the process;
- :func:`sqlite`: ``SqliteSessionService(db_path)`` (aiosqlite, ADK's own schema
  and SQL) on a fresh file in a temporary directory, removed when the store closes;
- :func:`database_postgres`: ``DatabaseSessionService(db_url)`` (SQLAlchemy, asyncpg
  driver) on the embedded PostgreSQL 18. Its table names are fixed (``sessions``,
  ``events``, ``app_states``, ``user_states``...), so each store gets a schema of its
  own, made the first in the connections' ``search_path`` (asyncpg's
  ``server_settings``), where the service creates its tables; the schema is dropped
  when the store closes.

The factory is called once per store, so every store starts empty.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from google.adk.sessions import InMemorySessionService

from ._engines import asyncpg_url, namespace, remove_sqlite, sqlite_path, url

__all__ = ["database_postgres", "in_memory", "sqlite"]

def in_memory() -> InMemorySessionService:
    """``--adk-sessions nomnesia.adapters.ecosystem.adk:in_memory``."""
    return InMemorySessionService()


@asynccontextmanager
async def _sqlite() -> AsyncIterator[Any]:
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    path = sqlite_path(namespace('adk_sqlite'))
    service = SqliteSessionService(str(path))
    try:
        yield service
    finally:
        await service.close()
        remove_sqlite(path)


def sqlite() -> AbstractAsyncContextManager[Any]:
    """``--adk-sessions nomnesia.adapters.ecosystem.adk:sqlite``: a fresh SQLite file."""
    return _sqlite()


@asynccontextmanager
async def _database_postgres() -> AsyncIterator[Any]:
    import psycopg
    from google.adk.sessions import DatabaseSessionService

    dsn = url("postgres")
    schema = namespace("adk_pg")
    # Synchronous on purpose: the schema exists before anything here awaits, so an
    # interrupted open leaves nothing that the finally below does not drop.
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
    try:
        async with DatabaseSessionService(
                asyncpg_url(),
                connect_args={"server_settings": {"search_path": schema}}) as service:
            yield service
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA "{schema}" CASCADE')


def database_postgres() -> AbstractAsyncContextManager[Any]:
    """``--adk-sessions nomnesia.adapters.ecosystem.adk:database_postgres``: a schema of
    its own per store."""
    return _database_postgres()
