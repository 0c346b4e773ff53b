"""Causes of the adk audits: Google ADK's session services."""

from __future__ import annotations

from . import Cause

__all__ = ["CAUSES"]

PG = ("adk-database-postgres",)

CAUSES: tuple[Cause, ...] = (
    Cause("adk-sqlite-num-recent-events-overflow", ("adk-sqlite",), ("Inputs",),
          "availability",
          "SqliteSessionService.get_session (google-adk) appends 'LIMIT ?' with "
          "GetSessionConfig.num_recent_events as its parameter, unclamped",
          "get_session(..., config=GetSessionConfig(num_recent_events=n)) with n >= 2**63 "
          "raises OverflowError ('Python int too large to convert to SQLite INTEGER') instead "
          "of returning the session with all its events; GetSessionConfig checks only that "
          "num_recent_events >= 0",
          "await SqliteSessionService(path).get_session(app_name='a', user_id='u', "
          "session_id='s', config=GetSessionConfig(num_recent_events=2**64))  # OverflowError",
          "num_recent_events of 2**63 or more (2**63 - 1 works); the session exists",
          functions=("google.adk.sessions.sqlite_session_service:SqliteSessionService."
                     "get_session",),
          match=(r"raised OverflowError: Python int too large to convert to SQLite INTEGER",),
          shows=r"OverflowError"),
    Cause("adk-database-num-recent-events-overflow", PG, ("Inputs",), "availability",
          "DatabaseSessionService.get_session (google-adk) puts "
          "GetSessionConfig.num_recent_events into select().limit() unclamped",
          "get_session(..., config=GetSessionConfig(num_recent_events=n)) with n >= 2**63 "
          "fails with DBAPIError (asyncpg: 'invalid input for query argument ... (value out of "
          "int64 range)') instead of returning the session with all its events: the value is "
          "bound as PostgreSQL's bigint LIMIT as given",
          "await DatabaseSessionService(pg_url).get_session(app_name='a', user_id='u', "
          "session_id='s', config=GetSessionConfig(num_recent_events=2**64))  # DBAPIError",
          "num_recent_events of 2**63 or more (2**63 - 1 works); the session exists; "
          "PostgreSQL through asyncpg",
          functions=("google.adk.sessions.database_session_service:DatabaseSessionService."
                     "get_session",),
          match=(r"raised DBAPIError: [^\n]*value out of int64 range",),
          shows=r"value out of int64 range|out of range"),
    Cause("adk-database-user-id-128", PG, ("Inputs",), "availability",
          "the DatabaseSessionService schema (google-adk): StorageSession, StorageEvent and "
          "StorageUserState declare user_id (and app_name, session id) as "
          "String(DEFAULT_MAX_KEY_LENGTH), DEFAULT_MAX_KEY_LENGTH = 128; "
          "DatabaseSessionService.create_session does not check the length",
          "a user id longer than 128 characters is refused by the database, as the raw "
          "driver error 'value too long for type character varying(128)' (DBAPIError) from "
          "create_session, so such a user can never get a session; the transaction is rolled "
          "back, nothing is written. SqliteSessionService, InMemorySessionService and SQLite "
          "under DatabaseSessionService (which ignores VARCHAR lengths) accept the same id",
          "await DatabaseSessionService(pg_url).create_session(app_name='a', "
          "user_id='u' * 129, session_id='s')  # DBAPIError: value too long",
          "user_id (or app_name, session_id) over 128 characters, on a database that enforces "
          "VARCHAR lengths (PostgreSQL, MySQL)",
          functions=("google.adk.sessions.schemas.v1:StorageSession",
                     "google.adk.sessions.schemas.v1:StorageUserState",
                     "google.adk.sessions.database_session_service:DatabaseSessionService."
                     "create_session"),
          match=(r"raised DBAPIError: [^\n]*value too long for type character varying\(128\)",),
          shows=r"value too long for type character varying\(128\)"),
    Cause("adk-database-jsonb-nul", PG, ("Inputs", "G1"), "availability",
          "DynamicJSON.load_dialect_impl (google-adk) stores JSON columns as JSONB on "
          "PostgreSQL; StorageEvent.from_event puts the whole event (event_data) there",
          "an event whose text contains U+0000 is refused: PostgreSQL's jsonb cannot hold "
          "\\u0000, so append_event fails with DBAPIError 'unsupported Unicode escape "
          "sequence' and the message is not stored; SqliteSessionService and "
          "InMemorySessionService keep it",
          "await service.append_event(session, Event(author='user', content=types.Content("
          "role='user', parts=[types.Part(text='a\\x00b')])))  # DBAPIError",
          "text (or any string in the event or a state delta) containing U+0000, on "
          "PostgreSQL",
          documented="PostgreSQL's manual (JSON types: jsonb rejects \\u0000); not in ADK's",
          functions=("google.adk.sessions.schemas.shared:DynamicJSON.load_dialect_impl",
                     "google.adk.sessions.schemas.v1:StorageEvent.from_event"),
          match=(r"raised DBAPIError: [^\n]*unsupported Unicode escape sequence",),
          shows=r"unsupported Unicode escape sequence"),
)
