"""LangChain's ``BaseChatMessageHistory`` as a store of the ``history`` profile.

What maps to what:

- one history object per user id: the factory is called with the user id when
  it takes a session id (``RedisChatMessageHistory(session_id, ...)``), else
  with nothing, once per user (``InMemoryChatMessageHistory``);
- ``append_message(u, role, content)`` is ``aadd_messages([message])``, the
  message a ``HumanMessage`` (user), ``AIMessage`` (assistant),
  ``SystemMessage`` (system) or ``ToolMessage`` (tool; its type requires a
  ``tool_call_id``, which is ``"nomnesia"``);
- ``get_history(u, limit)`` is ``aget_messages()``, the whole history, of which
  the newest ``limit`` are returned; a message's role is read back from its
  ``type`` (``human``, ``ai``, ``system``, ``tool``);
- ``forget(u)`` is ``aclear()``.

With ``sync=True`` (``--langchain-sync``) the sync methods are called
instead (``add_messages``, ``messages``, ``clear``), as synchronous callers do; the
default async methods of the base class run those in a thread.

What it cannot see: message ids (``BaseMessage.id`` is optional and most
histories leave it unset), search and compaction, which the interface does not
have: those guarantees are not applicable.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from ..contract.validation import validate_limit
from ._base import Mapped, contract_role, has, text_of
from ._poison import PoisonedCall, Unserializable, describe_batch

__all__ = ["LangChainHistory", "open_store"]

_TYPES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


def _message(role: str, content: str) -> Any:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    if role == "assistant":
        return AIMessage(content=content)
    if role == "system":
        return SystemMessage(content=content)
    if role == "tool":
        return ToolMessage(content=content, tool_call_id="nomnesia")
    return HumanMessage(content=content)


class LangChainHistory(Mapped):
    """The suite's calls on LangChain chat histories, one per user id."""

    one_per_user = True

    def __init__(self, factory: Callable[..., Any], *, sync: bool = False) -> None:
        super().__init__(factory)
        self.sync = sync

    requires = ("aadd_messages", "aget_messages", "aclear")

    def missing(self, found: Any) -> list[str]:
        if self.sync:
            return [n for n in ("add_messages", "messages", "clear") if not has(found, n)]
        return super().missing(found)

    async def append_message(self, user_id: str, role: str, content: str) -> None:
        message = _message(contract_role(role), content)
        history = await self._object(user_id)
        if self.sync:
            history.add_messages([message])
        else:
            await history.aadd_messages([message])

    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]:
        limit = validate_limit("limit", limit)  # the library takes none: the slice is ours
        history = await self._object(user_id)
        messages = history.messages if self.sync else await history.aget_messages()
        return [{"role": _TYPES.get(m.type, m.type), "content": text_of(m.content)}
                for m in messages[-limit:]]

    async def forget(self, user_id: str) -> None:
        history = await self._object(user_id)
        if self.sync:
            history.clear()
        else:
            await history.aclear()

    async def poisoned_batch(self, user_id: str, batch: Sequence[tuple[str, str]],
                             poisoned: int) -> PoisonedCall:
        """``aadd_messages`` (``add_messages`` with ``sync``) of ``batch``, message
        ``poisoned``'s ``additional_kwargs`` holding an object no serializer knows: what a
        history that stores messages as JSON (``message_to_dict``) must refuse whole."""
        messages = [_message(contract_role(role), content) for role, content in batch]
        messages[poisoned].additional_kwargs["nomnesia_poison"] = Unserializable()
        history = await self._object(user_id)
        method = "add_messages" if self.sync else "aadd_messages"

        async def run() -> object:
            if self.sync:
                return history.add_messages(messages)
            return await history.aadd_messages(messages)

        where = describe_batch(len(messages), poisoned, "additional_kwargs")
        return PoisonedCall(f"{type(history).__name__}.{method}([{where}])", run)


@asynccontextmanager
async def open_store(factory: Callable[..., Any], *, sync: bool = False
                     ) -> AsyncIterator[LangChainHistory]:
    async with LangChainHistory(factory, sync=sync) as store:
        yield store


MAPPED = LangChainHistory
"""The mapping, whose ``fits`` says whether an object suits this option."""
