"""DatabaseSessionService.get_session(num_recent_events=2**64) fails on PostgreSQL.

``DatabaseSessionService.get_session`` puts ``GetSessionConfig.num_recent_events``
into ``select(...).limit()`` unclamped (``GetSessionConfig`` checks only that it is
>= 0), so it is bound as the query's LIMIT, a PostgreSQL bigint: with asyncpg any
value of 2**63 or more raises DBAPIError ("value out of int64 range"); 2**63 - 1
works. Written against google-adk 2.13.0, SQLAlchemy 2.1, asyncpg 0.30 on
PostgreSQL 18.

Run::

    NOMNESIA_REPRO_POSTGRES=postgresql://postgres@127.0.0.1:5432/postgres \\
        python adk-database-num-recent-events-overflow.py
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
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types

DSN = os.environ["NOMNESIA_REPRO_POSTGRES"]


async def main(schema: str) -> int:
    async with DatabaseSessionService(
            "postgresql+asyncpg://" + DSN.split("://", 1)[1],
            connect_args={"server_settings": {"search_path": schema}}) as service:
        ids = {"app_name": "repro", "user_id": "u", "session_id": "s"}
        session = await service.create_session(**ids)
        await service.append_event(session, Event(author="user", content=types.Content(
            role="user", parts=[types.Part(text="hello")])))
        got = await service.get_session(**ids, config=GetSessionConfig(
            num_recent_events=2**63 - 1))
        print(f"get_session(num_recent_events=2**63 - 1): {len(got.events)} event(s)")
        try:
            got = await service.get_session(**ids, config=GetSessionConfig(
                num_recent_events=2**64))
        except Exception as exc:
            print(f"google-adk {version('google-adk')}: DatabaseSessionService.get_session("
                  f"num_recent_events=2**64) raised {type(exc).__name__}: "
                  f"{str(exc).splitlines()[0]}")
            return 1
        print(f"not reproduced: get_session(num_recent_events=2**64) returned "
              f"{len(got.events)} event(s)")
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
