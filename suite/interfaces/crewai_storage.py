"""CrewAI's memory ``StorageBackend`` (``crewai.memory.storage.backend``) as a store of the
``memory`` profile.

CrewAI's unified ``Memory`` keeps its records in a ``StorageBackend`` (``LanceDBStorage``
by default, ``QdrantEdgeStorage``, or a team's own): ``save(records)``, ``search(
query_embedding, scope_prefix=...)``, ``delete(scope_prefix=...)``, ``list_records(
scope_prefix=...)`` and more, each of ``MemoryRecord`` objects whose ``scope`` is a
hierarchical path (``/company/team/user``). ``Memory`` scopes everything by that path: its
``remember(scope=...)`` writes a record there, ``recall(scope=...)`` and ``forget(
scope=...)`` pass it to the backend as ``scope_prefix``. What maps to what, the calls
``Memory`` itself makes:

- a user's records live at the scope :func:`user_scope` (``/nomnesia/<user id>/memory``,
  the user id percent-encoded as one path segment, since a ``/`` in it would otherwise be
  taken for a sub-scope of another user: CrewAI documents a scope prefix as matching every
  sub-scope, so that would be CrewAI's documented design, not a finding);
- ``append_message(u, role, content)`` is ``save([record])`` of one ``MemoryRecord`` at
  that scope, with the role in its ``metadata``, ``source=u`` (CrewAI's provenance field,
  "e.g. user ID"), the default importance and no categories, as ``Memory.remember`` with
  every field given builds it; its ``embedding`` is :func:`embed`'s (a backend takes
  vectors, which ``Memory`` gets from its embedder: this mapping has a deterministic
  hashing one, so that it needs no model and no network);
- ``get_history(u, limit)`` is ``list_records(scope_prefix=scope, limit=ALL)`` (newest
  first, as the protocol documents it), reversed, of which the newest ``limit`` are
  returned;
- ``search(u, query, k)`` is ``search(embed(query), scope_prefix=scope, limit=k,
  min_score=0.0)``, as ``Memory.recall(depth="shallow")`` calls it;
- ``forget(u)`` is ``delete(scope_prefix=scope)``, as ``Memory.forget(scope=...)`` calls it.

Every call is the backend's sync method in a worker thread (:func:`in_thread`):
``Memory`` itself calls only those (the protocol's ``asave``/``asearch``/``adelete`` are
``LanceDBStorage``'s sync calls under ``async def``, and ``list_records`` has no twin).
A cancelled call returns once its thread has finished, as ``--agno-db``'s do: a sync call
cannot be stopped, and a cancelled ``delete`` that went on in its thread would otherwise
delete what the caller appended after it (the mapping's doing, not CrewAI's).

``save`` takes a list of records, so the interface faults apply: a batch one record of
which cannot be stored must store none of them.

What it cannot see: message ids (a record's id is CrewAI's uuid), ``update``,
``touch_records``, categories, privacy (``private``/``source`` filtering is ``Memory``'s,
not the backend's) and ``Memory``'s LLM consolidation (see ``--crewai-memory``).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote

from ..contract.validation import validate_limit
from ._base import Mapped, contract_role, in_thread, text_of
from ._poison import PoisonedCall, Unserializable, describe_batch

__all__ = ["ALL", "DIMS", "CrewaiStorage", "embed", "entry", "open_store",
           "user_scope"]

ALL = 10_000
"""The most records one ``list_records`` asks for: a user's whole history in the suite."""
DIMS = 256
"""Dimensions of :func:`embed`'s vectors."""
ROOT = "/nomnesia"


def user_scope(user_id: str) -> str:
    """The scope of ``user_id``'s records: one path segment per user, ended by ``/memory``
    so that no user's scope is a prefix of another's (``scope_prefix`` matches sub-scopes
    and, in ``LanceDBStorage``, any scope that starts with the prefix's text)."""
    return f"{ROOT}/{quote(user_id, safe='')}/memory"


def embed(text: str) -> list[float]:
    """A deterministic, L2-normalised feature hashing of words and character 3-grams: the
    exact text of a record gives its very vector, and shared words bring vectors closer.
    Not a model: the suite's search guarantee (G4) asks only that the exact content of an
    entry finds it. A text that is not a ``str`` is refused, as an embedding API refuses it
    (``TypeError``), before the backend is called."""
    if not isinstance(text, str):
        raise TypeError(f"the text to embed must be a str, not {type(text).__name__}")
    vector = [0.0] * DIMS
    padded = f"\x02{text}\x03"
    features = [padded[i:i + 3] for i in range(max(1, len(padded) - 2))]
    features += [f"w:{w.lower()}" for w in text.split()]
    for feature in features:
        digest = hashlib.blake2b(feature.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        bucket = int.from_bytes(digest[:4], "little") % DIMS
        vector[bucket] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


def entry(record: Any) -> dict[str, str]:
    """A record read back as the role the mapping kept in its metadata and its content."""
    meta = getattr(record, "metadata", None) or {}
    return {"role": str(meta.get("role")), "content": text_of(record.content)}


class CrewaiStorage(Mapped):
    """The suite's calls on one CrewAI ``StorageBackend``, scoped by user id."""

    nomnesia_profile = "memory"
    requires = ("save", "search", "delete", "list_records")

    def _record(self, user_id: str, role: str, content: str, poison: Any = None) -> Any:
        from crewai.memory.types import MemoryRecord  # function-level: crewai is optional

        metadata: dict[str, Any] = {"role": contract_role(role)}
        if poison is not None:  # a metadata value the backend keeps as JSON
            metadata["nomnesia"] = poison
        record = MemoryRecord(content=content, scope=user_scope(user_id), categories=[],
                              metadata=metadata, importance=0.5, source=user_id)
        record.embedding = embed(record.content)  # after CrewAI's own validation of it
        return record

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        backend = await self._object()
        return await in_thread(getattr(backend, name), *args, **kwargs)

    async def append_message(self, user_id: str, role: str, content: str) -> None:
        await self._call("save", [self._record(user_id, role, content)])

    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]:
        limit = validate_limit("limit", limit)  # the newest `limit`: the slice is ours
        newest_first = await self._call("list_records", scope_prefix=user_scope(user_id),
                                        limit=ALL)
        return [entry(r) for r in reversed(newest_first[:limit])]

    async def search(self, user_id: str, query: str, k: int = 5) -> list[dict[str, str]]:
        found = await self._call("search", embed(query), scope_prefix=user_scope(user_id),
                                 limit=k, min_score=0.0)
        return [entry(record) for record, _score in found]

    async def forget(self, user_id: str) -> None:
        await self._call("delete", scope_prefix=user_scope(user_id))

    async def poisoned_batch(self, user_id: str, batch: Sequence[tuple[str, str]],
                             poisoned: int) -> PoisonedCall:
        """One ``save`` of a record per message of ``batch``, record ``poisoned``'s metadata
        holding a value no serializer knows: ``LanceDBStorage`` keeps metadata as JSON, so
        it cannot store it, and the call must store none of the batch."""
        records = [self._record(user_id, role, content,
                                Unserializable() if i == poisoned else None)
                   for i, (role, content) in enumerate(batch)]
        backend = await self._object()

        async def run() -> object:
            return await in_thread(backend.save, records)

        where = describe_batch(len(records), poisoned, "metadata")
        return PoisonedCall(f"{type(backend).__name__}.save([{where}])", run)


@asynccontextmanager
async def open_store(factory: Callable[..., Any]) -> AsyncIterator[CrewaiStorage]:
    async with CrewaiStorage(factory) as store:
        yield store


MAPPED = CrewaiStorage
"""The mapping, whose ``fits`` says whether an object suits this option."""
