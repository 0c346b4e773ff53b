"""AsyncPostgresSaver.from_conn_string keeps one connection for its whole life: once
PostgreSQL closes it (a restart, a failover, an idle timeout, a proxy reset), every later
call fails with "the connection is closed" until the saver is rebuilt.

``from_conn_string`` opens a single psycopg ``AsyncConnection`` (autocommit) and hands it to
the saver; psycopg never reopens a closed connection and the saver never replaces it. The
script writes a thread through a compiled graph, ends the saver's server process with
``pg_terminate_backend()`` (what a restart does to every client), then reads the thread for
5 s. For comparison it does the same with the saver on a psycopg_pool
``AsyncConnectionPool``, which discards the broken connection. Known upstream:
langchain-ai/langgraph issue 7304 (open). Written against langgraph-checkpoint-postgres
3.2.0 (psycopg 3.3, psycopg-pool 3.3).

Run::

    NOMNESIA_REPRO_POSTGRES=postgresql://postgres@127.0.0.1:5432/postgres \\
        python langgraph-checkpoint-postgres-closed-connection-wedges.py
"""
# needs: postgres

import asyncio
import os
import sys
import time
import uuid
from contextlib import asynccontextmanager
from importlib.metadata import version

import psycopg
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

DSN = os.environ["NOMNESIA_REPRO_POSTGRES"]
WAIT = 5.0


def terminate_clients() -> int:
    with psycopg.connect(DSN, autocommit=True) as admin:
        row = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()").fetchone()
    return int(row[0]) if row else 0


@asynccontextmanager
async def on_a_pool():
    settings = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    async with AsyncConnectionPool(DSN, min_size=1, max_size=2, kwargs=settings,
                                   open=False) as pool:
        yield AsyncPostgresSaver(pool)


async def recovers(opener) -> tuple[bool, int, str]:
    async with opener() as saver:
        await saver.setup()
        builder = StateGraph(MessagesState)
        builder.add_node("record", lambda state: {})
        builder.add_edge(START, "record")
        builder.add_edge("record", END)
        graph = builder.compile(checkpointer=saver)
        config = {"configurable": {"thread_id": f"ann-{uuid.uuid4().hex[:8]}"}}
        await graph.ainvoke({"messages": [HumanMessage("a note", id="m1")]}, config)
        terminate_clients()
        failed, last = 0, ""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            try:
                await graph.aget_state(config)
                return True, failed, last
            except psycopg.OperationalError as exc:
                failed, last = failed + 1, str(exc).splitlines()[0]
            await asyncio.sleep(0.1)
        return False, failed, last


async def main() -> int:
    print(f"langgraph-checkpoint-postgres {version('langgraph-checkpoint-postgres')}, "
          f"psycopg {version('psycopg')}")
    single = await recovers(lambda: AsyncPostgresSaver.from_conn_string(DSN))
    pooled = await recovers(on_a_pool)
    print(f"from_conn_string: answered again within {WAIT:g}s: {single[0]} "
          f"({single[1]} failed reads, last: {single[2]!r})")
    print(f"on a pool:        answered again within {WAIT:g}s: {pooled[0]} "
          f"({pooled[1]} failed reads)")
    if not single[0] and pooled[0]:
        print("REPRODUCED: from_conn_string's saver never answers again after its "
              "connection was closed")
        return 1
    return 0


sys.exit(asyncio.run(main()))
