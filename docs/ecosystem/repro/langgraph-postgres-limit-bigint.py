"""AsyncPostgresStore.asearch with a query overflows PostgreSQL's bigint below limit=2**63.

``BasePostgresStore._prepare_batch_search_queries`` over-fetches for a vector
search: its inner LIMIT is ``limit * vectors_per_doc * 2 + 1`` (vectors_per_doc
is the number of indexed fields), so a search fails with NumericValueOutOfRange
from about 2**62 / fields, and a plain listing (no query) only from 2**63.
Written against langgraph-checkpoint-postgres 3.2.0 on PostgreSQL 18 + pgvector.

Run::

    NOMNESIA_REPRO_POSTGRES=postgresql://postgres@127.0.0.1:5432/postgres \\
        python langgraph-postgres-limit-bigint.py
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


def embed(texts: list[str]) -> list[list[float]]:
    """A deterministic offline embedding: the search path is what matters, not the scores."""
    return [[float(len(t) % 7), 1.0, 0.5, 0.25] for t in texts]


async def main(dsn: str) -> int:
    index = {"dims": 4, "embed": embed, "fields": ["content"]}
    async with AsyncPostgresStore.from_conn_string(dsn, index=index) as store:
        await store.setup()
        await store.aput(("memories", "ann"), "m1", {"content": "a note"})
        limit = 2**62  # below bigint's 2**63 - 1; the inner LIMIT is limit * 1 * 2 + 1
        listed = await store.asearch(("memories", "ann"), limit=limit)
        print(f"asearch(limit=2**62) without a query: {len(listed)} item(s)")
        try:
            await store.asearch(("memories", "ann"), query="note", limit=limit)
        except Exception as exc:
            print(f"langgraph-checkpoint-postgres {version('langgraph-checkpoint-postgres')}: "
                  f"asearch(query='note', limit=2**62) with 1 indexed field raised "
                  f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
            return 1
    print("not reproduced: asearch(query=..., limit=2**62) answered")
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
