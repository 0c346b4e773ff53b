"""mem0's ``Memory`` and ``AsyncMemory`` as a store of the ``memory`` profile, told apart by
their ``add``: a coroutine function on ``AsyncMemory``, a plain one on ``Memory`` (whose
calls run in a worker thread, so they never block the event loop, each awaited to its end when
cancelled: ``_base.in_thread``, since a thread cannot be stopped and a sync caller cannot cancel
mid-call; ``AsyncMemory``'s own ``to_thread`` calls are mem0's, and judged as they are).

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
- mem0 1.x names these keywords otherwise: its ``get_all`` and ``search`` take ``limit``,
  not ``top_k``, and a ``user_id`` of their own. Where a method's signature has no
  ``top_k`` the count goes as ``limit``, and where it takes ``user_id`` the scope goes as
  ``user_id=u`` (as mem0 1.x documents it) rather than in ``filters``; read from the
  method's signature, as ``Memory`` is told from ``AsyncMemory`` by its ``add``. A call the
  method's signature refuses anyway is this mapping's mismatch with the release
  (``InterfaceMismatch``: a usage error that names it), never the store's finding;
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

import inspect
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

from ..contract.validation import validate_limit
from ._base import InterfaceMismatch, Mapped, contract_role, has, in_thread, text_of, what
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
        ``Memory`` (its calls block on the embedder and the vector store).

        The arguments are bound to the method's signature first: a keyword the release does
        not take raises ``TypeError`` at the call itself, which the suite would otherwise
        file as the store refusing a valid input (an Inputs finding per test, the benchmark's
        mem0 1.0.5 run). That is this mapping speaking another release, so it is raised as
        ``InterfaceMismatch``, which names the method and the release's parameters."""
        memory = await self._object()
        method = getattr(memory, name)
        signature = _signature(method)
        if signature is not None:
            try:
                signature.bind(*args, **kwargs)
            except TypeError as refused:
                raise InterfaceMismatch(memory, [name], (
                    f"{what(memory)} refuses the {name} call of --mem0-memory ({refused}); "
                    f"its {name} takes {signature}: a mem0 release this mapping does not "
                    f"speak")) from refused
        if inspect.iscoroutinefunction(method):
            return await method(*args, **kwargs)
        return await in_thread(method, *args, **kwargs)  # a sync Memory: awaited whole

    async def append_message(self, user_id: str, role: str, content: str) -> None:
        message = {"role": contract_role(role), "content": content}
        await self._call("add", [message], user_id=user_id, infer=False)

    async def _keywords(self, name: str, user_id: str, count: int) -> dict[str, Any]:
        """The scope and the count of a ``get_all`` or ``search``, in the keywords of this
        release's ``name``: ``top_k`` and ``filters`` (mem0 2.x), or ``limit`` where the
        signature has no ``top_k`` and ``user_id=`` where it takes one (mem0 1.x)."""
        params = _parameters(getattr(await self._object(), name))
        size = "limit" if params is not None and "top_k" not in params else "top_k"
        if params is not None and "user_id" in params:
            return {"user_id": user_id, size: count}
        return {"filters": {"user_id": user_id}, size: count}

    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]:
        limit = validate_limit("limit", limit)  # the newest `limit`: the slice is ours
        keywords = await self._keywords("get_all", user_id, ALL)
        found = _results(await self._call("get_all", **keywords))
        return [_entry(item) for item in sorted(found, key=_created)[-limit:]]

    async def search(self, user_id: str, query: str, k: int = 5) -> list[dict[str, str]]:
        found = await self._call("search", query, **await self._keywords("search", user_id, k))
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


def _signature(method: Any) -> inspect.Signature | None:
    """The method's signature, or None where Python cannot read one (a C function)."""
    try:
        return inspect.signature(method)
    except (TypeError, ValueError):
        return None


def _parameters(method: Any) -> set[str] | None:
    """The names of the method's own parameters (not what a ``**kwargs`` may take), or None
    where its signature cannot be read."""
    signature = _signature(method)
    if signature is None:
        return None
    return {name for name, p in signature.parameters.items() if p.kind is not p.VAR_KEYWORD}


def is_async(found: Any) -> bool:
    """An ``AsyncMemory`` (or any memory whose ``add`` is a coroutine function)."""
    return has(found, "add") and inspect.iscoroutinefunction(getattr(found, "add", None))


@asynccontextmanager
async def open_store(factory: Callable[..., Any]) -> AsyncIterator[Mem0Memory]:
    async with Mem0Memory(factory) as store:
        yield store


MAPPED = Mem0Memory
"""The mapping, whose ``fits`` says whether an object suits this option."""
