"""agno's ``MemoryManager`` on its ``SqliteDb`` and ``PostgresDb``: a history-profile store.

The library's behaviour (what the audit measures), agno's
``agno.memory.manager.MemoryManager`` over ``agno.db.sqlite.SqliteDb`` /
``agno.db.postgres.PostgresDb``:

- ``add_user_memory(UserMemory(...), user_id=u)`` fills in ``memory_id`` (a
  uuid4) and ``updated_at`` (``now_epoch_s()``: whole seconds), then writes
  through ``MemoryManager._upsert_db_memory``, which *catches every exception*,
  logs a warning and returns a string that ``add_user_memory`` ignores: the
  memory id comes back whether the row was written or not;
- the write is the database's ``upsert_user_memory``: an ``INSERT ... ON
  CONFLICT (memory_id) DO UPDATE`` of the memory's text, topics and input,
  whatever user the row belongs to;
- ``search_user_memories(limit=n, retrieval_method="last_n", user_id=u)``
  reads the user's rows (``get_user_memories``, no ``ORDER BY``), sorts them by
  ``updated_at`` (whole seconds, stable sort: ties keep the database's row
  order) and returns the last ``n``, oldest first;
- ``clear_user_memories(user_id=u)`` reads the user's memory ids and deletes
  them (``delete_user_memories``).

The adapter's mapping (not the library's): one ``MemoryManager`` with no model
(the calls used here never call one) over one database; ``append_message`` is
``add_user_memory`` with the content as the memory's text and the role as its
only topic (a memory has no role field; ``topics`` is the library's own list of
labels), and a falsy id returned is an error; ``get_history`` is
``search_user_memories(retrieval_method="last_n")``, the documented way to get
"the most recent memories"; ``forget`` is ``clear_user_memories``. agno's
database classes are synchronous, so every call runs in a worker thread
(:func:`in_thread`), as an async application has to run them; a cancelled call
returns only once its thread has finished (a thread cannot be stopped, and SPEC
wants a store without ``recover`` whole again when an interrupted call returns:
with a bare ``asyncio.to_thread`` a cancelled ``forget`` went on deleting after
the caller had read the history back; anyio's ``to_thread.run_sync`` waits the
same way by default). The adapter
validates only the contract's own vocabulary (``role``, ``limit``): user ids
and contents reach agno as given. No message ids (agno's ``memory_id`` is one
key for all users, SPEC's message ids are per user), no ``search`` (agno's is
"agentic": a model call), no compaction (``optimize_memories`` needs a model):
the ``history`` profile.

Each store's data lives in a namespace from ``store_namespace()`` (the SQLite
file's name, the PostgreSQL schema), so the suite can open it again; it is
dropped on close unless ``keep_data()`` says to keep it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from importlib.metadata import version
from typing import Any, TypeVar

from agno.db.schemas.memory import UserMemory
from agno.memory.manager import MemoryManager

from nomnesia.adapters.engines.session import keep_data, store_namespace

from . import _engines
from ._common import check_append, clamp

__all__ = ["AgnoMemoryStore", "in_thread", "postgres_factory", "sqlite_factory"]

LIBRARY = f"agno {version('agno')}"

T = TypeVar("T")


async def in_thread(call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``call`` in a worker thread; cancelled, it waits for the thread before it re-raises,
    so that nothing the call does lands after the caller saw it cancelled."""
    running = asyncio.ensure_future(asyncio.to_thread(call, *args, **kwargs))
    try:
        return await asyncio.shield(running)
    except asyncio.CancelledError:
        while not running.done():
            try:
                await asyncio.wait({running})
            except asyncio.CancelledError:
                continue  # cancelled again: the thread still runs, still wait for it
        raise


class AgnoMemoryStore:
    """The history profile over one ``MemoryManager``; the module docstring says who does what."""

    library = LIBRARY

    def __init__(self, db: Any, *, backend: str) -> None:
        self.db = db
        self.manager = MemoryManager(db=db)
        self.backends = (backend,)

    async def append_message(self, user_id: str, role: str, content: str) -> None:
        role, _ = check_append(role, None)
        memory = UserMemory(memory=content, topics=[role])
        memory_id = await in_thread(self.manager.add_user_memory, memory, user_id)
        if not memory_id:  # the documented failure value: "Returns: str: The id of the memory"
            raise RuntimeError(f"agno's add_user_memory returned {memory_id!r}")

    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]:
        limit = clamp("limit", limit)
        found = await in_thread(self.manager.search_user_memories, limit=limit,
                                retrieval_method="last_n", user_id=user_id)
        return [{"role": (m.topics or ["?"])[0], "content": m.memory} for m in found]

    async def forget(self, user_id: str) -> None:
        await in_thread(self.manager.clear_user_memories, user_id)

    async def aclose(self) -> None:
        engine = getattr(self.db, "db_engine", None)
        if engine is not None:
            await asyncio.to_thread(engine.dispose)


@asynccontextmanager
async def sqlite_factory() -> AsyncIterator[AgnoMemoryStore]:
    """``--store nomnesia.adapters.ecosystem.agno_memory:sqlite_factory``: ``SqliteDb`` on
    a file named by the suite's namespace, in the process's scratch directory."""
    from agno.db.sqlite import SqliteDb

    path = _engines.sqlite_path(store_namespace())
    store = AgnoMemoryStore(SqliteDb(db_file=str(path), memory_table="memories"),
                            backend="agno SqliteDb")
    try:
        yield store
    finally:
        try:
            await store.aclose()
        finally:
            if not keep_data():
                _engines.remove_sqlite(path)


def psycopg_url() -> str:
    """The engine's PostgreSQL URL for SQLAlchemy's psycopg 3 dialect, agno's documented one."""
    return "postgresql+psycopg://" + _engines.url("postgres").split("://", 1)[1]


@asynccontextmanager
async def postgres_factory() -> AsyncIterator[AgnoMemoryStore]:
    """``--store nomnesia.adapters.ecosystem.agno_memory:postgres_factory``: ``PostgresDb``
    with the suite's namespace as its schema, dropped (``CASCADE``) at the end."""
    from agno.db.postgres import PostgresDb

    schema = store_namespace()
    store = AgnoMemoryStore(PostgresDb(db_url=psycopg_url(), db_schema=schema,
                                       memory_table="memories"), backend="agno PostgresDb")
    try:
        yield store
    finally:
        try:
            if not keep_data():
                await asyncio.to_thread(_drop_schema, schema)
        finally:
            await store.aclose()


def _drop_schema(schema: str) -> None:
    """Drop the store's schema on a connection of its own (the store's pool may be broken)."""
    import psycopg

    with psycopg.connect(_engines.url("postgres"), autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
