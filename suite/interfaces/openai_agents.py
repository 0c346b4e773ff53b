"""The OpenAI Agents SDK's ``Session`` protocol as a store of the ``history`` profile.

What maps to what:

- one session per user id: the factory is called with the user id as the
  session id (``SQLiteSession(session_id)``, ``RedisSession``...);
- ``append_message(u, role, content)`` is ``add_items([item])``: for ``user``,
  ``assistant`` and ``system`` the Responses API's easy input message
  ``{"role": role, "content": content}``; for ``tool`` a
  ``function_call_output`` item (``call_id`` ``"nomnesia"``, ``output`` the content),
  the only item a tool's words travel in;
- ``get_history(u, limit)`` is ``get_items(limit=limit)``, the newest ``limit``
  items in chronological order, as the protocol defines it; the limit is passed
  as given;
- ``forget(u)`` is ``clear_session()``.

``pop_item`` has no counterpart in SPEC.md: the mapping's own ``pop_item(u)`` calls it
for the interface step that pops concurrently (each item is returned once, G2).

What it cannot see: item ids, search and compaction
(``OpenAIResponsesCompactionSession`` compacts on the server).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from ._base import Mapped, contract_role, text_of
from ._poison import PoisonedCall, StoredBatch, Unserializable, describe_batch

__all__ = ["AgentsSession", "open_store"]


def _item(role: str, content: str) -> dict[str, Any]:
    if role == "tool":
        return {"type": "function_call_output", "call_id": "nomnesia", "output": content}
    return {"role": role, "content": content}


def _entry(item: Any) -> dict[str, str]:
    if not isinstance(item, dict):
        item = dict(item)
    if item.get("type") == "function_call_output":
        return {"role": "tool", "content": text_of(item.get("output"))}
    return {"role": str(item.get("role")), "content": text_of(item.get("content"))}


class AgentsSession(Mapped):
    """The suite's calls on Agents SDK sessions, one per user id."""

    one_per_user = True
    requires = ("add_items", "get_items", "clear_session")

    async def append_message(self, user_id: str, role: str, content: str) -> None:
        item = _item(contract_role(role), content)
        await (await self._object(user_id)).add_items([item])

    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]:
        items = await (await self._object(user_id)).get_items(limit=limit)
        return [_entry(item) for item in items]

    async def forget(self, user_id: str) -> None:
        await (await self._object(user_id)).clear_session()

    async def pop_item(self, user_id: str) -> dict[str, str] | None:
        """``pop_item()`` of the user's session: its newest item, removed, or None."""
        item = await (await self._object(user_id)).pop_item()
        return None if item is None else _entry(item)

    async def stored_batch(self, user_id: str, batch: Sequence[tuple[str, str]]
                           ) -> StoredBatch:
        """One ``add_items`` of every message of ``batch``: the session's own batch write
        (a run's new items are stored so), which a SQL session writes in one transaction,
        so that every item may share one ``created_at``."""
        items = [_item(contract_role(role), content) for role, content in batch]
        session = await self._object(user_id)

        async def run() -> object:
            return await session.add_items(items)

        return StoredBatch(f"{type(session).__name__}.add_items([{len(items)} items])", run,
                           replaces=False)

    async def poisoned_batch(self, user_id: str, batch: Sequence[tuple[str, str]],
                             poisoned: int) -> PoisonedCall:
        """``add_items`` of ``batch``, item ``poisoned``'s content one ``input_text`` part
        that also holds an object no serializer knows (a tool's result, say): what a
        session that stores items as JSON must refuse whole."""
        items = [_item(contract_role(role), content) for role, content in batch]
        role, content = batch[poisoned]
        if role == "tool":
            items[poisoned]["output"] = [{"type": "input_text", "text": content,
                                          "nomnesia_poison": Unserializable()}]
        else:
            items[poisoned]["content"] = [{"type": "input_text", "text": content,
                                           "nomnesia_poison": Unserializable()}]
        session = await self._object(user_id)

        async def run() -> object:
            return await session.add_items(items)

        where = describe_batch(len(items), poisoned, "content part")
        return PoisonedCall(f"{type(session).__name__}.add_items([{where}])", run)


@asynccontextmanager
async def open_store(factory: Callable[..., Any]) -> AsyncIterator[AgentsSession]:
    async with AgentsSession(factory) as store:
        yield store


MAPPED = AgentsSession
"""The mapping, whose ``fits`` says whether an object suits this option."""
