"""Factories for the known-bugs benchmark: each is what an application using that release
would write, on a SQLite file, so that a row needs no database server.

None of them makes a bug easier to hit than a user's normal use does (docs/known-bugs.md):
the store is opened as the library documents it, and the suite's own workload does the
rest. Each database lives in a directory of its own under ``TMPDIR``, which the runner
(bench/known_bugs.py) points at a directory it removes after the run.

The runner puts this folder on ``PYTHONPATH``, so a row names a factory as
``known_bug_factories:NAME``.
"""

from __future__ import annotations

import inspect
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any


def _database(name: str) -> Path:
    """A fresh SQLite file's path (its directory is under the run's ``TMPDIR``)."""
    return Path(tempfile.mkdtemp(prefix="nomnesia-kb-")) / name


@asynccontextmanager
async def langgraph_sqlite() -> AsyncIterator[Any]:
    """``--langgraph-store``: langgraph-checkpoint-sqlite's ``AsyncSqliteStore`` (an
    ``AsyncBatchedBaseStore``: every call goes through its background task), set up once."""
    from langgraph.store.sqlite.aio import AsyncSqliteStore

    async with AsyncSqliteStore.from_conn_string(str(_database("store.db"))) as store:
        await store.setup()
        yield store


_AGENTS_DB: Path | None = None


@asynccontextmanager
async def agents_sqlalchemy(session_id: str) -> AsyncIterator[Any]:
    """``--openai-session``: the Agents SDK's ``SQLAlchemySession`` on one SQLite file
    (aiosqlite) for the whole run, one session per user id, each with the engine its
    constructor takes (the documented form in every release; early ones keep it private,
    so the factory makes it and disposes of it with the session)."""
    global _AGENTS_DB
    from agents.extensions.memory import SQLAlchemySession
    from sqlalchemy.ext.asyncio import create_async_engine

    if _AGENTS_DB is None:
        _AGENTS_DB = _database("agents.db")
    engine = create_async_engine(f"sqlite+aiosqlite:///{_AGENTS_DB}")
    try:
        yield SQLAlchemySession(session_id, engine=engine, create_tables=True)
    finally:
        await engine.dispose()


@asynccontextmanager
async def adk_sqlite() -> AsyncIterator[Any]:
    """``--adk-sessions``: ADK's ``DatabaseSessionService`` on a SQLite file. Releases
    before the async rewrite take a sync URL (``sqlite:///``), later ones an async driver's
    (``sqlite+aiosqlite:///``): the one the release's own docs use."""
    from google.adk.sessions import DatabaseSessionService, database_session_service

    path = _database("adk.db")
    asynchronous = hasattr(database_session_service, "create_async_engine")
    url = f"sqlite+aiosqlite:///{path}" if asynchronous else f"sqlite:///{path}"
    service = DatabaseSessionService(db_url=url)
    try:
        yield service
    finally:
        close = getattr(service, "close", None)  # async from the async rewrite on; none before
        done = close() if callable(close) else None
        if inspect.isawaitable(done):
            await done


def llama_sqlite() -> Any:
    """``--llama-chat-store``: llama-index's ``SQLAlchemyChatStore`` (the store behind
    ``Memory``) on a SQLite file (aiosqlite), one table for the run."""
    from llama_index.core.storage.chat_store.sql import SQLAlchemyChatStore

    return SQLAlchemyChatStore(table_name="nomnesia_chat",
                               async_database_uri=f"sqlite+aiosqlite:///{_database('chat.db')}")
