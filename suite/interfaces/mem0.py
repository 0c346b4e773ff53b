"""mem0's ``Memory`` and ``AsyncMemory`` as a store of the ``memory`` profile, told apart by
their ``add``: a coroutine function on ``AsyncMemory``, a plain one on ``Memory`` (whose
calls run in a worker thread, ``asyncio.to_thread``, so they never block the event loop).

What maps to what:

- one ``Memory`` for every user; a user's memories are those whose ``user_id`` is the
  user id, the scope mem0 itself filters by;
- ``append_message(u, role, content)`` is ``add([{"role": role, "content": content}],
  user_id=u, infer=False)``: one memory per message, stored as given, with no LLM call
  (with ``infer=True`` mem0 asks its LLM what to remember, and what it stores is no longer
  what was appended, so nothing of SPEC could be judged);
- ``get_history(u, limit)`` is ``get_all(filters={"user_id": u}, top_k=ALL)`` in the order
  of the memories' ``created_at`` (mem0's only order; ties by memory id, so that every
  read agrees), of which the newest ``limit`` are returned (mem0 takes no limit from the
  newest end: the mapping checks it, as it does SPEC's own vocabulary);
- ``search(u, query, k)`` is ``search(query, top_k=k, filters={"user_id": u})``, with
  mem0's defaults (``threshold=0.1``, no reranker);
- ``forget(u)`` is ``delete_all(user_id=u)``.

A memory is read back as its ``role`` (mem0 keeps the message's role in the payload) and
its ``memory`` text. User ids, contents and ``k`` reach mem0 as given, to be judged.

``add`` takes a list of messages, so the interface faults apply: a batch one message of
which cannot be stored must store none of them.

What it cannot see: message ids (mem0's ``add`` takes none, so G6 is not applicable),
compaction (mem0's own ``infer`` is a rewrite, not a summary that covers entries), mem0's
history database (``history(memory_id)``, a second copy the ``nomnesia.adapters.ecosystem``
audit looks into) and ``update``.

mem0 needs an embedder and, unless ``infer=False``, an LLM: both reach the network by
default. ``nomnesia.suite.examples`` has factories that need neither (a deterministic
hashing embedder put in place of mem0's, an LLM that is never called), on a local Qdrant
directory or on the suite's PostgreSQL with pgvector.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

from ..contract.validation import validate_limit
from ._base import Mapped, contract_role, has, text_of
from ._poison import PoisonedCall, Unserializable, describe_batch

__all__ = ["ALL", "Mem0Memory", "open_store"]

ALL = 10_000
"""The most memories one ``get_all`` asks for: a user's whole history in the suite's tests."""


def _created(item: dict[str, Any]) -> tuple[datetime | str, str]:
    """A memory's place in time: ``created_at`` parsed (mem0 writes it with a UTC offset of
    its own choosing, so strings alone do not order it), ties by id."""
    stamp = item.get("created_at") or ""
    try:
        return datetime.fromisoformat(str(stamp)), str(item.get("id"))
    except ValueError:
        return str(stamp), str(item.get("id"))


def _entry(item: dict[str, Any]) -> dict[str, str]:
    meta = item.get("metadata") or {}
    role = item.get("role", meta.get("role"))
    return {"role": str(role), "content": text_of(item.get("memory", ""))}


def _results(found: Any) -> list[dict[str, Any]]:
    """mem0's ``{"results": [...]}`` (a bare list from versions before 1.1)."""
    if isinstance(found, dict):
        found = found.get("results", [])
    return [dict(item) for item in found or ()]


class Mem0Memory(Mapped):
    """The suite's calls on one mem0 ``Memory`` or ``AsyncMemory``, scoped by user id."""

    nomnesia_profile = "memory"
    requires = ("add", "search", "get_all", "delete_all")

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """``name`` on the memory: awaited on an ``AsyncMemory``, in a worker thread on a
        ``Memory`` (its calls block on the embedder and the vector store)."""
        memory = await self._object()
        method = getattr(memory, name)
        if inspect.iscoroutinefunction(method):
            return await method(*args, **kwargs)
        return await asyncio.to_thread(method, *args, **kwargs)

    async def append_message(self, user_id: str, role: str, content: str) -> None:
        message = {"role": contract_role(role), "content": content}
        await self._call("add", [message], user_id=user_id, infer=False)

    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]:
        limit = validate_limit("limit", limit)  # the newest `limit`: the slice is ours
        found = _results(await self._call("get_all", filters={"user_id": user_id}, top_k=ALL))
        return [_entry(item) for item in sorted(found, key=_created)[-limit:]]

    async def search(self, user_id: str, query: str, k: int = 5) -> list[dict[str, str]]:
        found = await self._call("search", query, top_k=k, filters={"user_id": user_id})
        return [_entry(item) for item in _results(found)]

    async def forget(self, user_id: str) -> None:
        await self._call("delete_all", user_id=user_id)

    async def poisoned_batch(self, user_id: str, batch: Sequence[tuple[str, str]],
                             poisoned: int) -> PoisonedCall:
        """One ``add`` of every message of ``batch`` (``infer=False``: a memory each),
        message ``poisoned``'s ``name`` an object no serializer knows: mem0 stores a
        message's name in its memory's payload (``actor_id``), so a vector store that keeps
        payloads as JSON cannot store it, and the call must store none of the batch."""
        messages: list[dict[str, Any]] = [{"role": contract_role(role), "content": content}
                                          for role, content in batch]
        messages[poisoned]["name"] = Unserializable()
        memory = await self._object()

        async def run() -> object:
            return await self._call("add", messages, user_id=user_id, infer=False)

        where = describe_batch(len(messages), poisoned, "name")
        return PoisonedCall(f"{type(memory).__name__}.add([{where}], infer=False)", run)


def is_async(found: Any) -> bool:
    """An ``AsyncMemory`` (or any memory whose ``add`` is a coroutine function)."""
    return has(found, "add") and inspect.iscoroutinefunction(getattr(found, "add", None))


@asynccontextmanager
async def open_store(factory: Callable[..., Any]) -> AsyncIterator[Mem0Memory]:
    async with Mem0Memory(factory) as store:
        yield store


MAPPED = Mem0Memory
"""The mapping, whose ``fits`` says whether an object suits this option."""
