"""llama-index's ``BaseChatStore`` as a store of the ``history`` profile.

What maps to what:

- one chat store for every user (``SimpleChatStore()``, ``RedisChatStore(...)``),
  a user's chat at the key that is the user id;
- ``append_message(u, role, content)`` is ``async_add_message(u, ChatMessage(role,
  content))``, the role one of llama-index's ``MessageRole`` values (``user``,
  ``assistant``, ``system`` and ``tool`` are all among them);
- ``get_history(u, limit)`` is ``aget_messages(u)``, the whole chat, of which
  the newest ``limit`` are returned, each with its role's value;
- ``forget(u)`` is ``adelete_messages(u)``.

What it cannot see: message ids, search (a ``VectorStoreIndex`` beside it is the
team's own code, audited in ``nomnesia.adapters.ecosystem``), and compaction
(``Memory``'s flush to long-term memory is a layer above the chat store).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from ..validation import validate_limit
from ._base import Mapped, contract_role, text_of
from ._poison import PoisonedCall, Unserializable, describe_batch

__all__ = ["LlamaChatStore", "open_store"]


class LlamaChatStore(Mapped):
    """The suite's calls on one llama-index chat store, keyed by user id."""

    async def append_message(self, user_id: str, role: str, content: str) -> None:
        from llama_index.core.llms import ChatMessage, MessageRole

        message = ChatMessage(role=MessageRole(contract_role(role)), content=content)
        await (await self._object()).async_add_message(user_id, message)

    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]:
        limit = validate_limit("limit", limit)  # the library takes none: the slice is ours
        messages = await (await self._object()).aget_messages(user_id)
        return [{"role": str(getattr(m.role, "value", m.role)), "content": text_of(m.content)}
                for m in messages[-limit:]]

    async def forget(self, user_id: str) -> None:
        await (await self._object()).adelete_messages(user_id)

    async def poisoned_batch(self, user_id: str, batch: Sequence[tuple[str, str]],
                             poisoned: int) -> PoisonedCall:
        """``aset_messages(u, chat + batch)``: the replace method, given the chat it holds
        followed by ``batch``, message ``poisoned``'s ``additional_kwargs`` holding an
        object no serializer knows. A replace that deletes first and then fails to write
        loses the chat: the call must refuse the whole list before it deletes anything."""
        from llama_index.core.llms import ChatMessage, MessageRole

        messages = [ChatMessage(role=MessageRole(contract_role(role)), content=content)
                    for role, content in batch]
        messages[poisoned].additional_kwargs["nomnesia_poison"] = Unserializable()
        chat_store = await self._object()
        kept = list(await chat_store.aget_messages(user_id))

        async def run() -> object:
            return await chat_store.aset_messages(user_id, kept + messages)

        where = describe_batch(len(messages), poisoned, "additional_kwargs", kept=len(kept))
        return PoisonedCall(f"{type(chat_store).__name__}.aset_messages(key, [{where}])", run)


@asynccontextmanager
async def open_store(factory: Callable[..., Any]) -> AsyncIterator[LlamaChatStore]:
    async with LlamaChatStore(factory) as store:
        yield store
