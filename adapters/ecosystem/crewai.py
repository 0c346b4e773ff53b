"""CrewAI's unified memory, for ``--crewai-storage`` and ``--crewai-memory`` (issue 46).

Each factory takes no argument (one object holds every user's memory, a scope per user)
and returns an async context manager of the library's own object; the suite's mappings
(``nomnesia.suite.interfaces.crewai_storage``, ``crewai_memory``) do the rest and add
nothing CrewAI lacks:

- :func:`lancedb`: ``LanceDBStorage(path)``, CrewAI's default memory backend (LanceDB is
  embedded: files, no server), on a fresh directory in this process's scratch directory,
  removed when the store closes;
- :func:`memory`: ``Memory(llm=..., embedder=..., storage=LanceDBStorage(path))`` as
  ``nomnesia.suite.examples.crewai_memory`` builds it: an LLM that answers only the
  consolidation question ("keep every record, insert the new one", ``Memory``'s own
  default when its LLM fails) and a deterministic hashing embedder, so that nothing
  reaches the network and no model is downloaded. ``Memory.close()`` (which drains the
  background saves) runs when the store closes.

CrewAI pins ``openai<3`` while ``openai-agents`` (the ``interfaces`` extra) needs
``openai>=3``, so these audits run in a venv of their own (``Audit.requires``).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from nomnesia.adapters.text import HashingEmbedder

from ._engines import namespace, sqlite_path

__all__ = ["lancedb", "memory"]

DIMS = 256

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")  # offline: no telemetry wait
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")


def _keep_everything_llm() -> Any:
    """A ``BaseLLM`` with no network (``nomnesia.suite.examples.crewai_memory_llm``'s
    twin, which this package may not import): it answers the consolidation question with
    "keep them all, insert the new one" and refuses anything else."""
    # function-level: CrewAI reads its telemetry opt-outs when imported (set above)
    from crewai.llms.base_llm import BaseLLM

    class KeepEverything(BaseLLM):  # type: ignore[misc,unused-ignore]
        def call(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
            if "consolidat" not in str(messages).lower():
                raise RuntimeError("the offline LLM answers only the consolidation question")
            return '{"actions": [], "insert_new": true, "insert_reason": "offline"}'

    return KeepEverything(model="nomnesia-offline")


@asynccontextmanager
async def lancedb() -> AsyncIterator[Any]:
    """``--crewai-storage nomnesia.adapters.ecosystem.crewai:lancedb``."""
    # function-level: CrewAI reads its telemetry opt-outs when imported (set above)
    from crewai.memory.storage.lancedb_storage import LanceDBStorage

    where = sqlite_path(namespace("crewai_lancedb")).with_suffix("")
    try:
        yield LanceDBStorage(path=where)
    finally:
        await asyncio.to_thread(shutil.rmtree, where, True)


@asynccontextmanager
async def memory() -> AsyncIterator[Any]:
    """``--crewai-memory nomnesia.adapters.ecosystem.crewai:memory``."""
    # function-level: CrewAI reads its telemetry opt-outs when imported (set above)
    from crewai.memory.storage.lancedb_storage import LanceDBStorage
    from crewai.memory.unified_memory import Memory

    hashing = HashingEmbedder(DIMS)

    def embedder(texts: list[str]) -> list[list[float]]:
        for text in texts:  # an embedding API refuses a non-str text (TypeError)
            if not isinstance(text, str):
                raise TypeError(f"the text to embed must be a str, not {type(text).__name__}")
        return [hashing.embed_one(text) for text in texts]

    where = sqlite_path(namespace("crewai_memory")).with_suffix("")
    made = Memory(llm=_keep_everything_llm(), embedder=embedder,
                  storage=LanceDBStorage(path=where))
    try:
        yield made
    finally:
        try:
            await asyncio.to_thread(made.close)
        finally:
            await asyncio.to_thread(shutil.rmtree, where, True)
