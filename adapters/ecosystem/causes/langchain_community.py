"""Causes of the langchain-community audits: ``SQLChatMessageHistory`` (SQLite, PostgreSQL).

One of its own: in async mode the table is created on each history's first call, racily.
On PostgreSQL through asyncpg every judged guarantee
holds (its ``message`` column is ``text`` holding ``json.dumps`` output, so NUL
arrives escaped as ``\\u0000`` and is stored). On SQLite through aiosqlite the one
failure is a read cancelled mid-fetch that leaves a zombie connection holding its
read lock, a defect of SQLAlchemy's aiosqlite adapter and aiosqlite, not of this
class: it is the shared ``aiosqlite-cancel-leaves-lock`` (``llama_memory.py``),
whose audits are to include ``langchain-sql-sqlite``.
"""

from __future__ import annotations

from . import Cause

__all__ = ["CAUSES"]

_FN = "langchain_community.chat_message_histories.sql:SQLChatMessageHistory."

CAUSES: tuple[Cause, ...] = (
    Cause("langchain-sql-create-table-race", ("langchain-sql-sqlite", "langchain-sql-postgres"),
          ("G12",), "availability",
          "SQLChatMessageHistory._acreate_table_if_not_exists (langchain-community): "
          "metadata.create_all on each history's first async call, guarded only by that "
          "history's own _table_created flag",
          "a history is one session, so the first calls of several sessions sharing a table "
          "(an application's first users) each check for the table and create it: all but "
          "one fail with 'table ... already exists' (SQLite) or a unique violation on "
          "pg_type / 'relation ... already exists' (PostgreSQL), and the message they were "
          "asked to store is not stored",
          "hs = [SQLChatMessageHistory(u, table_name='t', connection=async_engine) for u in "
          "('a', 'b')]; await asyncio.gather(*(h.aadd_messages([m]) for h in hs))  "
          "# table t already exists",
          "two or more histories of one table make their first call at once, in async mode "
          "(an AsyncEngine as connection); SQLite and PostgreSQL",
          functions=(_FN + "_acreate_table_if_not_exists",),
          match=(r"^G12 errors: [^\n]*raised (?:OperationalError|IntegrityError|"
                 r"ProgrammingError): [^\n]*(?:already exists|pg_type_typname_nsp_index)",),
          racy=True, shows=r"raised OperationalError: .*already exists"),
)
