"""CrewAI's unified ``Memory`` (``crewai.memory.unified_memory``) as a store of the ``memory``
profile, through the methods its users call.

``Memory`` is long-term memory with an LLM and an embedder: ``remember`` and
``remember_many`` encode content into ``MemoryRecord`` objects of its ``StorageBackend``,
``recall`` searches them, ``forget`` and ``reset`` delete them. What maps to what:

- a user's memories live at the scope ``crewai_storage.user_scope(u)`` (one path segment
  per user: ``Memory`` scopes everything by path, and a scope includes its sub-scopes);
- ``append_message(u, role, content)`` is ``remember_many([content], scope=scope,
  categories=[], importance=0.5, metadata={"role": role}, source=u)``: the call CrewAI's
  agents make after a task, one item per call (a batch of several would be put through
  CrewAI's intra-batch de-duplication, which drops near-identical items on purpose).
  Every field is given, so no LLM is asked to infer one. ``remember_many`` is documented
  as non-blocking: it returns once the save is queued on ``Memory``'s background
  executor, and that return is the acknowledgement;
- ``get_history(u, limit)`` is ``drain_writes()`` then ``list_records(scope=scope,
  limit=ALL)`` (newest first), reversed, of which the newest ``limit`` are returned.
  ``drain_writes`` is ``Memory``'s own read barrier, which ``recall`` calls first; its
  docstring says a crew should call it too. ``list_records`` alone would read before the
  queued saves land, which ``remember_many``'s docstring documents ("records are not
  available until the background save completes"), so the mapping does not ask the suite
  to judge it;
- ``search(u, query, k)`` is ``recall(query, scope=scope, limit=k, depth="shallow")``: one
  vector search of the query's embedding (``depth="deep"`` asks the LLM to plan the
  search), read barrier included;
- ``forget(u)`` is ``forget(scope=scope)``, as documented: "Delete memories matching
  criteria".

A memory is read back as the role the mapping kept in its metadata and its content.
``Memory`` calls its storage's sync methods, so the mapping calls ``Memory``'s sync methods
in a worker thread (``_base.in_thread``, which waits for the thread when
cancelled; ``aremember_many``, ``arecall`` "delegate to sync for now").

``Memory`` needs an LLM and an embedder, both OpenAI by default. It takes any ``BaseLLM``
instance and any embedding callable (``embedder=``, ``list[str] -> list[vector]``):
``nomnesia.suite.examples.crewai_memory`` builds one with neither network nor model (a
hashing embedder, an LLM that answers the consolidation question "keep every record,
insert the new one" and nothing else), on ``LanceDBStorage`` in a temporary directory.

What it cannot see: message ids, ``update``, the LLM's choices (scope, categories,
importance inference, consolidation of similar records and deep recall: with a real LLM,
``Memory`` rewrites and deletes records it judges redundant, by design) and privacy.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from ..contract.validation import validate_limit
from ._base import Mapped, contract_role, in_thread
from .crewai_storage import ALL, entry, user_scope

__all__ = ["CrewaiMemory", "open_store"]


class CrewaiMemory(Mapped):
    """The suite's calls on one CrewAI ``Memory``, scoped by user id."""

    nomnesia_profile = "memory"
    requires = ("remember_many", "recall", "forget", "list_records", "drain_writes")

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        memory = await self._object()
        return await in_thread(getattr(memory, name), *args, **kwargs)

    async def append_message(self, user_id: str, role: str, content: str) -> None:
        metadata = {"role": contract_role(role)}
        await self._call("remember_many", [content], scope=user_scope(user_id), categories=[],
                         importance=0.5, metadata=metadata, source=user_id)

    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]:
        limit = validate_limit("limit", limit)  # the newest `limit`: the slice is ours
        await self._call("drain_writes")
        newest_first = await self._call("list_records", scope=user_scope(user_id), limit=ALL)
        return [entry(r) for r in reversed(newest_first[:limit])]

    async def search(self, user_id: str, query: str, k: int = 5) -> list[dict[str, str]]:
        found = await self._call("recall", query, scope=user_scope(user_id), limit=k,
                                 depth="shallow")
        return [entry(match.record) for match in found]

    async def forget(self, user_id: str) -> None:
        await self._call("forget", scope=user_scope(user_id))


@asynccontextmanager
async def open_store(factory: Callable[..., Any]) -> AsyncIterator[CrewaiMemory]:
    async with CrewaiMemory(factory) as store:
        yield store


MAPPED = CrewaiMemory
"""The mapping, whose ``fits`` says whether an object suits this option."""
