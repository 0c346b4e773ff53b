"""AsyncPostgresStore.from_conn_string keeps one connection for its whole life: once
PostgreSQL closes it (a restart, a failover, an idle timeout, a proxy reset), every
later call fails with "the connection is closed" until the store is rebuilt.

Without ``pool_config``, ``from_conn_string`` opens a single psycopg
``AsyncConnection`` and hands it to the store; psycopg never reopens a closed
connection, and the store never replaces it. The script ends the store's
server process with ``pg_terminate_backend()`` (what a restart does to every
client), then calls ``aget`` for 5 s. For comparison it does the same with
``pool_config={"min_size": 1, "max_size": 2}``: psycopg_pool discards the
broken connection and the store answers again after an error or two.
Written against langgraph-checkpoint-postgres 3.2.0 (psycopg 3.3, psycopg-pool
3.3) on PostgreSQL 18.

Run::

    NOMNESIA_REPRO_POSTGRES=postgresql://postgres@127.0.0.1:5432/postgres \\
        python langgraph-postgres-closed-connection-wedges.py
"""
# needs: postgres

import asyncio
import os
import sys
import time
import uuid
from importlib.metadata import version
from typing import Any
from urllib.parse import urlsplit

import psycopg
from langgraph.store.postgres import AsyncPostgresStore

DSN = os.environ["NOMNESIA_REPRO_POSTGRES"]
WAIT = 5.0


def terminate_clients(dsn: str) -> int:
    """End every other session of the script's database, as a server restart would."""
    with psycopg.connect(dsn, autocommit=True) as admin:
        row = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()").fetchone()
    return int(row[0]) if row else 0


async def recovers(dsn: str, **options: Any) -> tuple[bool, int, str]:
    """(answered again within WAIT seconds, failed calls before that, the last error)."""
    async with AsyncPostgresStore.from_conn_string(dsn, **options) as store:
        await store.setup()
        await store.aput(("memories", "ann"), "m1", {"content": "a note"})
        terminate_clients(dsn)
        failed, last = 0, ""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            try:
                await store.aget(("memories", "ann"), "m1")
                return True, failed, last
            except psycopg.OperationalError as exc:
                failed, last = failed + 1, str(exc).splitlines()[0]
                await asyncio.sleep(0.2)
        return False, failed, last


async def main(dsn: str) -> int:
    pooled, pooled_failed, _ = await recovers(dsn, pool_config={"min_size": 1, "max_size": 2})
    print(f"with pool_config: {'answered again' if pooled else 'still failing'} after "
          f"{pooled_failed} failed call(s)")
    single, failed, last = await recovers(dsn)
    if not single:
        print(f"langgraph-checkpoint-postgres {version('langgraph-checkpoint-postgres')}: "
              f"from_conn_string without pool_config: after pg_terminate_backend, aget "
              f"failed {failed} times in {WAIT:.0f} s and never answered again: "
              f"OperationalError: {last}")
        return 1
    print(f"not reproduced: the single-connection store answered again after {failed} "
          f"failed call(s)")
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
