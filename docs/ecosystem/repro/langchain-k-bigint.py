"""PGVectorStore.asimilarity_search(k=2**63) overflows PostgreSQL's bigint.

k goes into the query's ``LIMIT :dense_limit`` unchecked
(``AsyncPGVectorStore.__query_collection``), so k >= 2**63 raises DataError
(NumericValueOutOfRange) instead of returning every match.
Written against langchain-postgres 0.0.19 on PostgreSQL 18 + pgvector.

Run::

    NOMNESIA_REPRO_POSTGRES=postgresql://postgres@127.0.0.1:5432/postgres \\
        python langchain-k-bigint.py
"""
# needs: postgres

import asyncio
import os
import sys
import uuid
from importlib.metadata import version
from urllib.parse import urlsplit

import psycopg
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_postgres import PGEngine, PGVectorStore

DSN = os.environ["NOMNESIA_REPRO_POSTGRES"]


async def main(dsn: str) -> int:
    engine = PGEngine.from_connection_string(dsn.replace("postgresql://", "postgresql+psycopg://"))
    try:
        await engine.ainit_vectorstore_table("notes", 8)
        store = await PGVectorStore.create(engine, DeterministicFakeEmbedding(size=8), "notes")
        await store.aadd_texts(["a note"])
        print(f"k=2**63-1: {len(await store.asimilarity_search('note', k=2**63 - 1))} result(s)")
        try:
            await store.asimilarity_search("note", k=2**63)
        except Exception as exc:
            print(f"langchain-postgres {version('langchain-postgres')}: "
                  f"asimilarity_search(k=2**63) raised {type(exc).__name__}: "
                  f"{str(exc).splitlines()[0]}")
            return 1
    finally:
        await engine.close()
    print("not reproduced: k=2**63 answered")
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
