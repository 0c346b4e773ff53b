"""DatabaseSessionService on PostgreSQL cannot store an event whose text contains NUL.

ADK's ``DynamicJSON`` column type is JSONB on PostgreSQL, and ``StorageEvent``
keeps the whole event there (``event_data``); PostgreSQL's jsonb cannot hold
``\\u0000``, so ``append_event`` fails with DBAPIError ("unsupported Unicode escape
sequence") and the message is not stored. ``SqliteSessionService`` and
``InMemorySessionService`` keep it. Written against google-adk 2.13.0,
SQLAlchemy 2.1, asyncpg 0.30 on PostgreSQL 18.

Run::

    NOMNESIA_REPRO_POSTGRES=postgresql://postgres@127.0.0.1:5432/postgres \\
        python adk-database-jsonb-nul.py
"""
# needs: postgres

import asyncio
import os
import sys
import uuid
from importlib.metadata import version

import psycopg
from google.adk.events import Event
from google.adk.sessions import DatabaseSessionService
from google.genai import types

DSN = os.environ["NOMNESIA_REPRO_POSTGRES"]


def event(text: str) -> Event:
    return Event(author="user", content=types.Content(role="user",
                                                      parts=[types.Part(text=text)]))


async def main(schema: str) -> int:
    async with DatabaseSessionService(
            "postgresql+asyncpg://" + DSN.split("://", 1)[1],
            connect_args={"server_settings": {"search_path": schema}}) as service:
        ids = {"app_name": "repro", "user_id": "u", "session_id": "s"}
        session = await service.create_session(**ids)
        await service.append_event(session, event("ab"))
        try:
            await service.append_event(session, event("a\x00b"))
        except Exception as exc:
            stored = await service.get_session(**ids)
            print(f"google-adk {version('google-adk')}: append_event with text 'a\\x00b' "
                  f"raised {type(exc).__name__}: {str(exc).splitlines()[0]}; the session "
                  f"holds {len(stored.events)} event(s)")
            return 1
        stored = await service.get_session(**ids)
        texts = [e.content.parts[0].text for e in stored.events]
        print(f"not reproduced: append_event stored the NUL text: {texts!r}")
        return 0


schema = f"repro_{uuid.uuid4().hex[:12]}"
with psycopg.connect(DSN, autocommit=True) as admin:
    admin.execute(f'CREATE SCHEMA "{schema}"')
try:
    code = asyncio.run(main(schema))
finally:
    with psycopg.connect(DSN, autocommit=True) as admin:
        admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
sys.exit(code)
