"""Pasteable factories for the interface options, in memory and on a real engine.

Each is what a team's own factory looks like, made importable so that the README's
commands run as written::

    python -m pytest --pyargs nomnesia.suite --mem0-memory nomnesia.suite.examples:mem0_qdrant
    python -m pytest --pyargs nomnesia.suite \\
        --llama-chat-store nomnesia.suite.examples:llama_postgres

The engine ones take their server from the running suite (``engine_url``: embedded
engines from the ``embedded`` extra, or ``--nomnesia-backends docker|external``). They
share one database for the whole run, as an application does: the suite writes fresh ids
in every test and forgets what each test wrote (docs/suite.md), so the tables need not
be new. Copy one and change the URL to point the suite at your own deployment.

mem0 offline: mem0 reaches the network for its embedder, its LLM (with ``infer=True``)
and its telemetry. :func:`mem0_offline_config` is a config that needs none of them: a
deterministic hashing embedder (``nomnesia.adapters.text.HashingEmbedder``, word and
character 3-gram features, no model download) put in place of mem0's by
:func:`mem0_offline`, an OpenAI LLM that is never called (the suite adds with
``infer=False``), and ``MEM0_TELEMETRY=False`` set before mem0 is imported.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, TypeVar

from nomnesia.adapters.engines.session import engine_url
from nomnesia.adapters.text import HashingEmbedder

__all__ = ["MEM0_DIMS", "adk_postgres", "agent_framework_memory", "agent_framework_redis",
           "agents_postgres", "checkpointer_postgres", "checkpointer_postgres_pool",
           "checkpointer_redis", "checkpointer_sqlite",
           "checkpointer_sqlite_sync",
           "langchain_postgres", "langgraph_postgres", "llama_postgres", "mem0_memory",
           "mem0_offline", "mem0_offline_config", "mem0_pgvector", "mem0_qdrant",
           "mem0_sync_memory"]

MEM0_DIMS = 256
"""Dimensions of the hashing embedder the mem0 factories use."""

M = TypeVar("M")


def _asyncpg_url() -> str:
    """The suite's PostgreSQL for SQLAlchemy's asyncpg dialect (the libraries' async path)."""
    return "postgresql+asyncpg://" + engine_url("postgres").split("://", 1)[1]


# --------------------------------------------------------------------------- mem0


def _mem0_telemetry_off() -> None:
    """mem0 reads ``MEM0_TELEMETRY`` when it is imported; offline, it must be off first."""
    os.environ.setdefault("MEM0_TELEMETRY", "False")


def mem0_offline_config(vector_store: dict[str, Any], *, history_db_path: str | None = None,
                        dims: int = MEM0_DIMS) -> dict[str, Any]:
    """A mem0 config dict (``Memory.from_config`` / ``AsyncMemory.from_config``) that makes
    no network call while the suite runs: ``vector_store`` as given (its
    ``embedding_model_dims`` set to ``dims``), an OpenAI embedder and LLM with a placeholder
    key (made, never called: :func:`mem0_offline` replaces the embedder, and ``infer=False``
    never asks the LLM)."""
    store = {**vector_store, "config": {**vector_store.get("config", {}),
                                        "embedding_model_dims": dims}}
    config: dict[str, Any] = {
        "vector_store": store,
        "embedder": {"provider": "openai", "config": {"api_key": "unused-offline",
                                                      "embedding_dims": dims}},
        "llm": {"provider": "openai", "config": {"api_key": "unused-infer-false"}},
    }
    if history_db_path is not None:
        config["history_db_path"] = history_db_path
    return config


def mem0_offline(memory: M, *, dims: int = MEM0_DIMS) -> M:
    """``memory`` (a mem0 ``Memory`` or ``AsyncMemory``) with the hashing embedder in place
    of its own: mem0 takes an embedder only by provider name, so the object is swapped."""
    from mem0.configs.embeddings.base import BaseEmbedderConfig
    from mem0.embeddings.base import EmbeddingBase

    hashing = HashingEmbedder(dims)

    class Hashing(EmbeddingBase):  # type: ignore[misc,unused-ignore]
        def embed(self, text: str, memory_action: str | None = None) -> list[float]:
            return hashing.embed_one(text)

    memory.embedding_model = Hashing(BaseEmbedderConfig(embedding_dims=dims))  # type: ignore[attr-defined]
    return memory


@asynccontextmanager
async def _mem0_local(asynchronous: bool) -> AsyncIterator[Any]:
    _mem0_telemetry_off()
    from mem0 import AsyncMemory, Memory

    where = Path(tempfile.mkdtemp(prefix="nomnesia-mem0-"))
    config = mem0_offline_config(
        {"provider": "qdrant", "config": {"collection_name": "memories",
                                          "path": str(where / "qdrant")}},
        history_db_path=str(where / "history.db"))
    kind: Any = AsyncMemory if asynchronous else Memory
    try:
        yield mem0_offline(kind.from_config(config))
    finally:
        shutil.rmtree(where, ignore_errors=True)


def mem0_memory() -> Any:
    """``--mem0-memory``: an ``AsyncMemory`` on a local Qdrant directory of its own (Qdrant's
    local mode: no server), offline."""
    return _mem0_local(True)


def mem0_sync_memory() -> Any:
    """``--mem0-memory``: the same with mem0's sync ``Memory`` (called in worker threads)."""
    return _mem0_local(False)


@asynccontextmanager
async def _mem0_on(vector_store: dict[str, Any]) -> AsyncIterator[Any]:
    """An offline ``AsyncMemory`` on ``vector_store``, its history database (SQLite) in a
    temporary directory that goes when the store closes."""
    _mem0_telemetry_off()
    from mem0 import AsyncMemory

    where = Path(tempfile.mkdtemp(prefix="nomnesia-mem0-"))
    try:
        config = mem0_offline_config(vector_store, history_db_path=str(where / "history.db"))
        yield mem0_offline(AsyncMemory.from_config(config))
    finally:
        shutil.rmtree(where, ignore_errors=True)


def mem0_qdrant() -> Any:
    """``--mem0-memory``: an ``AsyncMemory`` on the suite's Qdrant server, offline. One
    collection for the run; mem0's history database (SQLite) in a temporary file."""
    return _mem0_on({"provider": "qdrant", "config": {"collection_name": "nomnesia_mem0",
                                                      "url": engine_url("qdrant")}})


def mem0_pgvector() -> Any:
    """``--mem0-memory``: an ``AsyncMemory`` on the suite's PostgreSQL with pgvector (needs
    ``psycopg[pool]``, the ``pgvector`` extra), offline. One collection (a table) for the
    run."""
    return _mem0_on({"provider": "pgvector",
                     "config": {"collection_name": "nomnesia_mem0",
                                "connection_string": engine_url("postgres")}})


# --------------------------------------------------------------------------- the others


def llama_postgres() -> Any:
    """``--llama-chat-store``: llama-index's ``SQLAlchemyChatStore`` (the store behind
    ``Memory``) on the suite's PostgreSQL (needs ``asyncpg``), one table for the run."""
    from llama_index.core.storage.chat_store.sql import SQLAlchemyChatStore

    return SQLAlchemyChatStore(table_name="nomnesia_chat", async_database_uri=_asyncpg_url())


@asynccontextmanager
async def agents_postgres(session_id: str) -> AsyncIterator[Any]:
    """``--openai-session``: the Agents SDK's ``SQLAlchemySession`` on the suite's
    PostgreSQL (needs ``sqlalchemy`` and ``asyncpg``); its engine is disposed with the
    session, which has no close of its own. The engine is made here and passed to the
    constructor, the form every release documents (``SQLAlchemySession.engine`` came in
    0.4; before, the session keeps its engine private), so the factory runs the releases
    the known-bugs benchmark pins as well."""
    from agents.extensions.memory import SQLAlchemySession
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(_asyncpg_url())
    try:
        yield SQLAlchemySession(session_id, engine=engine, create_tables=True)
    finally:
        await engine.dispose()


@asynccontextmanager
async def langgraph_postgres() -> AsyncIterator[Any]:
    """``--langgraph-store``: LangGraph's ``AsyncPostgresStore`` on the suite's PostgreSQL
    (needs ``langgraph-checkpoint-postgres``), its one ``store`` table set up once."""
    from langgraph.store.postgres import AsyncPostgresStore

    async with AsyncPostgresStore.from_conn_string(engine_url("postgres")) as store:
        await store.setup()
        yield store


@asynccontextmanager
async def langchain_postgres(session_id: str) -> AsyncIterator[Any]:
    """``--langchain-history``: langchain-postgres's ``PostgresChatMessageHistory`` on the
    suite's PostgreSQL (needs ``langchain-postgres``), one table for the run, one async
    connection per session. The library takes only UUIDs as session ids (its documented
    constraint), so the user id is mapped to one, as an application keyed by user does:
    ``uuid5`` of the id, one UUID per id and no two ids on one."""
    import uuid

    import psycopg
    from langchain_postgres import PostgresChatMessageHistory

    connection = await psycopg.AsyncConnection.connect(engine_url("postgres"))
    try:
        await PostgresChatMessageHistory.acreate_tables(connection, "nomnesia_chat")
        session = str(uuid.uuid5(uuid.NAMESPACE_URL, f"nomnesia:{session_id}"))
        yield PostgresChatMessageHistory("nomnesia_chat", session,
                                         async_connection=connection)
    finally:
        await connection.close()


@asynccontextmanager
async def adk_postgres() -> AsyncIterator[Any]:
    """``--adk-sessions``: Google ADK's ``DatabaseSessionService`` on the suite's PostgreSQL
    (needs ``asyncpg``), closed with the store."""
    from google.adk.sessions import DatabaseSessionService

    service = DatabaseSessionService(db_url=_asyncpg_url())
    try:
        yield service
    finally:
        await service.close()


def agent_framework_memory() -> Any:
    """``--agent-framework-history``: the framework's default ``InMemoryHistoryProvider``."""
    from agent_framework import InMemoryHistoryProvider

    return InMemoryHistoryProvider()


@asynccontextmanager
async def agent_framework_redis() -> AsyncIterator[Any]:
    """``--agent-framework-history``: ``RedisHistoryProvider`` (``agent-framework-redis``,
    whose pins cap ``redis`` and ``redisvl``) on the suite's Redis, one application for the
    run."""
    import redis.asyncio as redis
    from agent_framework_redis import RedisHistoryProvider

    client: Any = redis.from_url(engine_url("redis"), decode_responses=True)
    try:
        yield RedisHistoryProvider(redis_client=client, application_id="nomnesia")
    finally:
        await client.aclose()


# --------------------------------------------------------------------------- checkpointers


@asynccontextmanager
async def checkpointer_sqlite() -> AsyncIterator[Any]:
    """``--langgraph-checkpointer``: LangGraph's ``AsyncSqliteSaver``
    (``langgraph-checkpoint-sqlite``, ``aiosqlite``) on a SQLite file of its own in a
    temporary directory, which goes when the store closes."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    where = Path(tempfile.mkdtemp(prefix="nomnesia-checkpoints-"))
    try:
        async with AsyncSqliteSaver.from_conn_string(str(where / "checkpoints.db")) as saver:
            yield saver
    finally:
        shutil.rmtree(where, ignore_errors=True)


@contextmanager
def checkpointer_sqlite_sync() -> Iterator[Any]:
    """``--langgraph-checkpointer``: the sync ``SqliteSaver`` (its async methods raise), on
    a SQLite file of its own; the suite drives it through the graph's sync methods in worker
    threads."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    where = Path(tempfile.mkdtemp(prefix="nomnesia-checkpoints-"))
    try:
        with SqliteSaver.from_conn_string(str(where / "checkpoints.db")) as saver:
            yield saver
    finally:
        shutil.rmtree(where, ignore_errors=True)


@asynccontextmanager
async def checkpointer_postgres() -> AsyncIterator[Any]:
    """``--langgraph-checkpointer``: LangGraph's ``AsyncPostgresSaver``
    (``langgraph-checkpoint-postgres``) on the suite's PostgreSQL, its tables set up once
    (``setup`` is idempotent: it runs only the migrations not yet run)."""
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    async with AsyncPostgresSaver.from_conn_string(engine_url("postgres")) as saver:
        await saver.setup()
        yield saver


@asynccontextmanager
async def checkpointer_postgres_pool() -> AsyncIterator[Any]:
    """``--langgraph-checkpointer``: ``AsyncPostgresSaver`` on a psycopg ``AsyncConnectionPool``
    (``psycopg[pool]``) of the suite's PostgreSQL, with the connection settings
    ``from_conn_string`` uses, as LangGraph's docs set it up for production: the pool
    replaces a connection the server closed, where ``from_conn_string``'s one connection
    stays closed (langgraph issue 7304)."""
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    settings = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    async with AsyncConnectionPool(engine_url("postgres"), min_size=1, max_size=4,
                                   kwargs=settings, open=False) as pool:
        saver = AsyncPostgresSaver(pool)  # type: ignore[arg-type,unused-ignore]
        await saver.setup()
        yield saver


@asynccontextmanager
async def checkpointer_redis() -> AsyncIterator[Any]:
    """``--langgraph-checkpointer``: langgraph-checkpoint-redis's ``AsyncRedisSaver`` on the
    suite's ``redis-search`` engine (Redis with RediSearch and RedisJSON, which the saver's
    indexes need), its indexes made once (``asetup`` keeps existing ones)."""
    from langgraph.checkpoint.redis.aio import AsyncRedisSaver

    async with AsyncRedisSaver.from_conn_string(engine_url("redis-search")) as saver:
        yield saver
# --------------------------------------------------------------------------- ADK memory, agno
# (issue 46: a block of its own, so that other options' factories merge beside it)

__all__ += ["ADK_MEMORY_MAX_RESULTS", "adk_memory", "adk_memory_sqlite",
            "adk_memory_sqlite_memory", "agno_postgres", "agno_sqlite"]

ADK_MEMORY_MAX_RESULTS = 100_000
"""``SqliteMemoryService``'s cap of results per search, set above any user's memories:
``--adk-memory`` reads a user's memories through one search (ADK's memory has no list)."""


def adk_memory() -> Any:
    """``--adk-memory``: ADK's ``InMemoryMemoryService`` (keyword search, at most 10 results
    per search: a history over 10 memories cannot be read through it)."""
    from google.adk.memory import InMemoryMemoryService

    return InMemoryMemoryService()


@asynccontextmanager
async def adk_memory_sqlite_memory() -> AsyncIterator[Any]:
    """``--adk-memory``: ADK's ``SqliteMemoryService`` on an in-memory database (one
    connection, closed with the store): in memory, with a search whose cap can be raised,
    so every user's memories can be read."""
    from google.adk.memory import SqliteMemoryService

    service = SqliteMemoryService(":memory:", max_results=ADK_MEMORY_MAX_RESULTS)
    try:
        yield service
    finally:
        await service.close()


@asynccontextmanager
async def adk_memory_sqlite() -> AsyncIterator[Any]:
    """``--adk-memory``: ADK's ``SqliteMemoryService`` (FTS5 search) on a file in a temporary
    directory, removed with the store. ADK has no PostgreSQL memory service (its others
    need MongoDB, Firestore or Vertex AI)."""
    from google.adk.memory import SqliteMemoryService

    where = Path(tempfile.mkdtemp(prefix="nomnesia-adk-memory-"))
    service = SqliteMemoryService(where / "memory.db", max_results=ADK_MEMORY_MAX_RESULTS)
    try:
        yield service
    finally:
        await service.close()
        shutil.rmtree(where, ignore_errors=True)


@contextmanager
def agno_sqlite() -> Iterator[Any]:
    """``--agno-db``: agno's ``SqliteDb`` on a file in a temporary directory, removed with the
    store (agno makes its tables on first use)."""
    from agno.db.sqlite import SqliteDb

    where = Path(tempfile.mkdtemp(prefix="nomnesia-agno-"))
    try:
        yield SqliteDb(db_file=str(where / "agno.db"))
    finally:
        shutil.rmtree(where, ignore_errors=True)


def agno_postgres() -> Any:
    """``--agno-db``: agno's ``PostgresDb`` on the suite's PostgreSQL (psycopg 3)."""
    from agno.db.postgres import PostgresDb

    return PostgresDb(db_url="postgresql+psycopg://" + engine_url("postgres").split("://", 1)[1])


# --------------------------------------------------------------------------- Strands sessions
# (issue 46: a block of its own, so that other options' factories merge beside it)

__all__ += ["STRANDS_OWN_SESSION", "strands_file", "strands_sql_postgres", "strands_sql_sqlite",
            "strands_valkey"]

STRANDS_OWN_SESSION = "nomnesia-repository"
"""The session id a Strands backend's constructor is given: each is a session manager and a
repository in one, and makes that session when it is made (the suite writes none there)."""


@contextmanager
def strands_file() -> Iterator[Any]:
    """``--strands-session``: Strands' ``FileSessionManager`` as a repository, on a temporary
    directory removed with the store (a directory per session id)."""
    from strands.session import FileSessionManager

    where = Path(tempfile.mkdtemp(prefix="nomnesia-strands-"))
    try:
        yield FileSessionManager(session_id=STRANDS_OWN_SESSION, storage_dir=str(where))
    finally:
        shutil.rmtree(where, ignore_errors=True)


@contextmanager
def strands_valkey() -> Iterator[Any]:
    """``--strands-session``: ``ValkeySessionManager`` (``strands-valkey-session-manager``,
    which keeps each record with ``JSON.SET``) on the suite's ``redis-search`` engine, Redis
    with RedisJSON, through the ``valkey`` client."""
    import valkey
    from strands_valkey_session_manager import ValkeySessionManager

    client = valkey.Valkey.from_url(engine_url("redis-search"))
    try:
        yield ValkeySessionManager(session_id=STRANDS_OWN_SESSION, client=client)
    finally:
        client.close()  # type: ignore[no-untyped-call,unused-ignore]


def _strands_sql(url: str) -> Any:
    from strands_sql_session_manager import SQLSessionManager

    return SQLSessionManager(session_id=STRANDS_OWN_SESSION, url=url)


@contextmanager
def strands_sql_sqlite() -> Iterator[Any]:
    """``--strands-session``: ``SQLSessionManager`` (``strands-sql-session-manager``, the
    key-value ``KeyValueSessionManager`` of ``strands-agents-session`` over one SQLAlchemy
    table) on a SQLite file in a temporary directory."""
    where = Path(tempfile.mkdtemp(prefix="nomnesia-strands-sql-"))
    manager = _strands_sql(f"sqlite:///{where / 'sessions.db'}")
    try:
        yield manager
    finally:
        manager.storage.engine.dispose()
        shutil.rmtree(where, ignore_errors=True)


@contextmanager
def strands_sql_postgres() -> Iterator[Any]:
    """``--strands-session``: ``SQLSessionManager`` on the suite's PostgreSQL (psycopg 3)."""
    manager = _strands_sql("postgresql+psycopg://" + engine_url("postgres").split("://", 1)[1])
    try:
        yield manager
    finally:
        manager.storage.engine.dispose()


# --------------------------------------------------------------------------- CrewAI memory
# (issue 46, items 2 and 3: a block of its own, so that other options' factories merge beside it)

__all__ += ["crewai_lancedb", "crewai_memory", "crewai_memory_llm"]

CREWAI_DIMS = 256
"""Dimensions of the hashing embedder ``crewai_memory`` gives ``Memory``."""


def _crewai_offline() -> None:
    """CrewAI sends telemetry and offers execution traces (``crewai_core.telemetry``,
    ``user_data``): offline, each waits on the network. Its documented opt-outs, set before
    CrewAI is imported (a team's own settings win)."""
    os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
    os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")


@contextmanager
def crewai_lancedb() -> Iterator[Any]:
    """``--crewai-storage``: CrewAI's default memory backend, ``LanceDBStorage``, in a
    temporary directory removed with the store (LanceDB is embedded: files, no server)."""
    _crewai_offline()
    from crewai.memory.storage.lancedb_storage import LanceDBStorage

    where = Path(tempfile.mkdtemp(prefix="nomnesia-crewai-"))
    try:
        yield LanceDBStorage(path=where / "memory")
    finally:
        shutil.rmtree(where, ignore_errors=True)


def crewai_memory_llm() -> Any:
    """A CrewAI ``BaseLLM`` that reaches no network: the one question ``Memory`` asks with
    every field given, whether a new memory consolidates similar ones, it answers "keep
    them all and insert the new one" (``ConsolidationPlan(actions=[], insert_new=True)``,
    also ``Memory``'s own default when the LLM fails); anything else is refused, so a
    mapping that left a field to the LLM would show."""
    _crewai_offline()
    from crewai.llms.base_llm import BaseLLM

    class KeepEverything(BaseLLM):  # type: ignore[misc,unused-ignore]
        def call(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
            text = str(messages)
            if "consolidat" not in text.lower():
                raise RuntimeError("the offline LLM answers only the consolidation question")
            return '{"actions": [], "insert_new": true, "insert_reason": "offline"}'

    return KeepEverything(model="nomnesia-offline")


@contextmanager
def crewai_memory() -> Iterator[Any]:
    """``--crewai-memory``: CrewAI's ``Memory`` on ``LanceDBStorage`` in a temporary
    directory, with :func:`crewai_memory_llm` and a deterministic hashing embedder
    (``embedder=`` takes any ``list[str] -> list[vector]`` callable): no model download,
    no API key. Closed with the store (``Memory.close`` drains its background saves)."""
    _crewai_offline()
    from crewai.memory.storage.lancedb_storage import LanceDBStorage
    from crewai.memory.unified_memory import Memory

    hashing = HashingEmbedder(CREWAI_DIMS)
    where = Path(tempfile.mkdtemp(prefix="nomnesia-crewai-memory-"))

    def embedder(texts: list[str]) -> list[list[float]]:
        """Refuses a text that is not a ``str`` (``TypeError``), as an embedding API does:
        ``Memory.recall`` hands its query to the embedder unchecked."""
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"the text to embed must be a str, not {type(text).__name__}")
        return [hashing.embed_one(text) for text in texts]

    memory = Memory(llm=crewai_memory_llm(), embedder=embedder,
                    storage=LanceDBStorage(path=where / "memory"))
    try:
        yield memory
    finally:
        memory.close()
        shutil.rmtree(where, ignore_errors=True)


# --------------------------------------------------------------------------- agno entity memory
# (issue 46 item 3: a block of its own, so that other options' factories merge beside it)

__all__ += ["agno_entities", "agno_entities_postgres", "agno_entities_sqlite"]


def _entity_memory(db: Any) -> Any:
    """agno's ``EntityMemoryStore`` on ``db``, per user (``namespace="user"``), with no
    model (so no supersession judge: ``--agno-entities`` refuses a store with one)."""
    from agno.learn import EntityMemoryConfig, EntityMemoryStore

    return EntityMemoryStore(config=EntityMemoryConfig(db=db, namespace="user"))


def agno_entities() -> Any:
    """``--agno-entities``: agno's ``EntityMemoryStore`` on ``SqliteDb`` over an in-memory
    SQLite database (one connection, ``StaticPool``, so every session sees it). agno's own
    ``InMemoryDb`` cannot hold entity memory: its learning methods raise "not yet
    implemented" (agno 3.1.10), which the store logs and reports as "Failed to record"."""
    from agno.db.sqlite import SqliteDb
    from sqlalchemy import create_engine
    from sqlalchemy.pool import StaticPool

    engine = create_engine("sqlite://", poolclass=StaticPool,
                           connect_args={"check_same_thread": False})
    return _entity_memory(SqliteDb(db_engine=engine))


@contextmanager
def agno_entities_sqlite() -> Iterator[Any]:
    """``--agno-entities``: agno's ``EntityMemoryStore`` on ``SqliteDb``, a file in a
    temporary directory removed with the store (agno makes its tables on first use)."""
    from agno.db.sqlite import SqliteDb

    where = Path(tempfile.mkdtemp(prefix="nomnesia-agno-entities-"))
    try:
        yield _entity_memory(SqliteDb(db_file=str(where / "agno.db")))
    finally:
        shutil.rmtree(where, ignore_errors=True)


def agno_entities_postgres() -> Any:
    """``--agno-entities``: agno's ``EntityMemoryStore`` on ``AsyncPostgresDb`` on the
    suite's PostgreSQL (psycopg 3, async). Not the sync ``PostgresDb``: the store's async
    tool methods call a sync database inline, on the event loop (as under agno's
    ``Agent.arun``), so a stalled engine would stall the whole process, the suite's own
    timers included."""
    from agno.db.postgres import AsyncPostgresDb

    url = "postgresql+psycopg_async://" + engine_url("postgres").split("://", 1)[1]
    return _entity_memory(AsyncPostgresDb(db_url=url))
