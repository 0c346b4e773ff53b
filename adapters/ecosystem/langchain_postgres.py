"""langchain-postgres: ``PostgresChatMessageHistory`` (history) + ``PGVectorStore`` (search).

The library's behaviour (what the audit measures):

- ``PostgresChatMessageHistory`` keeps one row per message (``message JSONB``)
  for a ``session_id`` that must be a UUID; ``aadd_messages`` inserts and
  commits, ``aget_messages`` reads in insertion order, ``aclear`` deletes the
  session and commits. There is no way to replace or delete one message: the
  only rewrite is ``aclear()`` followed by ``aadd_messages()``, two commits;
- the ``JSONB`` column refuses ``\\u0000`` (PostgreSQL's ``jsonb`` input);
- ``PGVectorStore.aadd_texts``/``asimilarity_search(filter=...)``/``adelete``
  on a table made by ``PGEngine.ainit_vectorstore_table``, with ``user_id``
  and ``seq`` as metadata columns; the embeddings are langchain-core's own
  ``DeterministicFakeEmbedding`` (a text's vector is seeded by its hash).

The adapter's mapping (not the library's): the session id is
``uuid5(user_id)`` (the library wants a UUID); an entry's id, ``seq`` and
``covers`` ride in the message (``id`` and ``additional_kwargs``); role
``user``/``assistant``/``system``/``tool`` map to Human/AI/System/Tool
messages, a summary is a ``SystemMessage`` marked ``summary``; an idempotent
retry scans the session's messages; a row's id in the vector table is
``uuid5(user_id, entry id)``, since message ids are unique per user only;
``compact`` rewrites the session with ``aclear()`` +
``aadd_messages(summary, kept)`` (the only rewrite the library has) and
then updates the vector table; ``consistent_state`` compares the ids of the
session with the ids of the user's rows in the vector table. Every
store gets its own two tables in one shared database.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from importlib.metadata import version
from typing import Any

import psycopg
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_postgres import PGEngine, PGVectorStore, PostgresChatMessageHistory
from langchain_postgres.v2.engine import Column
from psycopg import sql

from nomnesia.suite.contract import ConsistencyReport, Difference, Entry

from . import _engines
from ._common import (
    DIM,
    ChatPlusVectors,
    check_query,
    clamp,
    entry,
    vector_id,
)

__all__ = ["LangchainPostgresStore", "factory"]

LIBRARY = f"langchain-postgres {version('langchain-postgres')}"
_SESSIONS = uuid.UUID("5b2c7a52-9a8e-4d55-9bd0-0d3d1f6c7e01")


def session_id(user_id: str) -> str:
    """The UUID session of a user: the library accepts nothing else."""
    return str(uuid.uuid5(_SESSIONS, user_id))


def _message(e: Entry) -> BaseMessage:
    extra = {"seq": e.seq, "covers": list(e.covers), "summary": e.role == "summary"}
    if e.role == "user":
        return HumanMessage(content=e.content, id=e.id, additional_kwargs=extra)
    if e.role == "assistant":
        return AIMessage(content=e.content, id=e.id, additional_kwargs=extra)
    if e.role == "tool":
        return ToolMessage(content=e.content, id=e.id, tool_call_id=e.id, additional_kwargs=extra)
    return SystemMessage(content=e.content, id=e.id, additional_kwargs=extra)


_ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


def _entry(user_id: str, m: BaseMessage) -> Entry:
    extra = m.additional_kwargs
    role = "summary" if extra.get("summary") else _ROLES.get(m.type, m.type)
    return entry(str(m.id), user_id, int(extra.get("seq", 0)), role, str(m.content),
                 tuple(extra.get("covers") or ()))


class LangchainPostgresStore(ChatPlusVectors):
    """The contract over a chat history table and a PGVectorStore; see the module docstring."""

    library = LIBRARY
    backends = ("PostgresChatMessageHistory", "PGVectorStore")

    def __init__(self, conn: psycopg.AsyncConnection[Any], vectors: PGVectorStore, *,
                 history_table: str, vector_table: str, keep_last: int = 4) -> None:
        super().__init__(keep_last=keep_last)
        self.conn, self.vectors = conn, vectors
        self.history_table, self.vector_table = history_table, vector_table

    def _history(self, user_id: str) -> PostgresChatMessageHistory:
        return PostgresChatMessageHistory(self.history_table, session_id(user_id),
                                          async_connection=self.conn)

    async def _entries(self, user_id: str) -> list[Entry]:
        return [_entry(user_id, m) for m in await self._history(user_id).aget_messages()]

    async def _index(self, e: Entry) -> None:
        await self.vectors.aadd_texts([e.content], ids=[vector_id(e.user_id, e.id)], metadatas=[
            {"user_id": e.user_id, "entry_id": e.id, "seq": e.seq, "role": e.role,
             "covers": list(e.covers)}])

    async def _record(self, e: Entry) -> None:
        await self._history(e.user_id).aadd_messages([_message(e)])

    async def search(self, user_id: str, query: str, k: int = 5) -> list[Entry]:
        query, k = check_query(query), clamp("k", k)
        docs = await self.vectors.asimilarity_search(query, k=k, filter={"user_id": user_id})
        return [self._from_doc(d) for d in docs]

    @staticmethod
    def _from_doc(d: Document) -> Entry:
        meta = d.metadata
        return entry(str(meta.get("entry_id", d.id)), str(meta.get("user_id", "")),
                     int(meta.get("seq", 0)),
                     str(meta.get("role", "")), d.page_content, tuple(meta.get("covers") or ()))

    async def _replace(self, user_id: str, entries: Sequence[Entry]) -> None:
        history = self._history(user_id)
        await history.aclear()
        await history.aadd_messages([_message(e) for e in entries])

    async def _unindex(self, user_id: str, entry_ids: Sequence[str]) -> None:
        await self.vectors.adelete(ids=[vector_id(user_id, i) for i in entry_ids])

    async def forget(self, user_id: str) -> None:
        await self._history(user_id).aclear()
        await self.vectors.adelete(filter={"user_id": user_id})

    async def consistent_state(self, user_id: str) -> ConsistencyReport:
        await super().consistent_state(user_id)  # validates the id
        history = {vector_id(user_id, e.id): e.id for e in await self._entries(user_id)}
        async with self.conn.cursor() as cur:
            await cur.execute(sql.SQL("SELECT langchain_id FROM {} WHERE user_id = %s").format(
                sql.Identifier(self.vector_table)), (user_id,))
            indexed = {str(row[0]) for row in await cur.fetchall()}
        await self.conn.commit()
        return ConsistencyReport.of(user_id, [
            *(Difference("PGVectorStore", "missing", history[i])
              for i in sorted(history.keys() - indexed)),
            *(Difference("PGVectorStore", "extra", i) for i in sorted(indexed - history.keys())),
        ], self.backends)


@asynccontextmanager
async def factory() -> AsyncIterator[LangchainPostgresStore]:
    """``--store nomnesia.adapters.ecosystem.langchain_postgres:factory``: fresh tables."""
    dsn = _engines.url("postgres")
    history_table, vector_table = _engines.namespace("lc_history"), _engines.namespace("lc_vec")
    conn = await psycopg.AsyncConnection.connect(dsn)
    engine = PGEngine.from_connection_string(dsn.replace("postgresql://", "postgresql+psycopg://"))
    try:
        await PostgresChatMessageHistory.acreate_tables(conn, history_table)
        await engine.ainit_vectorstore_table(
            vector_table, DIM, id_column=Column("langchain_id", "TEXT"),
            metadata_columns=[Column("user_id", "TEXT"), Column("seq", "BIGINT"),
                              Column("role", "TEXT")])
        vectors = await PGVectorStore.create(
            engine, DeterministicFakeEmbedding(size=DIM), vector_table,
            metadata_columns=["user_id", "seq", "role"])
        yield LangchainPostgresStore(conn, vectors, history_table=history_table,
                                     vector_table=vector_table)
    finally:
        try:
            await conn.rollback()  # a failed aadd_messages leaves the transaction aborted
            async with conn.cursor() as cur:
                for table in (history_table, vector_table):
                    await cur.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(
                        sql.Identifier(table)))
            await conn.commit()
        finally:
            await conn.close()
            await engine.close()
