"""Causes of the langchain-community audits: ``SQLChatMessageHistory`` (SQLite, PostgreSQL).

None of its own so far. On PostgreSQL through asyncpg every judged guarantee
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

CAUSES: tuple[Cause, ...] = ()
