"""DatabaseSessionService on PostgreSQL refuses user ids over 128 characters.

ADK's database schema declares ``user_id`` (like ``app_name`` and the session id)
as ``String(DEFAULT_MAX_KEY_LENGTH)``, 128, and ``create_session`` does not check
the length, so a longer user id reaches PostgreSQL, which refuses it with the raw
driver error "value too long for type character varying(128)" (DBAPIError): that
user can never get a session. ``SqliteSessionService`` and
``InMemorySessionService`` accept the same id. Written against google-adk 2.13.0,
SQLAlchemy 2.1, asyncpg 0.30 on PostgreSQL 18.

Run::

    NOMNESIA_REPRO_POSTGRES=postgresql://postgres@127.0.0.1:5432/postgres \\
        python adk-database-user-id-128.py
"""
# needs: postgres

import asyncio
import os
import sys
import uuid
from importlib.metadata import version

import psycopg
from google.adk.sessions import DatabaseSessionService

DSN = os.environ["NOMNESIA_REPRO_POSTGRES"]


async def main(schema: str) -> int:
    async with DatabaseSessionService(
            "postgresql+asyncpg://" + DSN.split("://", 1)[1],
            connect_args={"server_settings": {"search_path": schema}}) as service:
        await service.create_session(app_name="repro", user_id="u" * 128, session_id="s")
        print("create_session with a 128-character user id: created")
        try:
            await service.create_session(app_name="repro", user_id="u" * 129, session_id="s")
        except Exception as exc:
            print(f"google-adk {version('google-adk')}: DatabaseSessionService.create_session "
                  f"with a 129-character user id raised {type(exc).__name__}: "
                  f"{str(exc).splitlines()[0]}")
            return 1
        print("not reproduced: a 129-character user id got a session")
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
