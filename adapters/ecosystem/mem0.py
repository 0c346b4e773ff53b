"""mem0 ``AsyncMemory`` (``infer=False``) on local Qdrant: a contract store, and the memory
the ``--mem0-memory`` audit takes.

The library's behaviour (what the audit measures):

- ``AsyncMemory.add(messages, user_id=..., metadata=..., infer=False)`` stores
  each message as one memory in Qdrant; it *silently skips* role ``system``
  (``AsyncMemory._add_to_vector_store``) and returns an empty result;
- ``_validate_and_trim_entity_id`` trims user ids, refuses inner whitespace and
  coerces non-strings with ``str()``;
- ``get_all``/``search``/``delete_all`` scope by ``filters={"user_id": u}``,
  turned into a Qdrant filter by ``Qdrant._build_field_condition``, where the
  value ``"*"`` means "match any" — the filter is dropped;
- ``_delete_memory`` deletes the point and writes a ``DELETE`` row that keeps
  the old content in the SQLite history database (``SQLiteManager.add_history``).

The adapter's mapping (not the library's): an entry's ``id``, ``seq`` and
``covers`` live in the memory's metadata (``nomnesia_id``, ``seq``,
``covers``); an idempotent retry looks the id up with a metadata filter;
``compact`` adds the summary (role ``summary``, which ``infer=False`` stores as
given), then deletes the covered memories one by one with
``AsyncMemory.delete``; ``consistent_state`` looks for the contents of
forgotten memories in mem0's history database, the second backend. Engines: a
fresh local Qdrant directory and history database per store (no server), the
deterministic hashing embedder as a custom mem0 embedder, and no LLM: with
``infer=False`` mem0 never calls it (its OpenAI client gets a dummy key).
Telemetry is switched off (``MEM0_TELEMETRY=False``): the machine is offline.

Two audits, one memory (``local_memory``): ``mem0-memory`` runs mem0 through the suite's
public ``--mem0-memory`` mapping (``memory``, profile ``memory``), as a team would; ``mem0``
is this full-profile adapter, which adds message ids, sequence numbers and compaction in
mem0's metadata and reads mem0's history database, to reach what the interface cannot:
the causes that need them (``mem0-history-keeps-forgotten``, ``mem0-not-atomic``,
``covered-retry``, ``no-conditional-write``, ``mem0-wildcard-metadata``). The offline
configuration is the same as ``nomnesia.suite.examples.mem0_offline_config``'s, which an
adapter may not import (adapters import only the suite's contract layer).

One mitigation is the adapter's, not the library's: ``AsyncMemory`` calls its
vector store from worker threads (``asyncio.to_thread``) with no lock, and
qdrant-client's local mode is not thread-safe. Under concurrent calls its
numpy-backed collection races (``IndexError`` in ``calculate_payload_mask``,
raised out of ``get_all``). ``factory`` therefore puts one lock around the vector
store's methods, so the suite can reach mem0's other behaviour; that finding
itself is reproduced by ``report`` on the bare library, and ``factory_unlocked``
is the adapter without the lock (do not run the whole suite on it).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import tempfile
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Any, Literal

from nomnesia.suite.contract import ConsistencyReport, Difference, Entry

from ._common import (
    ALL,
    DIM,
    AuditStore,
    check_append,
    check_query,
    clamp,
    covers_of,
    embedder,
    entry,
    next_seq,
    summarize,
)

# mem0 reads MEM0_TELEMETRY when it is imported; the machine is offline, so off it goes first.
os.environ.setdefault("MEM0_TELEMETRY", "False")

from mem0 import AsyncMemory
from mem0.configs.base import MemoryConfig
from mem0.configs.embeddings.base import BaseEmbedderConfig
from mem0.embeddings.base import EmbeddingBase

__all__ = ["HashingMem0Embedder", "Mem0Store", "factory", "local_memory", "memory"]

LIBRARY = f"mem0ai {version('mem0ai')}"


class HashingMem0Embedder(EmbeddingBase):  # type: ignore[misc,unused-ignore]
    """mem0's embedder interface over the project's deterministic hashing embedder."""

    def __init__(self) -> None:
        super().__init__(BaseEmbedderConfig(embedding_dims=DIM))

    def embed(self, text: str,
              memory_action: Literal["add", "search", "update"] | None = None) -> list[float]:
        return embedder().embed_one(text)


def _entry(item: dict[str, Any]) -> tuple[Entry, str]:
    meta = item.get("metadata") or {}
    found = entry(str(meta.get("nomnesia_id", item["id"])), str(item.get("user_id", "")),
                  int(meta.get("seq", 0)), str(item.get("role", "")), str(item.get("memory", "")),
                  tuple(meta.get("covers") or ()))
    return found, str(item["id"])


def local_memory(where: Path, *, serialize_vector_store: bool = True) -> AsyncMemory:
    """An offline ``AsyncMemory`` on a local Qdrant directory and history database under
    ``where``: the hashing embedder in place of mem0's, an LLM that ``infer=False`` never
    calls, and (unless told otherwise) the lock around the vector store (the docstring
    says why). Both audits make their memory here."""
    config = MemoryConfig(
        vector_store={"provider": "qdrant", "config": {
            "collection_name": "memories", "embedding_model_dims": DIM,
            "path": str(where / "qdrant")}},
        llm={"provider": "openai", "config": {"api_key": "unused-infer-false"}},
        embedder={"provider": "openai",
                  "config": {"api_key": "unused", "embedding_dims": DIM}},
        history_db_path=str(where / "history.db"),
    )
    memory = AsyncMemory(config)
    memory.embedding_model = HashingMem0Embedder()
    memory.nomnesia_qdrant_client = getattr(memory.vector_store, "client", None)
    if serialize_vector_store:
        memory.vector_store = SerializedCalls(memory.vector_store)
    return memory


class SerializedCalls:
    """Forwards every method call of ``target`` under one lock (the adapter's mitigation)."""

    def __init__(self, target: Any) -> None:
        self._target, self._lock = target, threading.Lock()

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if not callable(value):
            return value

        def call(*args: Any, _f: Callable[..., Any] = value, **kwargs: Any) -> Any:
            with self._lock:
                return _f(*args, **kwargs)

        return call


class Mem0Store(AuditStore):
    """The contract over one ``AsyncMemory``; see the module docstring for who does what."""

    library = LIBRARY
    backends = ("qdrant (local)", "mem0 history (SQLite)")

    def __init__(self, *, keep_last: int = 4, serialize_vector_store: bool = True) -> None:
        super().__init__(keep_last=keep_last)
        self._dir = Path(tempfile.mkdtemp(prefix="nomnesia-mem0-"))
        self.memory = local_memory(self._dir, serialize_vector_store=serialize_vector_store)
        self._client = getattr(self.memory, "nomnesia_qdrant_client", None)
        # mem0 ids written per user, so that consistent_state can look for them after forget.
        self._written: dict[str, set[str]] = {}
        self._forgotten: dict[str, set[str]] = {}

    async def _rows(self, user_id: str, **filters: Any) -> list[tuple[Entry, str]]:
        found = await self.memory.get_all(filters={"user_id": user_id, **filters}, top_k=ALL)
        rows = [_entry(item) for item in found["results"]]
        return sorted(rows, key=lambda row: row[0].seq)

    async def append_message(self, user_id: str, role: str, content: str,
                             *, message_id: str | None = None) -> Entry:
        role, message_id = check_append(role, message_id)
        if message_id is not None:
            for existing, _ in await self._rows(user_id, nomnesia_id=message_id):
                if (existing.role, existing.content) != (role, content):
                    raise ValueError(f"message_id {message_id!r} already holds other content")
                return existing
        entry_id, seq = message_id or uuid.uuid4().hex, next_seq()
        result = await self.memory.add([{"role": role, "content": content}], user_id=user_id,
                                       metadata={"nomnesia_id": entry_id, "seq": seq,
                                                 "covers": []}, infer=False)
        self._written.setdefault(user_id, set()).update(
            str(r["id"]) for r in result.get("results", ()))
        # mem0 returned normally: a team acknowledges the message as written.
        return entry(entry_id, user_id, seq, role, content)

    async def get_history(self, user_id: str, limit: int = 10) -> list[Entry]:
        limit = clamp("limit", limit)
        return [e for e, _ in await self._rows(user_id)][-limit:]

    async def search(self, user_id: str, query: str, k: int = 5) -> list[Entry]:
        query, k = check_query(query), clamp("k", k)
        found = await self.memory.search(query, top_k=k, filters={"user_id": user_id})
        return [_entry(item)[0] for item in found["results"]]

    async def compact(self, user_id: str) -> Entry | None:
        rows = await self._rows(user_id)
        if len(rows) <= self.keep_last:
            return None
        prefix = rows[: len(rows) - self.keep_last]
        entries = [e for e, _ in prefix]
        summary_id, covers = uuid.uuid4().hex, covers_of(entries)
        content = await summarize(user_id, entries)
        seq = entries[-1].seq  # the summary takes the place of what it covers
        result = await self.memory.add([{"role": "summary", "content": content}],
                                       user_id=user_id, infer=False,
                                       metadata={"nomnesia_id": summary_id, "seq": seq,
                                                 "covers": list(covers)})
        self._written.setdefault(user_id, set()).update(
            str(r["id"]) for r in result.get("results", ()))
        for _, memory_id in prefix:
            await self.memory.delete(memory_id)
        return entry(summary_id, user_id, seq, "summary", content, covers)

    async def forget(self, user_id: str) -> None:
        written = self._written.pop(user_id, set())
        await self.memory.delete_all(user_id=user_id)
        self._forgotten.setdefault(user_id, set()).update(written)

    async def consistent_state(self, user_id: str) -> ConsistencyReport:
        """Qdrant is the store of record; after forget, mem0's history must not keep contents."""
        await super().consistent_state(user_id)  # validates the id
        ids = sorted(self._forgotten.get(user_id, ()))
        if not ids:
            return ConsistencyReport.of(user_id, (), self.backends)

        def kept() -> list[tuple[str, str]]:
            with sqlite3.connect(self._dir / "history.db") as db:
                marks = ",".join("?" * len(ids))
                rows = db.execute(
                    f"SELECT memory_id, MAX(COALESCE(old_memory, new_memory)) FROM history "
                    f"WHERE memory_id IN ({marks}) AND COALESCE(old_memory, new_memory) "
                    f"IS NOT NULL GROUP BY memory_id", ids).fetchall()
            return [(str(a), str(b)) for a, b in rows]

        rows = await asyncio.to_thread(kept)
        return ConsistencyReport.of(user_id, [
            Difference("mem0 history (SQLite)", "extra", memory_id,
                       f"content {content[:40]!r} kept after forget") for memory_id, content in rows
        ], self.backends)

    async def aclose(self) -> None:
        try:
            self.memory.close()
            if self._client is not None:
                self._client.close()
        finally:
            shutil.rmtree(self._dir, ignore_errors=True)


@asynccontextmanager
async def factory() -> AsyncIterator[Mem0Store]:
    """``--store nomnesia.adapters.ecosystem.mem0:factory``: a fresh, empty mem0 store."""
    store = Mem0Store()
    try:
        yield store
    finally:
        await store.aclose()


@asynccontextmanager
async def factory_unlocked() -> AsyncIterator[Mem0Store]:
    """The adapter without its vector-store lock: mem0 exactly as shipped (see the docstring)."""
    store = Mem0Store(serialize_vector_store=False)
    try:
        yield store
    finally:
        await store.aclose()


@asynccontextmanager
async def memory() -> AsyncIterator[AsyncMemory]:
    """``--mem0-memory nomnesia.adapters.ecosystem.mem0:memory``: the same mem0 through the
    suite's public mapping (``nomnesia.suite.interfaces.mem0``), profile ``memory``; what is
    the audit's own is the offline configuration and the vector-store lock."""
    where = Path(tempfile.mkdtemp(prefix="nomnesia-mem0-"))
    made = local_memory(where)
    try:
        yield made
    finally:
        try:
            made.close()
            client = getattr(made, "nomnesia_qdrant_client", None)
            if client is not None:
                client.close()
        finally:
            shutil.rmtree(where, ignore_errors=True)
