"""Causes of the agno audits: ``MemoryManager`` on ``SqliteDb`` and ``PostgresDb``.

Two of agno's choices are at the root. ``MemoryManager._upsert_db_memory`` turns
every database error into a logged warning, so a failed write looks like a
stored one; and a memory's only identity is a global ``memory_id`` written with
an unconditional upsert, with time kept in whole seconds and no tie-breaker.
"""

from __future__ import annotations

from . import Cause

__all__ = ["CAUSES"]

AGNO = ("agno-sqlite", "agno-postgres")
_ADD = "agno.memory.manager:MemoryManager.add_user_memory"
_UPSERT = "agno.memory.manager:MemoryManager._upsert_db_memory"

CAUSES: tuple[Cause, ...] = (
    Cause("agno-acks-failed-write", AGNO, ("G1",), "data loss",
          "MemoryManager._upsert_db_memory catches every exception of the database's "
          "upsert_user_memory, logs a warning and returns 'Error adding memory'; "
          "MemoryManager.add_user_memory ignores that and returns the memory id",
          "a write that failed returns its memory id like a stored one, so the caller "
          "acknowledges a memory that is not there: a memory text with NUL (PostgresDb's "
          "jsonb memory column refuses \\u0000; agno strips NUL from input and feedback "
          "only), or any write while the database is unreachable or drops the connection",
          "mid = manager.add_user_memory(UserMemory(memory='a\\x00b'), user_id='ann')  "
          "# an id; manager.get_user_memories(user_id='ann') == []",
          "any database error during the write: NUL in the memory text (PostgreSQL), a "
          "refused or reset connection, a database that is down; the id comes back all "
          "the same (SQLite stores NUL, so only its outages show it)",
          documented=None,
          functions=(_ADD, _UPSERT),
          # The input test names the content; under the partial-failure test an acknowledged
          # append is missing from a read that is whole (no limit cut it): a lost write, not
          # the order cause below, whose misses are all in reads cut by their limit.
          match=(r"^G1 durability: (?:content #\d+ '[^'\n]*\\x00|[^\n]*was acknowledged, "
                 r"then read [^\n]*the read is whole)",),
          shows=r"an id for a write that failed"),
    Cause("agno-upsert-crosses-users", AGNO, ("G8", "G9"), "data loss",
          "SqliteDb.upsert_user_memory and PostgresDb.upsert_user_memory: INSERT ... ON "
          "CONFLICT (memory_id) DO UPDATE SET memory = ..., with no condition on the row's "
          "user_id (agno's session upsert has WHERE user_id = excluded.user_id; the memory "
          "upsert has none)",
          "a memory added (or replaced, or updated by the agent's update_memory tool) for one "
          "user with a memory id that belongs to another user rewrites that user's memory: "
          "the other user reads the new text, and the writer never sees it",
          "ann_id = manager.add_user_memory(UserMemory(memory='ann: allergic'), user_id='ann'); "
          "manager.add_user_memory(UserMemory(memory='bob: jazz', memory_id=ann_id), "
          "user_id='bob')  # ann's memory now reads 'bob: jazz'",
          "a write carries a memory id of another user's memory (an id a model repeats, a "
          "client that reuses ids); both databases",
          documented=None,
          functions=(_ADD, "agno.db.sqlite.sqlite:SqliteDb.upsert_user_memory",
                     "agno.db.postgres.postgres:PostgresDb.upsert_user_memory"),
          probe="foreign_memory_id",
          unreachable="the adapter passes no memory id (SPEC's message ids are per user, "
                      "agno's memory_id is one key for all users), so no suite call carries "
                      "another user's id",
          shows=r"another user's memory rewritten"),
    Cause("agno-postgres-last-n-order", ("agno-postgres",), ("G1", "G3", "G5"), "corruption",
          "MemoryManager._get_last_n_memories sorts by updated_at, which add_user_memory sets "
          "in whole seconds (now_epoch_s), with no tie-breaker; the rows come from "
          "PostgresDb.get_user_memories with no ORDER BY",
          "memories added within one second keep PostgreSQL's heap order, which is not "
          "insertion order once new rows reuse space freed by deleted ones (a forgotten user, "
          "vacuumed) or land where another connection inserts: search_user_memories("
          "retrieval_method='last_n') returns them out of order, and with a limit it returns "
          "an older memory in place of the newest",
          "add 'first', forget another user (vacuumed), add 'second' within the same second; "
          "manager.search_user_memories(limit=2, retrieval_method='last_n', user_id='ann')  "
          "# ['second', 'first']",
          "two or more memories of a user within one second, on PostgreSQL, after deletes "
          "(autovacuum) or with concurrent connections; SQLite returns rowid order and "
          "keeps them in order",
          documented="search_user_memories's docstring: 'last_n: Return the most recent "
                     "memories'; nothing says ties within a second are unordered",
          functions=("agno.memory.manager:MemoryManager._get_last_n_memories",
                     "agno.memory.manager:MemoryManager.add_user_memory",
                     "agno.db.postgres.postgres:PostgresDb.get_user_memories"),
          # Out of order (G5), the newest missing from a read its limit cut (G3, G1), and the
          # same after a cancelled call, whose settled state is read the same way (G10).
          match=(r"^G(?:5 order: |3 read your writes: (?:[^\n]*it reappears in read|an append "
                 r"after recovery is not the newest entry)|1 durability: [^\n]*does not return "
                 r"it, though it is newer than the oldest message it returns$|10 interruption: "
                 r"[^\n]*(?:G5 order: |G3 read your writes: an append after recovery is not "
                 r"the newest))",),
          racy=True, shows=r"out of order"),
)
