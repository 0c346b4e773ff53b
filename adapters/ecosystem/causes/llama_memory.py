"""Causes of the llama-memory audits: llama-index-core's ``Memory`` on ``SQLAlchemyChatStore``.

The flush (``Memory._manage_queue``) is the heart of it. It decides what to
flush from one read of the active messages, then archives "the oldest *n*"
active rows with a second, separate statement
(``SQLAlchemyChatStore.archive_oldest_messages``), then hands its own list to
the memory blocks. Nothing ties the rows archived to the messages chosen, and
nothing serialises two flushes of one session (every ``aput`` runs one).
"""

from __future__ import annotations

from . import Cause

__all__ = ["CAUSES"]

LM = ("llama-memory-sqlite", "llama-memory-postgres")

_EMPTY_READ = r"\bok\s+read\s+[^\n]*\s\[\]\s*$"
"""A workload read that returned nothing: the documented flush always keeps a message."""

CAUSES: tuple[Cause, ...] = (
    Cause("llama-memory-flush-empties-chat", LM, ("G1", "G3", "G7"), "data loss",
          "Memory._manage_queue (llama-index-core): with no user message among the active "
          "messages it moves the last one into the flush and, finding no user turn to keep, "
          "archives them all; concurrent flushes of one session each archive 'the oldest n' "
          "(SQLAlchemyChatStore.archive_oldest_messages) from their own stale read",
          "the flush archives the whole active chat, the message aput has just written "
          "included, so Memory.aget() returns [] right after an acknowledged aput (read your "
          "writes broken); Memory's docstring promises it 'maintains at least one complete "
          "conversation turn' and the code 'keep[s] at least one message'",
          "for i in range(25): await memory.aput(ChatMessage(role='assistant', content=...)); "
          "await memory.aget()  # [] once the token limit is passed",
          "the active messages exceed token_limit * chat_history_token_ratio and none has role "
          "user (a chat of assistant/tool/system messages, or of a session whose user turns "
          "were flushed); or two aput/flushes of one session at once (racy); any engine",
          functions=("llama_index.core.memory.memory:Memory._manage_queue",
                     "llama_index.core.storage.chat_store.sql:SQLAlchemyChatStore."
                     "archive_oldest_messages"),
          match=(r"^G(?:1 durability|3 read your writes|7 atomic compaction): ", _EMPTY_READ),
          racy=True, shows=r"aget\(\) returned \[\]"),
    Cause("llama-memory-create-table-race", LM, ("G10", "G12"), "availability",
          "SQLAlchemyChatStore._setup_tables (llama-index-core) assigns self._table before "
          "its CREATE TABLE has run, and SQLAlchemyChatStore._initialize returns early once "
          "_table is set",
          "the table is created lazily by the first call; a second call made while the first "
          "is still creating it skips initialisation and queries a table that does not exist "
          "yet: 'no such table' (SQLite) or UndefinedTableError (PostgreSQL)",
          "s = SQLAlchemyChatStore(table_name='t', async_database_uri=uri); "
          "await asyncio.gather(s.get_messages('a'), s.get_messages('b'))  # no such table",
          "two or more first calls on a fresh store run concurrently (any Memory sharing it); "
          "any engine",
          functions=("llama_index.core.storage.chat_store.sql:SQLAlchemyChatStore._initialize",
                     "llama_index.core.storage.chat_store.sql:SQLAlchemyChatStore."
                     "_setup_tables"),
          match=(r"raised (?:OperationalError|ProgrammingError)[^\n]*"
                 r"(?:no such table|UndefinedTable|does not exist)",),
          racy=True, shows=r"no such table|UndefinedTable|does not exist"),
    Cause("aiosqlite-cancel-leaves-lock", ("llama-memory-sqlite", "langchain-sql-sqlite"),
          ("G10",), "availability",
          "SQLAlchemy's aiosqlite adapter: on a cancelled query the pool terminates the "
          "connection (AsyncAdapt_terminate.terminate); its graceful close is cancelled too, so "
          "it force-closes with aiosqlite's Connection.stop(), which closes the sqlite3 "
          "connection while the cancelled SELECT's cursor is still open",
          "a call cancelled while its SELECT is being fetched leaves a zombie sqlite3 "
          "connection that keeps its read lock until the garbage collector frees the cursor: "
          "the next write waits SQLite's 5 s busy timeout and fails with 'database is locked'",
          "t = asyncio.create_task(store.get_messages('u')); [await asyncio.sleep(0) for _ in "
          "range(4)]; t.cancel(); await store.add_message('u', m)  # database is locked",
          "SQLite through aiosqlite (SQLAlchemy 2.1, aiosqlite 0.22); a read cancelled mid-"
          "fetch (task cancellation, asyncio.timeout); lasts until a gc.collect()",
          functions=("sqlalchemy.connectors.asyncio:AsyncAdapt_terminate.terminate",
                     "sqlalchemy.dialects.sqlite.aiosqlite:AsyncAdapt_aiosqlite_connection."
                     "_terminate_force_close",
                     "aiosqlite.core:Connection.stop"),
          match=(r"^G10 interruption: .*cancelled", r"database is locked"),
          shows=r"database is locked"),
    Cause("llama-memory-flush-leaves-chat", LM, ("G1", "G3", "G7"), "hazard",
          "Memory._manage_queue archives the oldest active messages once the chat passes "
          "token_limit * chat_history_token_ratio; Memory.aget reads only active messages",
          "a flushed message leaves the chat Memory returns, with no trace in it: it is an "
          "archived row that only aget_all() returns, and what the memory blocks make of it "
          "(nothing, with Memory.from_defaults' empty memory_blocks); it happens inside aput, "
          "and removes whole turns (until the first kept message is a user one), not a fixed "
          "number",
          "memory = Memory.from_defaults(token_limit=100, ...); 30 x await memory.aput(...); "
          "await memory.aget()  # the oldest are gone; aget_all() still has them, archived",
          "the active messages pass token_limit * chat_history_token_ratio (tokens counted "
          "with tiktoken); any engine",
          documented="Memory's class docstring: 'When the FIFO queue reaches the token limit, "
                     "the oldest messages within the pressure size are ejected from the FIFO "
                     "queue. The messages are then processed by each memory block.'; and the "
                     "'Memory' page of the llama-index docs (short-term memory flushed to "
                     "long-term memory blocks)",
          functions=("llama_index.core.memory.memory:Memory._manage_queue",
                     "llama_index.core.memory.memory:Memory.aget"),
          match=(r"^G(?:1 durability: [^\n]*(?:acknowledged appends are not live|does not "
                 r"return it, though it is newer)|3 read your writes: [^\n]*(?:not the newest"
                 r"|returned \d+ of \d+ entries)|7 atomic compaction: [^\n]*the compaction "
                 r"lost it)",
                 r"\A(?![\s\S]*" + _EMPTY_READ + ")"),
          shows=r"archived, not in aget\(\)"),
)
