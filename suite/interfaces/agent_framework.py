"""Microsoft Agent Framework's ``HistoryProvider`` as a store of the ``history`` profile.

A ``HistoryProvider`` (``agent_framework``, package ``agent-framework-core``) is where an
agent's session keeps its chat: ``InMemoryHistoryProvider`` (the agent's default, which
keeps the messages in the session's state), ``RedisHistoryProvider``
(``agent-framework-redis``), ``VectorStoreHistoryProvider`` ... The agent calls
``get_messages(session_id, state=...)`` before a run and ``save_messages(session_id,
messages, state=...)`` after it; the mapping makes the same calls:

- one provider for every user, whose session id is the user id, and whose provider-scoped
  session state is a dict of that user's, as an ``AgentSession`` hands it to the provider
  (``session.state.setdefault(provider.source_id, {})``);
- ``append_message(u, role, content)`` is ``save_messages(u, [Message(role, [content])],
  state=...)``, the role one of the framework's (``user``, ``assistant``, ``system`` and
  ``tool`` are all among them);
- ``get_history(u, limit)`` is ``get_messages(u, state=...)``, the whole chat, of which the
  newest ``limit`` are returned, each read back as its role and ``text``;
- ``forget(u)`` is ``clear(u)`` where the provider has one (``RedisHistoryProvider``,
  ``VectorStoreHistoryProvider``); for ``InMemoryHistoryProvider``, which keeps nothing of
  its own, the session's state is dropped, as an application forgets a session by
  discarding it. A provider with neither (``FileHistoryProvider``) has no way to forget a
  session: no profile fits it, and the option says so before the first test.

``save_messages`` takes a batch, so the interface faults apply (a batch one message of
which cannot be serialized). What it cannot see: message ids, search (the vector provider's
search tool is the agent's), and compaction (a ``CompactionProvider`` marks messages
excluded in the stored history; ``skip_excluded`` is the provider's own read option).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from ..contract.validation import validate_limit
from ._base import Mapped, contract_role, has, text_of
from ._poison import PoisonedCall, Unserializable, describe_batch

__all__ = ["AgentFrameworkHistory", "in_session_state", "open_store"]


def in_session_state(found: Any) -> bool:
    """A provider that keeps its messages in the session's state (``InMemoryHistoryProvider``
    and its subclasses): forgetting a session is dropping its state."""
    try:
        from agent_framework import InMemoryHistoryProvider
    except ImportError:
        return False
    return isinstance(found, InMemoryHistoryProvider)


def _message(role: str, content: str) -> Any:
    from agent_framework import Message

    return Message(role=contract_role(role), contents=[content])


def _entry(message: Any) -> dict[str, str]:
    role = getattr(message, "role", None)
    return {"role": str(getattr(role, "value", role)),
            "content": text_of(getattr(message, "text", ""))}


class AgentFrameworkHistory(Mapped):
    """The suite's calls on one Agent Framework history provider, a session per user id."""

    requires = ("get_messages", "save_messages", "clear")

    def __init__(self, factory: Callable[..., Any]) -> None:
        super().__init__(factory)
        self._states: dict[str, dict[str, Any]] = {}

    def missing(self, found: Any) -> list[str]:
        if in_session_state(found):
            return [name for name in ("get_messages", "save_messages") if not has(found, name)]
        return super().missing(found)

    @classmethod
    def fits(cls, found: Any) -> bool:
        return (all(has(found, name) for name in ("get_messages", "save_messages"))
                and (has(found, "clear") or in_session_state(found)))

    def _state(self, user_id: str) -> dict[str, Any]:
        """The provider-scoped state of ``user_id``'s session (empty until the provider
        writes to it)."""
        return self._states.setdefault(user_id, {})

    async def append_message(self, user_id: str, role: str, content: str) -> None:
        message = _message(role, content)
        provider = await self._object()
        await provider.save_messages(user_id, [message], state=self._state(user_id))

    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]:
        limit = validate_limit("limit", limit)  # the provider takes none: the slice is ours
        provider = await self._object()
        messages = await provider.get_messages(user_id, state=self._state(user_id))
        return [_entry(m) for m in list(messages)[-limit:]]

    async def forget(self, user_id: str) -> None:
        provider = await self._object()
        if has(provider, "clear"):
            await provider.clear(user_id)
        self._states.pop(user_id, None)  # a discarded session: a new one starts empty

    async def poisoned_batch(self, user_id: str, batch: Sequence[tuple[str, str]],
                             poisoned: int) -> PoisonedCall:
        """``save_messages`` of ``batch``, message ``poisoned``'s ``additional_properties``
        holding an object no serializer knows: what a provider that stores messages as
        JSON must refuse whole."""
        messages = [_message(role, content) for role, content in batch]
        messages[poisoned].additional_properties["nomnesia_poison"] = Unserializable()
        provider = await self._object()
        state = self._state(user_id)

        async def run() -> object:
            return await provider.save_messages(user_id, messages, state=state)

        where = describe_batch(len(messages), poisoned, "additional_properties")
        return PoisonedCall(f"{type(provider).__name__}.save_messages(session, [{where}])", run)

    async def aclose(self) -> None:
        self._states.clear()
        await super().aclose()


@asynccontextmanager
async def open_store(factory: Callable[..., Any]) -> AsyncIterator[AgentFrameworkHistory]:
    async with AgentFrameworkHistory(factory) as store:
        yield store


MAPPED = AgentFrameworkHistory
"""The mapping, whose ``fits`` says whether an object suits this option."""
