"""Causes of the openai-agents audits: the Agents SDK's ``Session`` implementations."""

from __future__ import annotations

from . import Cause

__all__ = ["CAUSES"]

SQLITE = ("agents-sqlite-memory", "agents-sqlite-file")

CAUSES: tuple[Cause, ...] = (
    Cause("agents-sqlite-limit-overflow", SQLITE, ("Inputs",), "availability",
          "SQLiteSession.get_items (openai-agents) binds the limit as the SQL LIMIT "
          "parameter, unclamped",
          "get_items(limit=n) with n >= 2**63 raises OverflowError ('Python int too large to "
          "convert to SQLite INTEGER') from the sqlite3 module, instead of returning the whole "
          "history: the limit goes to SQLite's 64-bit integer as given (resolve_session_limit "
          "passes an explicit limit through unchanged)",
          "await SQLiteSession('u').get_items(limit=2**64)  # OverflowError",
          "a limit of 2**63 or more (2**63 - 1 works); in-memory and file databases alike",
          functions=("agents.memory.sqlite_session:SQLiteSession.get_items",),
          match=(r"raised OverflowError: Python int too large to convert to SQLite INTEGER",),
          shows=r"OverflowError"),
    Cause("agents-sqlalchemy-limit-overflow", ("agents-sqlalchemy-postgres",), ("Inputs",),
          "availability",
          "SQLAlchemySession.get_items (openai-agents) puts the limit into select().limit() "
          "unclamped",
          "get_items(limit=n) with n >= 2**63 fails with DBAPIError (asyncpg: 'invalid input "
          "for query argument $2: ... (value out of int64 range)') instead of returning the "
          "whole history: the limit is bound as PostgreSQL's bigint LIMIT as given",
          "await SQLAlchemySession.from_url('u', url=pg, create_tables=True)"
          ".get_items(limit=2**64)  # DBAPIError",
          "a limit of 2**63 or more (2**63 - 1 works); PostgreSQL through asyncpg",
          functions=("agents.extensions.memory.sqlalchemy_session:SQLAlchemySession.get_items",),
          match=(r"raised DBAPIError: [^\n]*value out of int64 range",),
          shows=r"value out of int64 range|out of range"),
    Cause("agents-redis-limit-overflow", ("agents-redis",), ("Inputs",), "availability",
          "RedisSession.get_items (openai-agents) reads LRANGE key -limit -1 with the limit "
          "unclamped",
          "get_items(limit=n) with n > 2**63 fails with Redis's ResponseError 'value is not an "
          "integer or out of range' instead of returning the whole history: -limit is sent as "
          "LRANGE's start index, which Redis parses as a signed 64-bit integer",
          "await RedisSession.from_url('u', url=redis_url).get_items(limit=2**64)  "
          "# ResponseError",
          "a limit above 2**63 (2**63 - 1 and 2**63 work: -2**63 is still an int64)",
          functions=("agents.extensions.memory.redis_session:RedisSession.get_items",),
          match=(r"raised ResponseError: value is not an integer or out of range",),
          shows=r"value is not an integer or out of range"),
)
