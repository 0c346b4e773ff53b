"""A failed aadd_messages leaves the caller's connection in an aborted transaction.

PostgresChatMessageHistory.aadd_messages runs executemany, then commit, with no
rollback on error. On a connection with autocommit off (psycopg's default, and
what ``psycopg.AsyncConnection.connect(dsn)`` gives), one failed insert (here: a
NUL in the content, refused by jsonb) makes every later call of every history on
that connection fail with InFailedSqlTransaction until the caller rolls back.
With autocommit=True nothing stays aborted; this script shows both.
Written against langchain-postgres 0.0.19 on PostgreSQL 18.

Run::

    NOMNESIA_REPRO_POSTGRES=postgresql://postgres@127.0.0.1:5432/postgres \\
        python langchain-no-rollback.py
"""
# needs: postgres

import asyncio
import contextlib
import os
import sys
import uuid
from importlib.metadata import version
from urllib.parse import urlsplit

import psycopg
from langchain_core.messages import HumanMessage
from langchain_postgres import PostgresChatMessageHistory

DSN = os.environ["NOMNESIA_REPRO_POSTGRES"]


async def after_a_failed_insert(dsn: str, autocommit: bool) -> str | None:
    """The error a healthy call raises after a failed insert on the same connection."""
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=autocommit) as conn:
        if not autocommit:
            await PostgresChatMessageHistory.acreate_tables(conn, "chat_history")
            await conn.commit()
        failing = PostgresChatMessageHistory("chat_history", str(uuid.uuid4()),
                                             async_connection=conn)
        healthy = PostgresChatMessageHistory("chat_history", str(uuid.uuid4()),
                                             async_connection=conn)
        with contextlib.suppress(psycopg.Error):  # the refusal is langchain-jsonb-nul.py's
            await failing.aadd_messages([HumanMessage("a\x00b")])
        try:
            await healthy.aadd_messages([HumanMessage("hello")])
        except psycopg.Error as exc:
            return f"{type(exc).__name__}: {exc}"
    return None


async def main(dsn: str) -> int:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        await PostgresChatMessageHistory.acreate_tables(conn, "chat_history")
    with_autocommit = await after_a_failed_insert(dsn, autocommit=True)
    print(f"autocommit=True: the next aadd_messages on another session "
          f"{'raised ' + with_autocommit if with_autocommit else 'succeeded'}")
    without = await after_a_failed_insert(dsn, autocommit=False)
    if without:
        print(f"langchain-postgres {version('langchain-postgres')}, autocommit=False "
              f"(psycopg's default): the next aadd_messages on another session raised {without}")
        return 1
    print("not reproduced: autocommit=False, the next aadd_messages succeeded")
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
