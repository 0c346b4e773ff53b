"""An interface mismatch is a usage error, never a finding (issue 33).

A factory whose object lacks a method its option maps stops the run before any test, with
one sentence: what the object is, what the option expects, and which option fits. Before,
``--llama-chat-store`` with llama-index's ``SQLAlchemyChatStore`` read as 15 failures "G12",
whose cause was ``AttributeError: ... no attribute 'async_add_message'``.

Mutant check: without the call to ``_check_interface`` in ``plugin.pytest_sessionstart``,
``test_the_wrong_object_stops_the_run_naming_the_option_that_fits`` fails for every option
(the run starts, and its tests fail instead).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import itertools
import os
from collections.abc import Iterator
from typing import Any

import pytest

from nomnesia.suite.interfaces import INTERFACES

pytest_plugins = ("pytester",)

os.environ.setdefault("MEM0_TELEMETRY", "False")  # read at mem0's import; offline machines
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")  # CrewAI's opt-outs, likewise
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
# Imported once here, before pytester snapshots sys.modules: numpy (under llama-index)
# cannot be imported twice in one process, and an in-process run would import it anew.
for _library in ("numpy", "llama_index.core", "langgraph.store.memory", "agents",
                 "google.adk.sessions", "langchain_core.chat_history", "mem0",
                 "agent_framework", "langgraph.checkpoint.memory",
                 "google.adk.memory", "agno.db.in_memory", "strands.session",
                 # lance's Rust logger may be set up once per process
                 "crewai.memory.storage.lancedb_storage", "crewai.memory.unified_memory",
                 "pydantic_ai.conversation_store"):
    with contextlib.suppress(ImportError):
        importlib.import_module(_library)

SUITE = ("--pyargs", "nomnesia.suite", "-p", "no:cacheprovider", "-p", "no:randomly")


class Nothing:
    """An object with none of any interface's methods."""


def nothing(*_: Any) -> Nothing:
    return Nothing()


def langchain_history(*_: Any) -> Any:
    from langchain_core.chat_history import InMemoryChatMessageHistory

    return InMemoryChatMessageHistory()


def langgraph_store() -> Any:
    from langgraph.store.memory import InMemoryStore

    return InMemoryStore()


def openai_session(session_id: str) -> Any:
    from agents import SQLiteSession

    return SQLiteSession(session_id)


def llama_chat_store() -> Any:
    from llama_index.core.storage.chat_store import SimpleChatStore

    return SimpleChatStore()


def adk_sessions() -> Any:
    from google.adk.sessions import InMemorySessionService

    return InMemorySessionService()


def mem0_memory() -> Any:
    """An offline ``AsyncMemory`` on a local Qdrant directory (an async context manager)."""
    from nomnesia.suite.examples import mem0_memory

    return mem0_memory()


def agent_framework_history() -> Any:
    from agent_framework import InMemoryHistoryProvider

    return InMemoryHistoryProvider()


def langgraph_checkpointer() -> Any:
    from langgraph.checkpoint.memory import InMemorySaver

    return InMemorySaver()


OBJECTS = {"--langchain-history": "langchain_history", "--langgraph-store": "langgraph_store",
           "--openai-session": "openai_session", "--llama-chat-store": "llama_chat_store",
           "--adk-sessions": "adk_sessions", "--mem0-memory": "mem0_memory",
           "--agent-framework-history": "agent_framework_history",
           "--langgraph-checkpointer": "langgraph_checkpointer"}



def adk_memory() -> Any:
    from google.adk.memory import InMemoryMemoryService

    return InMemoryMemoryService()


def agno_db() -> Any:
    from agno.db.in_memory import InMemoryDb

    return InMemoryDb()


OBJECTS.update({"--adk-memory": "adk_memory", "--agno-db": "agno_db"})  # issue 46


@contextlib.contextmanager
def strands_session() -> Any:
    """Strands' ``FileSessionManager`` (a session repository) on a temporary directory."""
    from nomnesia.suite.examples import strands_file

    with strands_file() as repository:
        yield repository


OBJECTS["--strands-session"] = "strands_session"  # issue 46


@contextlib.contextmanager
def crewai_storage() -> Iterator[Any]:
    from nomnesia.suite.examples import crewai_lancedb

    with crewai_lancedb() as storage:
        yield storage


@contextlib.contextmanager
def crewai_memory() -> Iterator[Any]:
    from nomnesia.suite.examples import crewai_memory as made

    with made() as memory:
        yield memory


OBJECTS.update({"--crewai-storage": "crewai_storage",  # issue 46, items 2 and 3
                "--crewai-memory": "crewai_memory"})


def pydantic_ai_conversations() -> Any:
    from pydantic_ai.conversation_store import InMemoryConversationStore

    return InMemoryConversationStore()


OBJECTS["--pydantic-ai-conversations"] = "pydantic_ai_conversations"  # issue 46 item 2


def agno_entities() -> Any:
    from nomnesia.suite.examples import agno_entities as made

    return made()


OBJECTS["--agno-entities"] = "agno_entities"  # issue 46 item 3
OPTIONS = [i.option for i in INTERFACES]
assert set(OBJECTS) == set(OPTIONS), "every option's mismatch is proven here"

_CALLS = itertools.count()


def _needs(option: str) -> str:
    return next(i for i in INTERFACES if i.option == option).needs


def right_then_wrong(session_id: str) -> Any:
    """The right object for the probe, then objects without the option's methods."""
    return openai_session(session_id) if next(_CALLS) == 0 else Nothing()


@pytest.fixture(autouse=True)
def _quiet_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


@pytest.mark.parametrize("option", OPTIONS)
def test_the_wrong_object_stops_the_run_naming_the_option_that_fits(
        pytester: pytest.Pytester, option: str) -> None:
    interface = next(i for i in INTERFACES if i.option == option)
    pytest.importorskip(interface.needs)
    # Another interface's object: the next option whose library is installed (crewai, in a
    # venv of its own, must not cost the option before it its check).
    at = OPTIONS.index(option)
    other = next((o for o in OPTIONS[at + 1:] + OPTIONS[:at]
                  if importlib.util.find_spec(_needs(o).split(".")[0]) is not None), None)
    if other is None:
        pytest.skip("no other interface's library is installed")
    result = pytester.runpytest(*SUITE, option, f"{__name__}:{OBJECTS[other]}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:]
    err = result.stderr.str()
    assert f"nomnesia: {option} {__name__}:{OBJECTS[other]}: the factory made a " in err, err
    assert f"{option} expects {interface.takes}; use {other} for it" in err, err
    assert "G12" not in result.stdout.str() + err

    result = pytester.runpytest(*SUITE, option, f"{__name__}:nothing")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert f"the factory made a Nothing ({__name__}), which has no " in err, err
    assert "no interface option takes it: --store takes a store of one of SPEC.md" in err, err


def test_a_later_wrong_object_is_never_a_finding(pytester: pytest.Pytester) -> None:
    pytest.importorskip("agents")
    reprec = pytester.inline_run(*SUITE, "--openai-session", f"{__name__}:right_then_wrong",
                                 "-k", "test_contract")
    failed = [r for r in reprec.getreports("pytest_runtest_logreport") if r.failed]
    assert failed, "the later objects lack every method: the tests cannot pass"
    for report in failed:
        text = report.longreprtext
        assert "InterfaceMismatch" in text and "which has no add_items" in text, text[-800:]
        assert not text.lstrip().startswith(("G12", "Inputs", "G1 ")), text[:300]


def no_credentials() -> Any:
    """A factory that cannot make its object: mem0's ``AsyncMemory()`` with no API key."""
    raise RuntimeError("Missing credentials: set OPENAI_API_KEY")


def test_a_factory_that_raises_stops_the_run_with_one_sentence(
        pytester: pytest.Pytester) -> None:
    """Before: every test failed G12 ("a valid call on a healthy store must not fail"),
    blaming the library for the user's configuration."""
    pytest.importorskip("langgraph.store")
    result = pytester.runpytest(*SUITE, "--langgraph-store", f"{__name__}:no_credentials")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:]
    err = result.stderr.str()
    assert (f"nomnesia: --langgraph-store {__name__}:no_credentials: the factory raised "
            "RuntimeError: Missing credentials: set OPENAI_API_KEY, before any test") in err, err
    assert "G12" not in result.stdout.str() + err


def test_one_object_for_every_user_is_made_without_a_user_id() -> None:
    """Where one library object holds every user (mem0's ``AsyncMemory(config)``, Agent
    Framework's ``InMemoryHistoryProvider(source_id)``), the factory's positional parameter
    is the library's own: a user id there was taken for the config."""
    import asyncio

    from nomnesia.suite.interfaces.langgraph import LangGraphStore

    called: list[tuple[Any, ...]] = []

    def factory(config: Any = None) -> Any:
        called.append((config,))
        return langgraph_store()

    async def body() -> None:
        async with LangGraphStore(factory) as store:
            await store.append_message("ann", "user", "hello")

    pytest.importorskip("langgraph.store")
    asyncio.run(body())
    assert called == [(None,)]
