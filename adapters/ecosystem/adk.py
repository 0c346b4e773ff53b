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

import atexit
import tempfile
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

from google.adk.sessions import InMemorySessionService

from ._engines import namespace, url

__all__ = ["database_postgres", "in_memory", "sqlite"]

_tmp: tempfile.TemporaryDirectory[str] | None = None


def _tmpdir() -> Path:
    """A directory for the SQLite files, removed at exit (with anything left in it)."""
    global _tmp
    if _tmp is None:
        _tmp = tempfile.TemporaryDirectory(prefix="nomnesia-adk-")
        atexit.register(_tmp.cleanup)
    return Path(_tmp.name)


def _remove_db(path: Path) -> None:
    """Remove a SQLite database and its companion files (a fast local unlink)."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def in_memory() -> InMemorySessionService:
    """``--adk-sessions nomnesia.adapters.ecosystem.adk:in_memory``."""
    return InMemorySessionService()


@asynccontextmanager
async def _sqlite() -> AsyncIterator[Any]:
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    path = _tmpdir() / f"{namespace('adk_sqlite')}.db"
    service = SqliteSessionService(str(path))
    try:
        yield service
    finally:
        await service.close()
        _remove_db(path)


def sqlite() -> AbstractAsyncContextManager[Any]:
    """``--adk-sessions nomnesia.adapters.ecosystem.adk:sqlite``: a fresh SQLite file."""
    return _sqlite()


@asynccontextmanager
async def _database_postgres() -> AsyncIterator[Any]:
    import psycopg
    from google.adk.sessions import DatabaseSessionService

    dsn = url("postgres")
    schema = namespace("adk_pg")
    # Synchronous on purpose: nothing here may await before the service is yielded. The
    # suite's mapping makes the service on first use without a lock, so concurrent first
    # calls that each found none would each make a service (a schema) of their own.
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{schema}"')
    try:
        async with DatabaseSessionService(
                "postgresql+asyncpg://" + dsn.split("://", 1)[1],
                connect_args={"server_settings": {"search_path": schema}}) as service:
            yield service
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA "{schema}" CASCADE')


def database_postgres() -> AbstractAsyncContextManager[Any]:
    """``--adk-sessions nomnesia.adapters.ecosystem.adk:database_postgres``: a schema of
    its own per store."""
    return _database_postgres()
