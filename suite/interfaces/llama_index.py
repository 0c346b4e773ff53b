"""llama-index's chat stores as stores of the ``history`` profile: ``BaseChatStore``, and
``AsyncDBChatStore`` (``SQLAlchemyChatStore``, the store behind llama-index's ``Memory``),
told apart by their methods.

What maps to what, for both:

- one chat store for every user (``SimpleChatStore()``, ``RedisChatStore(...)``,
  ``SQLAlchemyChatStore(table_name=..., async_database_uri=...)``), a user's chat at the
  key that is the user id;
- a message is ``ChatMessage(role, content)``, the role one of llama-index's
  ``MessageRole`` values (``user``, ``assistant``, ``system`` and ``tool`` are all among
  them), read back as its role's value.

A ``BaseChatStore`` (it has ``async_add_message``):

- ``append_message(u, role, content)`` is ``async_add_message(u, message)``;
- ``get_history(u, limit)`` is ``aget_messages(u)``, the whole chat, of which the newest
  ``limit`` are returned;
- ``forget(u)`` is ``adelete_messages(u)``.

An ``AsyncDBChatStore`` (no ``async_add_message``; coroutine ``add_message``,
``get_messages``, ``delete_messages``):

- ``append_message(u, role, content)`` is ``add_message(u, message)``, status active;
- ``get_history(u, limit)`` is ``get_messages(u)``, the active messages, oldest first, of
  which the newest ``limit`` are returned (its own ``limit`` counts from the oldest);
- ``forget(u)`` is ``delete_messages(u)`` with no status: active and archived alike, as
  SPEC's forget keeps nothing.

``set_messages`` (a replace of the whole chat) has no counterpart in the ``history``
profile, whose writes are appends: the suite calls it only at the interface, in the
interface tests (``stored_batch`` and ``poisoned_batch``: ``aset_messages`` on a
``BaseChatStore``, ``set_messages`` on an ``AsyncDBChatStore``).

What it cannot see: message ids, search (a ``VectorStoreIndex`` beside it is the team's
own code, audited in ``nomnesia.adapters.ecosystem``), and compaction (``Memory``'s flush
to long-term memory, which archives the oldest messages, is a layer above the chat store).
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from ..contract.validation import validate_limit
from ._base import Mapped, contract_role, has, text_of
from ._poison import PoisonedCall, StoredBatch, Unserializable, describe_batch

__all__ = ["DB_REQUIRES", "LlamaChatStore", "open_store"]

DB_REQUIRES = ("add_message", "get_messages", "delete_messages")
"""What the mapping calls on an ``AsyncDBChatStore``: all coroutine functions."""


def is_db_store(found: Any) -> bool:
    """An ``AsyncDBChatStore``: no ``async_add_message``, and its ``add_message`` a
    coroutine function (a ``BaseChatStore``'s is sync)."""
    return (not has(found, "async_add_message")
            and all(has(found, name) for name in DB_REQUIRES)
            and inspect.iscoroutinefunction(getattr(found, "add_message", None)))


class LlamaChatStore(Mapped):
    """The suite's calls on one llama-index chat store, keyed by user id."""

    requires = ("async_add_message", "aget_messages", "adelete_messages")
    db = False
    """The object is an ``AsyncDBChatStore`` (read from it when it is made)."""

    def missing(self, found: Any) -> list[str]:
        self.db = is_db_store(found)
        return [] if self.db else super().missing(found)

    @classmethod
    def fits(cls, found: Any) -> bool:
        return is_db_store(found) or super().fits(found)

    async def append_message(self, user_id: str, role: str, content: str) -> None:
        from llama_index.core.llms import ChatMessage, MessageRole

        message = ChatMessage(role=MessageRole(contract_role(role)), content=content)
        store = await self._object()
        if self.db:
            await store.add_message(user_id, message)
        else:
            await store.async_add_message(user_id, message)

    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]:
        limit = validate_limit("limit", limit)  # the newest `limit`: the slice is ours
        store = await self._object()
        if self.db:
            messages = await store.get_messages(user_id)
        else:
            messages = await store.aget_messages(user_id)
        return [{"role": str(getattr(m.role, "value", m.role)), "content": text_of(m.content)}
                for m in messages[-limit:]]

    async def forget(self, user_id: str) -> None:
        store = await self._object()
        if self.db:
            await store.delete_messages(user_id)  # no status: archived messages too
        else:
            await store.adelete_messages(user_id)

    async def stored_batch(self, user_id: str, batch: Sequence[tuple[str, str]]
                           ) -> StoredBatch:
        """The replace method with ``batch`` as the whole chat: a chat store stamps the
        messages of a replace itself (``SQLAlchemyChatStore`` gives them consecutive
        timestamps), and a message appended after it must still read last."""
        from llama_index.core.llms import ChatMessage, MessageRole

        messages = [ChatMessage(role=MessageRole(contract_role(role)), content=content)
                    for role, content in batch]
        chat_store = await self._object()
        method = "set_messages" if self.db else "aset_messages"

        async def run() -> object:
            return await getattr(chat_store, method)(user_id, messages)

        return StoredBatch(f"{type(chat_store).__name__}.{method}(key, [{len(messages)} "
                           "messages])", run, replaces=True)

    async def poisoned_batch(self, user_id: str, batch: Sequence[tuple[str, str]],
                             poisoned: int) -> PoisonedCall:
        """``aset_messages(u, chat + batch)`` (``set_messages`` on an ``AsyncDBChatStore``):
        the replace method, given the chat it holds followed by ``batch``, message
        ``poisoned``'s ``additional_kwargs`` holding an object no serializer knows. A replace
        that deletes first and then fails to write loses the chat: the call must refuse the
        whole list before it deletes anything."""
        from llama_index.core.llms import ChatMessage, MessageRole

        messages = [ChatMessage(role=MessageRole(contract_role(role)), content=content)
                    for role, content in batch]
        messages[poisoned].additional_kwargs["nomnesia_poison"] = Unserializable()
        chat_store = await self._object()
        if self.db:
            kept = list(await chat_store.get_messages(user_id))
            method = "set_messages"
        else:
            kept = list(await chat_store.aget_messages(user_id))
            method = "aset_messages"

        async def run() -> object:
            return await getattr(chat_store, method)(user_id, kept + messages)

        where = describe_batch(len(messages), poisoned, "additional_kwargs", kept=len(kept))
        return PoisonedCall(f"{type(chat_store).__name__}.{method}(key, [{where}])", run)


@asynccontextmanager
async def open_store(factory: Callable[..., Any]) -> AsyncIterator[LlamaChatStore]:
    async with LlamaChatStore(factory) as store:
        yield store


MAPPED = LlamaChatStore
"""The mapping, whose ``fits`` says whether an object suits this option."""
