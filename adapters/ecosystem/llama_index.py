"""llama-index chat stores (Redis, Postgres) with a ``VectorStoreIndex``, as a contract store.

The library's behaviour (what the audit measures):

- ``RedisChatStore``: a user's chat is one Redis list at its key;
  ``async_add_message`` is ``RPUSH``, ``aget_messages`` is ``LRANGE``,
  ``aset_messages`` is ``DELETE`` followed by ``RPUSH`` (two commands, no
  transaction), ``adelete_messages`` is ``DELETE``;
- ``PostgresChatStore``: a user's chat is one row holding an array of JSON
  messages; ``async_add_message`` appends with ``array_cat`` in an upsert,
  ``aset_messages`` overwrites the whole array, ``adelete_messages`` deletes
  the row; the key column is ``VARCHAR`` and the values ``JSON``;
- ``ChatMessage`` (pydantic) carries ``role``, content blocks and
  ``additional_kwargs``; messages are serialised with ``model_dump_json``;
- ``VectorStoreIndex`` over llama-index's default ``SimpleVectorStore`` (in
  the process), with ``ainsert_nodes``, ``adelete_nodes`` and a retriever with
  ``MetadataFilters`` on ``user_id``.

The adapter's mapping (not the library's): the chat key is the user id
(behind a per-store prefix for Redis, a per-store table for Postgres); an
entry's id, ``seq`` and ``covers`` ride in ``additional_kwargs``; a summary is
a ``system`` message marked ``summary``; nodes exclude their metadata from the
embedding (``excluded_embed_metadata_keys``), so a text's vector is its own;
an idempotent retry scans the chat; a node's id is ``uuid5(user_id, entry
id)``, since message ids are unique per user only; ``compact`` rewrites the chat with
``aset_messages([summary, *kept])`` then updates the index; ``forget`` deletes
the chat and the user's nodes; ``consistent_state`` compares the chat's ids
with the index's nodes for the user. The embedder is the project's
deterministic hashing embedder behind llama-index's ``BaseEmbedding``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from importlib.metadata import version
from typing import Any

from llama_index.core import VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.schema import TextNode
from llama_index.core.storage.chat_store.base import BaseChatStore
from llama_index.core.vector_stores import ExactMatchFilter, MetadataFilters

from nomnesia.suite.contract import ConsistencyReport, Difference, Entry

from . import _engines
from ._common import (
    ChatPlusVectors,
    check_query,
    clamp,
    embedder,
    entry,
    vector_id,
)

__all__ = ["HashingLlamaEmbedding", "LlamaIndexStore", "postgres_factory", "redis_factory"]

_META_KEYS = ["user_id", "entry_id", "seq", "role", "covers"]


class HashingLlamaEmbedding(BaseEmbedding):  # type: ignore[misc,unused-ignore]
    """llama-index's embedding interface over the project's deterministic hashing embedder."""

    def _get_query_embedding(self, query: str) -> list[float]:
        return embedder().embed_one(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return embedder().embed_one(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return embedder().embed_one(text)


def _message(e: Entry) -> ChatMessage:
    role = MessageRole.SYSTEM if e.role == "summary" else MessageRole(e.role)
    return ChatMessage(role=role, content=e.content, additional_kwargs={
        "id": e.id, "seq": e.seq, "covers": list(e.covers), "summary": e.role == "summary"})


def _entry(user_id: str, m: ChatMessage) -> Entry:
    extra = m.additional_kwargs
    role = "summary" if extra.get("summary") else str(m.role.value)
    return entry(str(extra.get("id", "")), user_id, int(extra.get("seq", 0)), role,
                 m.content or "", tuple(extra.get("covers") or ()))


class LlamaIndexStore(ChatPlusVectors):
    """The contract over one llama-index chat store and one vector index."""

    def __init__(self, chats: BaseChatStore, *, key_prefix: str, library: str,
                 backends: tuple[str, ...], keep_last: int = 4) -> None:
        super().__init__(keep_last=keep_last)
        self.chats, self.key_prefix = chats, key_prefix
        self.library, self.backends = library, backends
        self.index = VectorStoreIndex(nodes=[], embed_model=HashingLlamaEmbedding())

    def _key(self, user_id: str) -> str:
        return self.key_prefix + user_id

    async def _entries(self, user_id: str) -> list[Entry]:
        return [_entry(user_id, m) for m in await self.chats.aget_messages(self._key(user_id))]

    async def _index(self, e: Entry) -> None:
        await self.index.ainsert_nodes([TextNode(
            id_=vector_id(e.user_id, e.id), text=e.content, excluded_embed_metadata_keys=_META_KEYS,
            excluded_llm_metadata_keys=_META_KEYS,
            metadata={"user_id": e.user_id, "entry_id": e.id, "seq": e.seq, "role": e.role,
                      "covers": ",".join(e.covers)})])

    async def _record(self, e: Entry) -> None:
        await self.chats.async_add_message(self._key(e.user_id), _message(e))

    async def search(self, user_id: str, query: str, k: int = 5) -> list[Entry]:
        query, k = check_query(query), clamp("k", k)
        retriever = self.index.as_retriever(similarity_top_k=k, filters=MetadataFilters(
            filters=[ExactMatchFilter(key="user_id", value=user_id)]))
        found = await retriever.aretrieve(query)
        out = []
        for hit in found:
            meta = hit.node.metadata
            covers = tuple(c for c in str(meta.get("covers", "")).split(",") if c)
            out.append(entry(str(meta.get("entry_id", "")), str(meta.get("user_id", "")),
                             int(meta.get("seq", 0)), str(meta.get("role", "")),
                             hit.node.get_content(), covers))
        return out

    async def _replace(self, user_id: str, entries: Sequence[Entry]) -> None:
        await self.chats.aset_messages(self._key(user_id), [_message(e) for e in entries])

    async def _unindex(self, user_id: str, entry_ids: Sequence[str]) -> None:
        await self.index.adelete_nodes([vector_id(user_id, i) for i in entry_ids])

    def _indexed(self, user_id: str) -> dict[str, str]:
        """Node id to entry id, for the user's nodes in the index."""
        data = self.index.vector_store.data  # type: ignore[attr-defined,unused-ignore]
        return {node_id: str(meta.get("entry_id")) for node_id, meta in data.metadata_dict.items()
                if meta.get("user_id") == user_id}

    async def forget(self, user_id: str) -> None:
        await self.chats.adelete_messages(self._key(user_id))
        ids = sorted(self._indexed(user_id))
        if ids:
            await self.index.adelete_nodes(ids)

    async def consistent_state(self, user_id: str) -> ConsistencyReport:
        await super().consistent_state(user_id)  # validates the id
        chat = {vector_id(user_id, e.id): e.id for e in await self._entries(user_id)}
        indexed = self._indexed(user_id)
        return ConsistencyReport.of(user_id, [
            *(Difference("VectorStoreIndex", "missing", chat[i])
              for i in sorted(chat.keys() - indexed.keys())),
            *(Difference("VectorStoreIndex", "extra", indexed[i])
              for i in sorted(indexed.keys() - chat.keys())),
        ], self.backends)


@asynccontextmanager
async def redis_factory() -> AsyncIterator[LlamaIndexStore]:
    """``--store nomnesia.adapters.ecosystem.llama_index:redis_factory``: ``RedisChatStore``."""
    from llama_index.storage.chat_store.redis import RedisChatStore

    prefix = _engines.namespace("li") + ":"
    chats = RedisChatStore(redis_url=_engines.url("redis"))
    store = LlamaIndexStore(
        chats, key_prefix=prefix, backends=("RedisChatStore", "VectorStoreIndex"),
        library=f"llama-index-storage-chat-store-redis "
                f"{version('llama-index-storage-chat-store-redis')}")
    try:
        yield store
    finally:
        client: Any = chats._redis_client
        keys = list(client.scan_iter(match=prefix.replace("\\", "\\\\") + "*"))
        if keys:
            client.delete(*keys)
        client.close()
        await chats._aredis_client.aclose()


@asynccontextmanager
async def postgres_factory() -> AsyncIterator[LlamaIndexStore]:
    """``--store nomnesia.adapters.ecosystem.llama_index:postgres_factory``: Postgres chats."""
    from llama_index.storage.chat_store.postgres import PostgresChatStore
    from sqlalchemy import text

    table = _engines.namespace("li_chat")
    chats = PostgresChatStore.from_uri(_engines.url("postgres"), table_name=table)
    store = LlamaIndexStore(
        chats, key_prefix="", backends=("PostgresChatStore", "VectorStoreIndex"),
        library=f"llama-index-storage-chat-store-postgres "
                f"{version('llama-index-storage-chat-store-postgres')}")
    try:
        yield store
    finally:
        session: Any = chats._session
        with session() as s:
            s.execute(text(f'DROP TABLE IF EXISTS public."{table}"'))
            s.commit()
            s.get_bind().dispose()
        await chats._async_session.kw["bind"].dispose()
