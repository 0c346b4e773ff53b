"""SQLAlchemySession.get_items(limit=2**64) fails on PostgreSQL instead of returning the history.

``SQLAlchemySession.get_items`` passes ``limit`` to ``select(...).limit()``
unclamped, so it is bound as the query's LIMIT parameter, a PostgreSQL bigint:
with asyncpg any limit of 2**63 or more raises DBAPIError ("value out of int64
range"); 2**63 - 1 works. Written against openai-agents 0.24.0, SQLAlchemy 2.1,
asyncpg 0.30 on PostgreSQL 18.

Run::

    NOMNESIA_REPRO_POSTGRES=postgresql://postgres@127.0.0.1:5432/postgres \\
        python agents-sqlalchemy-limit-overflow.py
"""
# needs: postgres

import asyncio
import os
import sys
import uuid
from importlib.metadata import version

from agents.extensions.memory import SQLAlchemySession
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

DSN = os.environ["NOMNESIA_REPRO_POSTGRES"]
URL = "postgresql+asyncpg://" + DSN.split("://", 1)[1]


async def main() -> int:
    engine = create_async_engine(URL)
    name = f"repro_{uuid.uuid4().hex[:12]}"
    session = SQLAlchemySession("repro", engine=engine, create_tables=True,
                                sessions_table=f"{name}_sessions",
                                messages_table=f"{name}_messages")
    try:
        await session.add_items([{"role": "user", "content": "hello"}])
        items = await session.get_items(limit=2**63 - 1)
        print(f"get_items(limit=2**63 - 1) returned {len(items)} item(s)")
        try:
            items = await session.get_items(limit=2**64)
        except Exception as exc:
            print(f"openai-agents {version('openai-agents')}: SQLAlchemySession.get_items("
                  f"limit=2**64) raised {type(exc).__name__}: {str(exc).splitlines()[0]}")
            return 1
        print(f"not reproduced: get_items(limit=2**64) returned {len(items)} item(s)")
        return 0
    finally:
        async with engine.begin() as conn:
            await conn.execute(text(f'DROP TABLE IF EXISTS "{name}_messages", '
                                    f'"{name}_sessions" CASCADE'))
        await engine.dispose()


sys.exit(asyncio.run(main()))
