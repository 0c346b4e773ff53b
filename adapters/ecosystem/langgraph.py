"""LangGraph's ``BaseStore``: ``InMemoryStore`` and ``AsyncPostgresStore`` (pgvector) as stores.

The library's behaviour (what the audit measures):

- items live at ``(namespace, key)``; the namespace is ``(store label, user_id)``
  and ``_validate_namespace_labels`` refuses labels with ``.`` or NUL, or empty;
- ``aput``/``aget``/``adelete``/``asearch`` (with a query: vector search over
  the ``content`` field, embedded by the store's ``index`` config) and
  ``abatch``, which runs several operations together but offers no
  compare-and-set: a write cannot be made conditional on what is stored;
- ``AsyncPostgresStore`` keeps values in a JSONB column, which cannot hold
  ``\\u0000`` (PostgreSQL's ``jsonb`` input function refuses it).

The adapter's mapping (not the library's): an entry is one item, keyed by its
id, whose value holds ``role``, ``content``, ``seq`` and ``covers``; an
idempotent retry is an ``aget`` then ``aput``; ``get_history`` lists the
user's namespace (``asearch`` without a query, up to ``ALL`` items) and sorts by
``seq``; ``compact`` writes the summary and deletes the covered items in one
``abatch``; ``forget`` deletes every item of the namespace in one ``abatch``.
Each Postgres store gets its own namespace label in one shared database.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from importlib.metadata import version
from typing import Any

from langgraph.store.base import BaseStore, Item, PutOp
from langgraph.store.memory import InMemoryStore

from nomnesia.suite.contract import Entry

from . import _engines
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

__all__ = ["LangGraphStore", "memory_factory", "postgres_factory"]


def _embed(texts: Sequence[str]) -> list[list[float]]:
    return embedder().embed(texts)


INDEX: dict[str, Any] = {"dims": DIM, "embed": _embed, "fields": ["content"]}


def _entry(item: Item) -> Entry:
    value = item.value
    return entry(item.key, item.namespace[-1], int(value["seq"]), str(value["role"]),
                 str(value["content"]), tuple(value.get("covers") or ()))


class LangGraphStore(AuditStore):
    """The contract over one LangGraph ``BaseStore``; see the module docstring."""

    def __init__(self, store: BaseStore, *, label: str, library: str, backends: tuple[str, ...],
                 keep_last: int = 4) -> None:
        super().__init__(keep_last=keep_last)
        self.store, self.label, self.library, self.backends = store, label, library, backends

    def _ns(self, user_id: str) -> tuple[str, ...]:
        return (self.label, user_id)

    async def _items(self, user_id: str) -> list[Item]:
        items = await self.store.asearch(self._ns(user_id), limit=ALL)
        return sorted((i for i in items if i.namespace == self._ns(user_id)),
                      key=lambda i: int(i.value["seq"]))

    async def append_message(self, user_id: str, role: str, content: str,
                             *, message_id: str | None = None) -> Entry:
        role, message_id = check_append(role, message_id)
        ns = self._ns(user_id)
        if message_id is not None:
            item = await self.store.aget(ns, message_id)
            if item is not None:
                existing = _entry(item)
                if (existing.role, existing.content) != (role, content):
                    raise ValueError(f"message_id {message_id!r} already holds other content")
                return existing
        entry_id, seq = message_id or uuid.uuid4().hex, next_seq()
        await self.store.aput(ns, entry_id, {"role": role, "content": content, "seq": seq,
                                             "covers": []})
        return entry(entry_id, user_id, seq, role, content)

    async def get_history(self, user_id: str, limit: int = 10) -> list[Entry]:
        limit = clamp("limit", limit)
        return [_entry(i) for i in await self._items(user_id)][-limit:]

    async def search(self, user_id: str, query: str, k: int = 5) -> list[Entry]:
        query, k = check_query(query), clamp("k", k)
        items = await self.store.asearch(self._ns(user_id), query=query, limit=k)
        return [_entry(i) for i in items]

    async def compact(self, user_id: str) -> Entry | None:
        items = await self._items(user_id)
        if len(items) <= self.keep_last:
            return None
        prefix = [_entry(i) for i in items[: len(items) - self.keep_last]]
        summary_id, covers = uuid.uuid4().hex, covers_of(prefix)
        content = await summarize(user_id, prefix)
        seq, ns = prefix[-1].seq, self._ns(user_id)
        await self.store.abatch([
            PutOp(ns, summary_id, {"role": "summary", "content": content, "seq": seq,
                                   "covers": list(covers)}),
            *(PutOp(ns, e.id, None) for e in prefix),
        ])
        return entry(summary_id, user_id, seq, "summary", content, covers)

    async def forget(self, user_id: str) -> None:
        ns = self._ns(user_id)
        items = await self.store.asearch(ns, limit=ALL)
        if items:
            await self.store.abatch([PutOp(i.namespace, i.key, None) for i in items])


@asynccontextmanager
async def memory_factory() -> AsyncIterator[LangGraphStore]:
    """``--store nomnesia.adapters.ecosystem.langgraph:memory_factory``: ``InMemoryStore``."""
    yield LangGraphStore(InMemoryStore(index=INDEX), label="nomnesia",  # type: ignore[arg-type,unused-ignore]
                         library=f"langgraph {version('langgraph')} InMemoryStore",
                         backends=("InMemoryStore",))


@asynccontextmanager
async def postgres_factory() -> AsyncIterator[LangGraphStore]:
    """``--store nomnesia.adapters.ecosystem.langgraph:postgres_factory``: Postgres + pgvector."""
    from langgraph.store.postgres import AsyncPostgresStore

    async with AsyncPostgresStore.from_conn_string(
            _engines.url("postgres"), index=INDEX) as store:  # type: ignore[arg-type,unused-ignore]
        await store.setup()
        label = _engines.namespace("lg")
        adapter = LangGraphStore(
            store, label=label, backends=("postgres (store table, pgvector)",),
            library=f"langgraph-checkpoint-postgres {version('langgraph-checkpoint-postgres')} "
                    "AsyncPostgresStore")
        try:
            yield adapter
        finally:
            await store.abatch([PutOp(i.namespace, i.key, None)
                                for i in await store.asearch((label,), limit=ALL)])
