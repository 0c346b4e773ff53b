"""llama-index ``Memory`` on its ``SQLAlchemyChatStore`` (SQLite, PostgreSQL): a seed-profile store.

The library's behaviour (what the audit measures), llama-index-core's
``llama_index.core.memory.Memory`` and
``llama_index.core.storage.chat_store.sql.SQLAlchemyChatStore``:

- the chat store is one table of rows ``(id, key, timestamp, role, status,
  data)``; ``data`` is the ``ChatMessage`` as SQLAlchemy ``JSON``, ``timestamp``
  is ``time.time_ns()`` taken in the process, and a key's messages are read
  ordered by ``(timestamp, id)``; the table is created lazily by the first call
  (``SQLAlchemyChatStore._initialize``);
- ``Memory.aput`` inserts the message as ``active`` (``add_message``) and then
  runs ``Memory._manage_queue``: when the active messages' tokens exceed
  ``token_limit * chat_history_token_ratio``, it picks the oldest messages to
  flush (``token_flush_size`` tokens at a time, then more until the first
  message kept is a ``user`` one), marks "the oldest *n*" active rows
  ``archived`` (``archive_oldest_messages``, a SELECT then an UPDATE) and hands
  the flushed messages to its memory blocks;
- ``Memory.aget`` returns the active messages, with the memory blocks'
  content put into a system message; ``Memory.areset`` deletes every row of
  the key.

The adapter's mapping (not the library's): one ``Memory`` per user id
(``session_id`` is the user id) over one shared chat store, built with
``Memory.from_defaults`` and no memory blocks (every built-in block but the
static one needs an LLM or an embedding model); ``append_message`` is
``Memory.aput``; ``get_history`` is ``Memory.aget()``, the chat Memory gives the
model, cut to the newest ``limit``; ``compact`` is ``Memory._manage_queue()``,
the call ``aput`` itself makes to flush (Memory has no public "flush now"): the
small :data:`TOKEN_LIMIT` makes the flush happen after a few of the suite's
messages, inside ``aput`` as in production, so ``compact`` only repeats it;
``forget`` is ``Memory.areset()``. The adapter keeps no lock and no retry.

The seed profile, not the full one: Memory has no message ids, sequence numbers
or covers, and a summary of its own only through memory blocks, so the suite
knows an entry by its role and content (SPEC.md, "Profiles"). ``forget`` is
there but the seed profile does not judge it.

What the adapter cannot see: the archived rows (``Memory.aget_all`` returns
them, ``aget`` does not), so a flushed message is gone from the history as the
model sees it; whatever memory blocks would have made of it; and Memory's
token counting (tiktoken's ``cl100k_base``, llama-index's default tokenizer).
``consistent_state`` is the adapter's own and always true: there is one
backend of record, the chat table.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.metadata import version

from llama_index.core.llms import ChatMessage
from llama_index.core.memory import Memory
from llama_index.core.storage.chat_store.sql import SQLAlchemyChatStore

from . import _engines

__all__ = ["TOKEN_FLUSH_SIZE", "TOKEN_LIMIT", "LlamaMemoryStore", "postgres_factory",
           "sqlite_factory"]

TOKEN_LIMIT = 100
"""Memory's ``token_limit``: its chat keeps about 70 tokens (``chat_history_token_ratio``
0.7), a handful of the suite's messages, so the flush runs in ordinary tests."""

TOKEN_FLUSH_SIZE = 10
"""Tokens flushed per round: Memory's own default ratio (10% of the limit).
``from_defaults`` would otherwise turn its default 3000 into 70% of a small limit."""


class LlamaMemoryStore:
    """The seed profile over one ``SQLAlchemyChatStore``: one ``Memory`` per user id."""

    def __init__(self, chats: SQLAlchemyChatStore, *, library: str, backend: str) -> None:
        self.chats = chats
        self.library = library
        self.backends = (backend,)
        self._memories: dict[str, Memory] = {}

    def memory(self, user_id: str) -> Memory:
        """The user's ``Memory``: stateless apart from its settings, so one is kept per user."""
        memory = self._memories.get(user_id)
        if memory is None:
            memory = Memory.from_defaults(session_id=user_id, chat_store=self.chats,
                                          token_limit=TOKEN_LIMIT,
                                          token_flush_size=TOKEN_FLUSH_SIZE)
            self._memories[user_id] = memory
        return memory

    async def append_message(self, user_id: str, role: str, content: str) -> None:
        await self.memory(user_id).aput(ChatMessage(role=role, content=content))

    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]:
        messages = await self.memory(user_id).aget()
        return [{"role": str(m.role.value), "content": m.content or ""}
                for m in messages][-limit:]

    async def compact(self, user_id: str) -> None:
        """Memory's flush, the call ``aput`` makes: it archives only over the token limit."""
        await self.memory(user_id)._manage_queue()

    async def forget(self, user_id: str) -> None:
        await self.memory(user_id).areset()

    async def consistent_state(self, user_id: str) -> bool:
        """One backend of record (the chat table): nothing to compare."""
        return True

    async def aclose(self) -> None:
        engine = self.chats._async_engine
        if engine is not None:
            await engine.dispose()


@asynccontextmanager
async def sqlite_factory() -> AsyncIterator[LlamaMemoryStore]:
    """``--store nomnesia.adapters.ecosystem.llama_memory:sqlite_factory``: aiosqlite, a
    fresh database file in the process's scratch directory (an in-memory URI would be
    one database per connection of SQLAlchemy's pool)."""
    path = _engines.sqlite_path(_engines.namespace("llama_memory"))
    chats = SQLAlchemyChatStore(table_name=path.stem,
                                async_database_uri=f"sqlite+aiosqlite:///{path}")
    store = LlamaMemoryStore(chats, backend="SQLAlchemyChatStore (SQLite)",
                             library=f"llama-index-core {version('llama-index-core')}")
    try:
        yield store
    finally:
        try:
            await store.aclose()
        finally:
            _engines.remove_sqlite(path)


@asynccontextmanager
async def postgres_factory() -> AsyncIterator[LlamaMemoryStore]:
    """``--store nomnesia.adapters.ecosystem.llama_memory:postgres_factory``: asyncpg, a
    fresh table in the process's embedded PostgreSQL, dropped at the end."""
    from sqlalchemy import text

    table = _engines.namespace("llama_memory")
    uri = _engines.asyncpg_url()
    chats = SQLAlchemyChatStore(table_name=table, async_database_uri=uri)
    store = LlamaMemoryStore(chats, backend="SQLAlchemyChatStore (PostgreSQL)",
                             library=f"llama-index-core {version('llama-index-core')}")
    try:
        yield store
    finally:
        await chats._initialize()  # the engine and table, even if no call made them
        engine = chats._async_engine
        if engine is not None:
            async with engine.begin() as conn:
                await conn.execute(text(f'DROP TABLE IF EXISTS "{table}"'))
        await store.aclose()
