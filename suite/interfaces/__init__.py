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
import inspect
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from functools import partial
from typing import Any

__all__ = ["INTERFACES", "Interface", "MissingLibrary", "by_option", "per_user", "store_factory"]


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

    def check_installed(self) -> None:
        if importlib.util.find_spec(self.needs.split(".")[0]) is None:
            raise MissingLibrary(f"{self.option} maps {self.takes}, which needs the library: "
                                 f"pip install {self.install}")


INTERFACES: tuple[Interface, ...] = (
    Interface("--langchain-history", "nomnesia_langchain_history",
              "a LangChain BaseChatMessageHistory (called with the session id if it takes one)",
              "langchain_core.chat_history:InMemoryChatMessageHistory", "langchain",
              "langchain_core", "langchain-core"),
    Interface("--langgraph-store", "nomnesia_langgraph_store",
              "a LangGraph BaseStore, with or without an index",
              "langgraph.store.memory:InMemoryStore", "langgraph", "langgraph.store",
              "langgraph"),
    Interface("--openai-session", "nomnesia_openai_session",
              "an OpenAI Agents SDK Session (called with the session id)",
              "agents:SQLiteSession", "openai_agents", "agents", "openai-agents"),
    Interface("--llama-chat-store", "nomnesia_llama_chat_store",
              "a llama-index BaseChatStore",
              "llama_index.core.storage.chat_store:SimpleChatStore", "llama_index",
              "llama_index.core", "llama-index-core"),
    Interface("--adk-sessions", "nomnesia_adk_sessions",
              "a Google ADK BaseSessionService",
              "google.adk.sessions:InMemorySessionService", "adk", "google.adk", "google-adk"),
)


def by_option(option: str) -> Interface:
    for interface in INTERFACES:
        if interface.option == option:
            return interface
    raise KeyError(option)


def per_user(factory: Callable[..., Any]) -> bool:
    """Whether ``factory`` takes the session (user) id: one positional parameter or more.

    ``InMemoryChatMessageHistory`` takes none (one object per user is made all the
    same); ``SQLiteSession(session_id, ...)`` and a team's ``def history(session_id)``
    take it.
    """
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


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
