"""PostgresChatMessageHistory cannot store a message whose content contains NUL (U+0000).

The message column is jsonb, and PostgreSQL's jsonb rejects \\u0000: aadd_messages
fails with psycopg's UntranslatableCharacter. PostgreSQL documents the jsonb rule;
langchain-postgres does not mention it. Written against langchain-postgres 0.0.19
on PostgreSQL 18.

Run::

    NOMNESIA_REPRO_POSTGRES=postgresql://postgres@127.0.0.1:5432/postgres \\
        python langchain-jsonb-nul.py
"""
# needs: postgres

import asyncio
import os
import sys
import uuid
from importlib.metadata import version
from urllib.parse import urlsplit

import psycopg
from langchain_core.messages import HumanMessage
from langchain_postgres import PostgresChatMessageHistory

DSN = os.environ["NOMNESIA_REPRO_POSTGRES"]


async def main(dsn: str) -> int:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        await PostgresChatMessageHistory.acreate_tables(conn, "chat_history")
        history = PostgresChatMessageHistory("chat_history", str(uuid.uuid4()),
                                             async_connection=conn)
        try:
            await history.aadd_messages([HumanMessage("a\x00b")])
        except Exception as exc:
            print(f"langchain-postgres {version('langchain-postgres')}: aadd_messages with "
                  f"content 'a\\x00b' raised {type(exc).__name__}: {exc}")
            return 1
        print(f"not reproduced: stored {await history.aget_messages()!r}")
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
