"""The ecosystem's memory interfaces as first-class inputs of the suite: no adapter code to write.

Teams keep chat memory behind a library's interface, not nomnesia's protocol.
Each option below takes a factory of the interface's *own* object, and a small
module here maps it to the profile it can reach (SPEC.md, "Profiles")::

    python -m pytest --pyargs nomnesia.suite \\
        --langchain-history langchain_core.chat_history:InMemoryChatMessageHistory

Each mapping says in its docstring what it maps to what and what it cannot
see, and adds nothing the interface lacks: no lock, id, retry or ordering of
its own, since those would hide the library's own behaviour. It checks only
SPEC's own vocabulary, which the libraries do not have (a role outside SPEC's
four, a malformed message id: ``ValueError`` before any write); user ids,
contents, limits and ``k`` reach the library as given, to be judged. Where a library
is not installed, the option names the package to install (in the manner of
fsspec's registry of backends).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from functools import partial
from typing import Any

from ..core.fresh import Namespace
from ._base import InterfaceMismatch, has, per_user, what

__all__ = ["INTERFACES", "Interface", "InterfaceMismatch", "MissingLibrary", "by_option", "check",
           "per_user",
           "store_factory"]


class MissingLibrary(ImportError):
    """The library an interface option maps is not installed; says what to install."""


@dataclass(frozen=True)
class Interface:
    """One interface: its option, the library's class it takes, and the module that maps it."""

    option: str
    dest: str
    takes: str
    """What the option's factory returns, as the help text says it."""
    example: str
    """A real implementation from the library, as ``module:Class``."""
    module: str
    """The mapping, in ``nomnesia.suite.interfaces``."""
    needs: str
    """The module the library provides (its presence is the check)."""
    install: str
    """What to install where it is missing."""
    note: str = ""
    """A sentence the option's help adds (a deprecation upstream)."""

    def check_installed(self) -> None:
        if importlib.util.find_spec(self.needs.split(".")[0]) is None:
            raise MissingLibrary(f"{self.option} maps {self.takes}, which needs the library: "
                                 f"pip install {self.install}")


INTERFACES: tuple[Interface, ...] = (
    Interface("--langchain-history", "nomnesia_langchain_history",
              "a LangChain BaseChatMessageHistory (called with the session id if it takes one)",
              "langchain_core.chat_history:InMemoryChatMessageHistory", "langchain",
              "langchain_core", "langchain-core",
              "Deprecated upstream: langchain-core 1.6.4 deprecates BaseChatMessageHistory for "
              "LangGraph's short-term memory, a checkpointer: see --langgraph-checkpointer."),
    Interface("--langgraph-store", "nomnesia_langgraph_store",
              "a LangGraph BaseStore, with or without an index",
              "langgraph.store.memory:InMemoryStore", "langgraph", "langgraph.store",
              "langgraph"),
    Interface("--openai-session", "nomnesia_openai_session",
              "an OpenAI Agents SDK Session (called with the session id)",
              "agents:SQLiteSession", "openai_agents", "agents", "openai-agents"),
    Interface("--llama-chat-store", "nomnesia_llama_chat_store",
              "a llama-index BaseChatStore, or an AsyncDBChatStore (SQLAlchemyChatStore, the "
              "store behind llama-index's Memory)",
              "llama_index.core.storage.chat_store:SimpleChatStore", "llama_index",
              "llama_index.core", "llama-index-core"),
    Interface("--adk-sessions", "nomnesia_adk_sessions",
              "a Google ADK BaseSessionService",
              "google.adk.sessions:InMemorySessionService", "adk", "google.adk", "google-adk"),
    Interface("--mem0-memory", "nomnesia_mem0_memory",
              "a mem0 Memory or AsyncMemory (added with infer=False; for one that needs no "
              "network see nomnesia.suite.examples)",
              "mem0:AsyncMemory", "mem0", "mem0", "mem0ai"),
    Interface("--agent-framework-history", "nomnesia_agent_framework_history",
              "a Microsoft Agent Framework HistoryProvider (InMemoryHistoryProvider, "
              "RedisHistoryProvider ...)",
              "agent_framework:InMemoryHistoryProvider", "agent_framework", "agent_framework",
              "agent-framework-core"),
    Interface("--langgraph-checkpointer", "nomnesia_langgraph_checkpointer",
              "a LangGraph checkpointer (BaseCheckpointSaver, sync or async, or a context "
              "manager of one), driven through a compiled MessagesState graph, a thread per user",
              "langgraph.checkpoint.memory:InMemorySaver", "langgraph_checkpointer",
              "langgraph.checkpoint", "langgraph"),
    Interface("--adk-memory", "nomnesia_adk_memory",
              "a Google ADK BaseMemoryService (InMemoryMemoryService, SqliteMemoryService ...)",
              "google.adk.memory:InMemoryMemoryService", "adk_memory", "google.adk",
              "google-adk"),
    Interface("--agno-db", "nomnesia_agno_db",
              "an agno BaseDb or AsyncBaseDb (SqliteDb, PostgresDb, InMemoryDb ...)",
              "agno.db.in_memory:InMemoryDb", "agno", "agno.db", "agno"),
    Interface("--strands-session", "nomnesia_strands_session",
              "a Strands Agents SessionRepository with delete_session (FileSessionManager, "
              "ValkeySessionManager ...), driven as RepositorySessionManager drives it, a "
              "session per user",
              "nomnesia.suite.examples:strands_file", "strands", "strands.session",
              "strands-agents"),
    Interface("--crewai-storage", "nomnesia_crewai_storage",
              "a CrewAI memory StorageBackend (LanceDBStorage, QdrantEdgeStorage ...), a "
              "scope per user",
              "crewai.memory.storage.lancedb_storage:LanceDBStorage", "crewai_storage",
              "crewai.memory", "crewai"),
    Interface("--crewai-memory", "nomnesia_crewai_memory",
              "a CrewAI unified Memory (remember_many, recall, forget), a scope per user (for "
              "one that needs no network see nomnesia.suite.examples)",
              "crewai.memory.unified_memory:Memory", "crewai_memory", "crewai.memory",
              "crewai"),
    Interface("--pydantic-ai-conversations", "nomnesia_pydantic_ai_conversations",
              "a pydantic-ai ConversationStore (InMemoryConversationStore, or a backend of one's "
              "own), loaded and saved around each turn, a conversation per user",
              "pydantic_ai.conversation_store:InMemoryConversationStore",
              "pydantic_ai_conversations", "pydantic_ai.conversation_store",
              "pydantic-ai-slim"),
    Interface("--agno-entities", "nomnesia_agno_entities",
              "an agno EntityMemoryStore with a database and no model (per-user entity "
              "memory, namespace \"user\"; see nomnesia.suite.examples)",
              "nomnesia.suite.examples:agno_entities", "agno_entities", "agno.learn",
              "agno"),
)


def by_option(option: str) -> Interface:
    for interface in INTERFACES:
        if interface.option == option:
            return interface
    raise KeyError(option)


def store_factory(interface: Interface, target: Callable[..., Any], **options: Any
                  ) -> Callable[[], AbstractAsyncContextManager[Any]]:
    """The suite's store factory for ``target``, a factory of the interface's object
    (``options`` go to the mapping: ``sync=True`` for LangChain's sync methods)."""
    interface.check_installed()
    module = importlib.import_module(f"{__name__}.{interface.module}")
    opener: Callable[..., AbstractAsyncContextManager[Any]] = module.open_store
    made = partial(opener, target, **options)
    made.__doc__ = f"{interface.option} {getattr(target, '__qualname__', target)!s}"
    return made


def _installed(interface: Interface) -> bool:
    try:
        interface.check_installed()
    except MissingLibrary:
        return False
    return True


def mismatch(interface: Interface, value: str, found: Any, lacking: list[str]) -> str:
    """The one sentence that stops a run whose factory made the wrong object for its option:
    what the object is, what the option expects, and which option (or profile) fits."""
    others = []
    for other in INTERFACES:
        if other is interface or not _installed(other):
            continue
        mapped = importlib.import_module(f"{__name__}.{other.module}").MAPPED
        if mapped.fits(found):
            others.append(other.option)
    if others:
        fit = f"use {' or '.join(others)} for it"
    elif has(found, "append_message") and has(found, "get_history"):
        fit = "use --store for it: it has the protocol's own methods"
    else:
        fit = ("no interface option takes it: --store takes a store of one of SPEC.md's "
               "profiles (docs/suite.md, \"Profiles\")")
    return (f"{interface.option} {value}: the factory made {what(found)}, which has no "
            f"{', '.join(lacking)}; {interface.option} expects {interface.takes}; {fit}")


async def check(interface: Interface, target: Callable[..., Any], value: str,
                **options: Any) -> None:
    """Before the first test: make one object with the factory and check that it has every
    method the option maps; ``InterfaceMismatch`` with :func:`mismatch`'s sentence if not.

    A per-user factory is called with a fresh id (``fresh.Namespace``): making the object
    writes nothing the suite would read.
    """
    opener = importlib.import_module(f"{__name__}.{interface.module}").open_store
    try:
        async with opener(target, **options) as store:
            await store._object(Namespace.new().user("interface-check"))
    except InterfaceMismatch as exc:
        raise InterfaceMismatch(exc.found, exc.lacking,
                                mismatch(interface, value, exc.found, exc.lacking)) from None
