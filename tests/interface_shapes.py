"""The project's own correct store (the oracle, ``InMemoryStore``) behind the interfaces of
``--mem0-memory`` and ``--agent-framework-history``: the negative controls of those options.

A mapping that loses, reorders or mixes up what the library object holds makes even a
correct store fail; these pass the whole suite through the mapping, so every failure the
option reports on the real library is the library's. Each shape has only the methods the
option calls, with the library's signatures:

- :class:`Mem0Shaped`: mem0's ``AsyncMemory`` (``add(messages, *, user_id, infer,
  metadata)``, ``get_all(*, filters, top_k)``, ``search(query, *, top_k, filters)``,
  ``delete_all(*, user_id)``), each memory returned with its ``id``, ``memory``, ``role``
  and ``created_at``, as mem0 returns it;
- :class:`HistoryProviderShaped`: Agent Framework's ``HistoryProvider``
  (``save_messages(session_id, messages, *, state)``, ``get_messages(session_id, *,
  state)``) with ``clear(session_id)``, as ``RedisHistoryProvider`` has it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from nomnesia.adapters.memory import InMemoryStore

EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _memory(entry: Any) -> dict[str, Any]:
    """An oracle entry as mem0 returns a memory: its seq is its place in time."""
    return {"id": entry.id, "memory": entry.content, "role": entry.role,
            "created_at": (EPOCH + timedelta(microseconds=entry.seq)).isoformat()}


class Mem0Shaped:
    """mem0's ``AsyncMemory`` interface over the oracle."""

    def __init__(self) -> None:
        self.store = InMemoryStore()

    async def add(self, messages: Sequence[dict[str, str]], *, user_id: str,
                  infer: bool = True, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
        assert infer is False, "the option must never ask mem0's LLM"
        added = [await self.store.append_message(user_id, m["role"], m["content"])
                 for m in messages]
        return {"results": [_memory(e) for e in added]}

    async def get_all(self, *, filters: dict[str, Any], top_k: int = 20) -> dict[str, Any]:
        entries = await self.store.get_history(filters["user_id"], limit=top_k)
        return {"results": [_memory(e) for e in reversed(entries)]}  # any order: mem0's is none

    async def search(self, query: str, *, top_k: int = 20,
                     filters: dict[str, Any]) -> dict[str, Any]:
        found = await self.store.search(filters["user_id"], query, k=top_k)
        return {"results": [_memory(e) for e in found]}

    async def delete_all(self, *, user_id: str) -> None:
        await self.store.forget(user_id)


class HistoryProviderShaped:
    """Agent Framework's ``HistoryProvider`` interface, with ``clear``, over the oracle."""

    def __init__(self) -> None:
        self.store = InMemoryStore()

    async def save_messages(self, session_id: str, messages: Sequence[Any], *,
                            state: dict[str, Any] | None = None, **kwargs: Any) -> None:
        rows = [(str(getattr(m.role, "value", m.role)), m.text) for m in messages]
        for role, content in rows:  # one message at a time: the oracle has no batch
            await self.store.append_message(session_id, role, content)

    async def get_messages(self, session_id: str, *, state: dict[str, Any] | None = None,
                           **kwargs: Any) -> list[Any]:
        from agent_framework import Message

        entries = await self.store.get_history(session_id, limit=10_000)
        return [Message(role=e.role, contents=[e.content]) for e in entries]

    async def clear(self, session_id: str) -> None:
        await self.store.forget(session_id)
