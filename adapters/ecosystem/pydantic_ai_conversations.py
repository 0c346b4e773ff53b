"""pydantic-ai's ``ConversationStore``, for ``--pydantic-ai-conversations``.

Each factory takes no argument (one store holds every conversation) and returns the
library's own store; the suite's mapping (``nomnesia.suite.interfaces.pydantic_ai_conversations``)
does the rest, adding nothing the library lacks (no lock, id or ordering; a
``ConversationConflict`` is answered as pydantic-ai's docs say, by loading and saving again):

- :func:`in_memory`: ``InMemoryConversationStore()`` from ``pydantic-ai-slim``, the one
  implementation that ships with the protocol.

pydantic-ai's docs (``docs/persistence.md``, v2.77) say SQLite, PostgreSQL and MongoDB
backends ship in Pydantic AI Harness; the newest ``pydantic-ai-harness`` on PyPI, 0.75.0,
has none (its ``step_persistence.conversations.SqliteConversationStore`` is another class,
``save(summary=, messages=)``, not a ``ConversationStore``) and pins
``pydantic-ai-slim==2.75.0``. Those backends get a configuration here once a release has
them; MongoDB has no engine on this machine's suite either way.

The factory is called once per store, so every store starts empty.
"""

from __future__ import annotations

from pydantic_ai.conversation_store import InMemoryConversationStore

__all__ = ["in_memory"]


def in_memory() -> InMemoryConversationStore:
    """``--pydantic-ai-conversations`` with
    ``nomnesia.adapters.ecosystem.pydantic_ai_conversations:in_memory``."""
    return InMemoryConversationStore()
