"""pydantic-ai's ``ConversationStore`` (``pydantic_ai.conversation_store`` in
``pydantic-ai-slim``: ``InMemoryConversationStore``, or a backend of one's own) as a store of
the ``history`` profile, a conversation per user, loaded and saved around each turn as
pydantic-ai's docs say an application does.

Why a conversation per user: the store keys everything by ``conversation_id`` (a
``scope`` only filters), and a conversation is the history the suite judges.

What maps to what (every name checked against ``pydantic_ai/conversation_store.py``):

- ``append_message(u, role, content)`` is one turn of the store's documented loop
  (``ConversationStore``'s docstring): ``load(u)``, or a new ``Conversation(conversation_id
  =u)`` when the store has none; the conversation grown by one message; ``save(conversation)``.
  A loaded conversation knows where its stored messages end (``new_message_index``), so the
  save appends just the new message, as it does for a run's result, whose messages a run adds
  after that index (``Conversation.new_message_index``: "Messages added to the end of a loaded
  conversation before a run, like a user's new turn, are carried through the run and saved
  with it"). The message is what a run makes: ``user`` a ``ModelRequest`` of a
  ``UserPromptPart``, ``system`` of a ``SystemPromptPart``, ``tool`` of a ``ToolReturnPart``,
  ``assistant`` a ``ModelResponse`` of a ``TextPart``;
- ``get_history(u, limit)`` is ``load(u, limit=limit)``: the store's own window of the last
  ``limit`` messages, one entry per message (its first part's kind is its role, its parts'
  text its content);
- ``forget(u)`` is ``delete(u)``.

The save is checked against the conversation's ``revision``: when another save landed
between this append's load and its save, the store raises ``ConversationConflict`` and
writes nothing, the documented answer ("an expected outcome when more than one writer
changes the same conversation. Load it again and decide what to do: after a save, run the
turn again only if repeating its tool calls is safe"). A turn here calls no tool, so the
mapping does what that sentence says: it loads the conversation again and saves it grown by
the same message, up to :data:`ATTEMPTS` times, as ``ConversationStore.update`` and
``delete`` themselves retry on that error. Only that error is retried, never another, and
nothing is locked, so the store's own check is what keeps the message: a store that skipped
it would lose one (G1), and one whose conflict wrote part of a save would store it twice
(G2).

A batch is one save of the conversation grown by every message of it, so the interface
faults apply: a save one message of which cannot be stored must store none of them.

Beyond the history profile, the store's own promises are checked at its own interface
(``promises``, run by ``test_interface_promises.py``; the checks are in
``_conversation_checks.py``): a stale save never loses a message (G1), each message is
stored once and in order (G2, G5), and a fork and its parent never see each other (G9).

What the turns cannot see: entry ids (the store mints its own), branches, titles, usage and
``scope`` (a conversation saved without one), and search (the store has none).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from ..contract import Guarantee
from ._base import Mapped
from ._conversation_checks import PROMISES, Check
from ._conversation_messages import ROLE_OF, message, role_and_text
from ._poison import PoisonedCall, StoredBatch, Unserializable, describe_batch

__all__ = ["ATTEMPTS", "ROLE_OF", "ConversationStoreHistory", "message", "open_store",
           "role_and_text"]

ATTEMPTS = 64
"""How many times one append loads and saves before a conflict is raised to the suite: each
conflict means another save landed, so a workload makes progress; a store that conflicts
this often with no writer landing is reported (G12)."""

class ConversationStoreHistory(Mapped):
    """The suite's calls on one ``ConversationStore``: a conversation per user."""

    requires = ("load", "save", "delete")

    async def _grown(self, user_id: str, messages: list[Any]) -> Any:
        """The user's conversation as the store loads it (a new one if it has none), grown by
        ``messages``: what an application hands to ``save`` after a turn."""
        from pydantic_ai.conversation import Conversation

        store = await self._object()
        conversation = await store.load(user_id)
        if conversation is None:
            conversation = Conversation(conversation_id=user_id)
        conversation.messages.extend(messages)
        return conversation

    async def _save(self, user_id: str, messages: list[Any]) -> None:
        """Save the conversation grown by ``messages``; on ``ConversationConflict`` (another
        save landed since the load), load it again and save again, as pydantic-ai's docs
        say for a turn that is safe to repeat."""
        from pydantic_ai.conversation_store import ConversationConflict

        store = await self._object()
        for attempt in range(ATTEMPTS):
            try:
                await store.save(await self._grown(user_id, messages))
                return
            except ConversationConflict:
                if attempt == ATTEMPTS - 1:
                    raise

    async def append_message(self, user_id: str, role: str, content: str) -> None:
        await self._save(user_id, [message(role, content)])

    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]:
        store = await self._object()
        conversation = await store.load(user_id, limit=limit)
        if conversation is None:
            return []
        return [role_and_text(m) for m in conversation.messages]

    async def forget(self, user_id: str) -> None:
        store = await self._object()
        await store.delete(user_id)

    promise_family = "conversation-store"
    """Which of ``test_interface_promises.py``'s tests judge :meth:`promises`."""

    def promises(self) -> dict[Guarantee, Check]:
        """The store's own promises, each a check under the guarantee it keeps
        (``_conversation_checks``; ``test_interface_promises.py`` runs them)."""
        return dict(PROMISES)

    async def promise_subject(self) -> tuple[Any, str]:
        """What the promises' checks call: the store itself, and how the log names it."""
        store = await self._object()
        return store, type(store).__name__

    async def stored_batch(self, user_id: str, batch: Sequence[tuple[str, str]]) -> StoredBatch:
        """One save of the conversation grown by every message of ``batch``."""
        messages = [message(role, content) for role, content in batch]
        store = await self._object()

        async def run() -> object:
            await self._save(user_id, messages)
            return None

        return StoredBatch(f"{type(store).__name__}.save(conversation + {len(messages)} "
                           f"messages)", run, replaces=False)

    async def poisoned_batch(self, user_id: str, batch: Sequence[tuple[str, str]],
                             poisoned: int) -> PoisonedCall:
        """One save of the conversation grown by every message of ``batch``, message
        ``poisoned``'s ``metadata`` holding an object no serializer knows: a backend that
        serializes its messages cannot store it, and then must store none of the batch (an
        in-memory store keeps a copy of it, as it should)."""
        messages = [message(role, content, Unserializable() if i == poisoned else None)
                    for i, (role, content) in enumerate(batch)]
        store = await self._object()

        async def run() -> object:
            await self._save(user_id, messages)
            return None

        where = describe_batch(len(messages), poisoned, "metadata")
        return PoisonedCall(f"{type(store).__name__}.save(conversation + [{where}])", run)


@asynccontextmanager
async def open_store(factory: Callable[..., Any]) -> AsyncIterator[ConversationStoreHistory]:
    async with ConversationStoreHistory(factory) as store:
        yield store


MAPPED = ConversationStoreHistory
"""The mapping, whose ``fits`` says whether an object suits this option."""
