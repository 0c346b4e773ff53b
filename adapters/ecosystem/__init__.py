"""Audits of third-party memory components: the suite run on stores we did not write.

A library whose object speaks one of the suite's interfaces (an Agents SDK
``Session``, an ADK ``BaseSessionService``, a LangChain chat history, a LangGraph
``BaseStore``) is audited through that interface option, and its module here only
makes the library's object on an engine. Otherwise the module is the thinnest
faithful adapter a team would write to put the library behind the contract
(``nomnesia.suite.MemoryStore``), with a ``--store`` factory; its docstring says
which behaviour is the library's and which the adapter's. What each audit found is
graded and traced in ``causes/``; ``repro.py`` runs the standalone reproductions in
``docs/ecosystem/repro/``. The libraries come with the ``ecosystem`` extra::

    pip install 'nomnesia[ecosystem]'
    python -m pytest --pyargs nomnesia.suite --store nomnesia.adapters.ecosystem.mem0:factory
    nox -s "audit(mem0)"     # one library: suite + report + findings check
    nox -s audits            # all of them, every reproduction, and docs/ecosystem.md

What the suite finds is a *finding*, not a failure of this project: ``report``
writes ``docs/ecosystem.md`` and fails only when the findings differ from the
checked-in ``expected.json`` (a new failure, or a fixed one).

Importing this package imports no third-party library; :data:`AUDITS` is the
one list the nox sessions, the report and the tests read.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["AUDITS", "Audit"]


@dataclass(frozen=True)
class Audit:
    """One audited library configuration: how the suite reaches it, and what counts.

    ``option`` is the suite option that takes ``factory``: ``--store`` for an
    adapter of this package, or one of the interface options (``--openai-session``,
    ``--langchain-history``...), whose mapping in ``nomnesia.suite.interfaces``
    adds nothing the library lacks. ``seed`` pins the randomised tests (the model
    test, the concurrency workloads), so a new seed cannot turn ``nox -s audits``
    red with a failure nobody traced; it is printed in the report and replayable
    with ``--nomnesia-seed``.
    """

    name: str
    factory: str
    distributions: tuple[str, ...]
    title: str
    option: str = "--store"
    args: tuple[str, ...] = ()
    """More suite options for this configuration (``--langchain-sync``)."""
    seed: int = 20261203
    requires: tuple[str, ...] = ()
    """Requirements installed in a venv of the audit's own (``run.py``), for a library whose
    pins conflict with the ``ecosystem`` extra's; empty: it runs with the others."""

    @property
    def module(self) -> str:
        return self.factory.partition(":")[0]

    @property
    def argv(self) -> list[str]:
        """The suite's command-line options that run this audit."""
        return [self.option, self.factory, *self.args, f"--nomnesia-seed={self.seed}"]


_P = "nomnesia.adapters.ecosystem"

AUDITS: dict[str, Audit] = {a.name: a for a in (
    Audit("langgraph-memory", f"{_P}.langgraph:memory_factory", ("langgraph",),
          "LangGraph InMemoryStore"),
    Audit("langgraph-postgres", f"{_P}.langgraph:postgres_factory",
          ("langgraph", "langgraph-checkpoint-postgres"),
          "LangGraph AsyncPostgresStore + pgvector"),
    Audit("langchain-postgres", f"{_P}.langchain_postgres:factory", ("langchain-postgres",),
          "langchain-postgres PostgresChatMessageHistory + PGVectorStore"),
    Audit("mem0", f"{_P}.mem0:factory", ("mem0ai", "qdrant-client"),
          "mem0 AsyncMemory (infer=False) on local Qdrant"),
    Audit("mem0-memory", f"{_P}.mem0:memory", ("mem0ai", "qdrant-client"),
          "mem0 AsyncMemory (infer=False) on local Qdrant, through --mem0-memory",
          "--mem0-memory"),
    Audit("llama-index-redis", f"{_P}.llama_index:redis_factory",
          ("llama-index-core", "llama-index-storage-chat-store-redis"),
          "llama-index RedisChatStore + VectorStoreIndex"),
    Audit("llama-index-postgres", f"{_P}.llama_index:postgres_factory",
          ("llama-index-core", "llama-index-storage-chat-store-postgres"),
          "llama-index PostgresChatStore + VectorStoreIndex"),
    # --- session stores through the suite's interface mappings (issue 22) -------------
    Audit("agents-sqlite-memory", f"{_P}.openai_agents:sqlite_memory", ("openai-agents",),
          "OpenAI Agents SDK SQLiteSession (in memory)", "--openai-session"),
    Audit("agents-sqlite-file", f"{_P}.openai_agents:sqlite_file", ("openai-agents",),
          "OpenAI Agents SDK SQLiteSession (file)", "--openai-session"),
    Audit("agents-sqlalchemy-postgres", f"{_P}.openai_agents:sqlalchemy_postgres",
          ("openai-agents", "sqlalchemy", "asyncpg"),
          "OpenAI Agents SDK SQLAlchemySession on PostgreSQL", "--openai-session"),
    Audit("agents-redis", f"{_P}.openai_agents:redis_session", ("openai-agents", "redis"),
          "OpenAI Agents SDK RedisSession", "--openai-session"),
    Audit("adk-memory", f"{_P}.adk:in_memory", ("google-adk",),
          "Google ADK InMemorySessionService", "--adk-sessions"),
    Audit("adk-sqlite", f"{_P}.adk:sqlite", ("google-adk",),
          "Google ADK SqliteSessionService", "--adk-sessions"),
    Audit("adk-database-postgres", f"{_P}.adk:database_postgres", ("google-adk", "sqlalchemy"),
          "Google ADK DatabaseSessionService on PostgreSQL", "--adk-sessions"),
    Audit("llama-memory-sqlite", f"{_P}.llama_memory:sqlite_factory",
          ("llama-index-core", "aiosqlite"),
          "llama-index Memory on SQLAlchemyChatStore (aiosqlite)"),
    Audit("llama-memory-postgres", f"{_P}.llama_memory:postgres_factory",
          ("llama-index-core", "asyncpg"),
          "llama-index Memory on SQLAlchemyChatStore (PostgreSQL)"),
    Audit("langgraph-redis", f"{_P}.langgraph_redis:store", ("langgraph-checkpoint-redis",),
          "langgraph-checkpoint-redis AsyncRedisStore", "--langgraph-store"),
    Audit("langgraph-redis-index", f"{_P}.langgraph_redis:indexed_store",
          ("langgraph-checkpoint-redis",),
          "langgraph-checkpoint-redis AsyncRedisStore with an index", "--langgraph-store"),
    Audit("langchain-redis", f"{_P}.langchain_histories:redis_history",
          ("langchain-redis", "redis"),
          "langchain-redis RedisChatMessageHistory", "--langchain-history"),
    Audit("langchain-redis-resp2", f"{_P}.langchain_histories:redis_history_resp2",
          ("langchain-redis", "redis"),
          "langchain-redis RedisChatMessageHistory (RESP2 client)", "--langchain-history"),
    Audit("langchain-sql-sqlite", f"{_P}.langchain_histories:sql_sqlite",
          ("langchain-community", "sqlalchemy"),
          "langchain-community SQLChatMessageHistory (SQLite)", "--langchain-history"),
    Audit("langchain-sql-postgres", f"{_P}.langchain_histories:sql_postgres",
          ("langchain-community", "sqlalchemy"),
          "langchain-community SQLChatMessageHistory (PostgreSQL)", "--langchain-history"),
    Audit("agent-framework-redis", f"{_P}.agent_framework:factory",
          ("agent-framework-redis", "agent-framework-core", "redis"),
          "Microsoft Agent Framework RedisHistoryProvider", "--agent-framework-history",
          requires=("agent-framework-redis>=1.0.0b261022",)),
    # --- issue 48: two more libraries, behind --store adapters of this package ---------
    Audit("agno-sqlite", f"{_P}.agno_memory:sqlite_factory", ("agno", "sqlalchemy"),
          "agno MemoryManager on SqliteDb"),
    Audit("agno-postgres", f"{_P}.agno_memory:postgres_factory",
          ("agno", "sqlalchemy", "psycopg"), "agno MemoryManager on PostgresDb (psycopg)"),
    Audit("autogen-redis", f"{_P}.autogen_memory:redis_factory",
          ("autogen-ext", "autogen-core", "redisvl", "redis"),
          "AutoGen RedisMemory (sequential) on Redis with RediSearch"),
    Audit("autogen-list", f"{_P}.autogen_memory:list_factory", ("autogen-core",),
          "AutoGen ListMemory"),
    # --- issue 46: Strands session repositories, through --strands-session --------------
    # (the examples' factories: a temporary directory, or fresh ids on a shared engine)
    Audit("strands-file", "nomnesia.suite.examples:strands_file", ("strands-agents",),
          "Strands FileSessionManager", "--strands-session"),
    Audit("strands-valkey", "nomnesia.suite.examples:strands_valkey",
          ("strands-valkey-session-manager", "strands-agents", "valkey"),
          "Strands ValkeySessionManager on Redis with RedisJSON", "--strands-session"),
    Audit("strands-sql-sqlite", "nomnesia.suite.examples:strands_sql_sqlite",
          ("strands-sql-session-manager", "strands-session-sql", "strands-agents-session",
           "sqlalchemy"),
          "Strands SQLSessionManager (strands-agents-session) on SQLite", "--strands-session"),
    Audit("strands-sql-postgres", "nomnesia.suite.examples:strands_sql_postgres",
          ("strands-sql-session-manager", "strands-session-sql", "strands-agents-session",
           "sqlalchemy", "psycopg"),
          "Strands SQLSessionManager (strands-agents-session) on PostgreSQL",
          "--strands-session"),
    # --- issue 46 items 2-3: CrewAI's unified memory, through its two interface options.
    # crewai pins openai<3, openai-agents needs openai>=3: a venv of their own.
    Audit("crewai-lancedb", f"{_P}.crewai:lancedb", ("crewai", "lancedb"),
          "CrewAI LanceDBStorage (memory StorageBackend)", "--crewai-storage",
          requires=("crewai>=1.15.44",)),
    Audit("crewai-memory", f"{_P}.crewai:memory", ("crewai", "lancedb"),
          "CrewAI Memory (remember_many, recall, forget) on LanceDBStorage",
          "--crewai-memory", requires=("crewai>=1.15.44",),
          # Each save runs CrewAI's encoding Flow (embed, search, write) on Memory's one
          # save worker: on 2 shared cores the adversarial-ids test alone needs over 120 s.
          args=("--nomnesia-timeout=600",)),
    # --- issue 46 item 2: pydantic-ai's ConversationStore (its harness backends are not
    # released: adapters/ecosystem/pydantic_ai_conversations.py) --------------------------
    Audit("pydantic-ai-in-memory", f"{_P}.pydantic_ai_conversations:in_memory",
          ("pydantic-ai-slim",), "pydantic-ai InMemoryConversationStore",
          "--pydantic-ai-conversations"),
)}
