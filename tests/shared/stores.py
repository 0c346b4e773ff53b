"""Library objects over a shared database, and over an empty one, for the interface options.

Each ``*_shared`` factory opens the one database that ``NOMNESIA_SHARED_DIR`` (a directory)
or the suite's PostgreSQL (``engine_url("postgres")``) holds for the whole run, and for
every later run on the same directory, as a team's own factory would. Each ``*_empty``
factory gives every store an empty database of its own: the reference the shared one must
match. Run, from this directory's parent::

    NOMNESIA_SHARED_DIR=/tmp/shared python -m pytest --pyargs nomnesia.suite \\
        --openai-session shared.stores:agents_shared
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any


def _dir() -> Path:
    path = Path(os.environ.get("NOMNESIA_SHARED_DIR", "nomnesia-shared"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def agents_shared(session_id: str) -> Any:
    """The Agents SDK's ``SQLiteSession`` on one file, as an app keeps its sessions."""
    from agents import SQLiteSession

    return SQLiteSession(session_id, str(_dir() / "agents.db"))


def agents_empty(session_id: str) -> Any:
    """``SQLiteSession`` in memory: an empty database per session."""
    from agents import SQLiteSession

    return SQLiteSession(session_id)


def llama_shared() -> Any:
    """llama-index's ``SQLAlchemyChatStore`` (the store behind ``Memory``) on one file."""
    from llama_index.core.storage.chat_store.sql import SQLAlchemyChatStore

    return SQLAlchemyChatStore(table_name="chat",
                               async_database_uri=f"sqlite+aiosqlite:///{_dir() / 'llama.db'}")


def llama_empty() -> Any:
    """``SQLAlchemyChatStore`` on a new file per store: SQLite's file locking as in the
    shared case, on an empty database."""
    from llama_index.core.storage.chat_store.sql import SQLAlchemyChatStore

    path = _dir() / f"llama-empty-{uuid.uuid4().hex}.db"
    return SQLAlchemyChatStore(table_name="chat", async_database_uri=f"sqlite+aiosqlite:///{path}")


@asynccontextmanager
async def langgraph_shared() -> AsyncIterator[Any]:
    """LangGraph's ``AsyncPostgresStore`` on the suite's PostgreSQL: one ``store`` table
    that every test of the run (and every run) shares."""
    from langgraph.store.postgres import AsyncPostgresStore

    from nomnesia.adapters.engines.session import engine_url

    async with AsyncPostgresStore.from_conn_string(engine_url("postgres")) as store:
        await store.setup()
        yield store


@asynccontextmanager
async def langgraph_empty() -> AsyncIterator[Any]:
    """``AsyncPostgresStore`` on a database of its own, created for the store and dropped
    after it: the same engine, empty."""
    import psycopg
    from langgraph.store.postgres import AsyncPostgresStore

    from nomnesia.adapters.engines.session import engine_url

    url = engine_url("postgres")
    name = f"nm_{uuid.uuid4().hex[:16]}"
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as admin:
        await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        own = psycopg.conninfo.make_conninfo(url, dbname=name)
        async with AsyncPostgresStore.from_conn_string(own) as store:
            await store.setup()
            yield store
    finally:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as admin:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
