"""AsyncPostgresStore cannot store a value whose text contains NUL (U+0000).

The value column is jsonb, and PostgreSQL's jsonb rejects \\u0000: the put fails
with psycopg's UntranslatableCharacter. PostgreSQL documents the jsonb rule;
LangGraph's docs do not mention it. Written against langgraph-checkpoint-postgres
3.2.0 on PostgreSQL 18.

Run::

    NOMNESIA_REPRO_POSTGRES=postgresql://postgres@127.0.0.1:5432/postgres \\
        python langgraph-postgres-jsonb-nul.py
"""
# needs: postgres

import asyncio
import os
import sys
import uuid
from importlib.metadata import version
from urllib.parse import urlsplit

import psycopg
from langgraph.store.postgres import AsyncPostgresStore

DSN = os.environ["NOMNESIA_REPRO_POSTGRES"]


async def main(dsn: str) -> int:
    async with AsyncPostgresStore.from_conn_string(dsn) as store:
        await store.setup()
        try:
            await store.aput(("memories", "ann"), "m1", {"content": "a\x00b"})
        except Exception as exc:
            print(f"langgraph-checkpoint-postgres {version('langgraph-checkpoint-postgres')}: "
                  f"aput with content 'a\\x00b' raised {type(exc).__name__}: {exc}")
            return 1
        item = await store.aget(("memories", "ann"), "m1")
    print(f"not reproduced: stored and read back {item.value if item else None!r}")
    return 0


database = f"repro_{uuid.uuid4().hex[:12]}"
with psycopg.connect(DSN, autocommit=True) as admin:
    admin.execute(f'CREATE DATABASE "{database}"')
try:
    code = asyncio.run(main(urlsplit(DSN)._replace(path=f"/{database}").geturl()))
finally:
    with psycopg.connect(DSN, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{database}" WITH (FORCE)')
sys.exit(code)
