"""llama-index chat stores (Redis, PostgreSQL) with a ``VectorStoreIndex`` beside them."""

from __future__ import annotations

from . import Cause

__all__ = ["CAUSES"]

LLAMA = ("llama-index-redis", "llama-index-postgres")
_REWRITE_LOST = (r"^G(?:1 durability|2 exactly once|3 read your writes|4 search|5 order|"
                 r"6 idempotent appends: read \d+ .* twice|7 atomic compaction|"
                 r"8 forget: read \d+ .* written before forget|"
                 r"10 interruption: an interrupted compaction|"
                 r"11 quiescent consistency: consistent_state)")
"""What a whole-chat rewrite racing other writers shows: lost, doubled or stale messages, and
an index that no longer agrees with the chat (the rewrite's loss is not the index's)."""

CAUSES: tuple[Cause, ...] = (
    Cause("llama-refused-content-half-written", LLAMA, ("Inputs", "G11"), "contract gap",
          "async_add_message stores ChatMessage(content=None), then TextNode(text=None) raises "
          "(two writes, the chat first)",
          "content None or 1 is stored in the chat, then refused by the index: the append "
          "raises, but the chat already holds it",
          "append(u, 'user', None)  # raises ValidationError, the chat holds the message",
          "content that ChatMessage accepts and TextNode refuses (None, 1)",
          match=(r"^Inputs: .*\b(?:rejecting append_message\.content=\S+ changed the store's "
                 r"state|a call rejected for its content changed the history)",),
          kind="mapping"),
    # Both chat stores lose an append that lands between a rewrite's read and its
    # overwrite (no conditional write: llama-set-messages-overwrite). RedisChatStore adds
    # its own defect: aset_messages is a DELETE and one RPUSH per message, unbatched, so
    # a concurrent reader sees the chat half-written and a cancel leaves it so. On the Redis
    # audit every such failure is filed under the Redis defect, which subsumes the other.
    Cause("llama-redis-set-messages-not-atomic", ("llama-index-redis",),
          ("G1", "G3", "G4", "G5", "G7", "G8", "G10"), "data loss",
          "RedisChatStore.aset_messages (DELETE, then one RPUSH round trip per message, no "
          "MULTI/pipeline)",
          "aset_messages is not atomic: a reader between the DELETE and the last RPUSH sees "
          "the chat empty or half-written, and a cancel (or a crash) in between leaves it so: "
          "acknowledged messages are gone",
          "await asyncio.gather(chats.aset_messages(key, msgs), chats.aget_messages(key))  "
          "# the read returns 0 < n < len(msgs)",
          "any concurrent reader, or a task cancelled during aset_messages",
          documented=None,
          functions=("llama_index.storage.chat_store.redis.base:RedisChatStore.aset_messages",),
          match=(_REWRITE_LOST,), racy=True,
          shows=r"half-written|empty"),
    Cause("llama-set-messages-overwrite", ("llama-index-postgres",),
          ("G1", "G3", "G4", "G5", "G7", "G8", "G10"), "contract gap",
          "BaseChatStore.aset_messages (whole-chat overwrite, no conditional write)",
          "the only rewrite replaces the whole chat: an append that lands between the "
          "caller's read and the overwrite is lost, and a forget that lands there is undone",
          "msgs = await chats.aget_messages(key); <append here>; "
          "await chats.aset_messages(key, msgs[1:])  # the append is gone",
          "a team rewrites a chat (compaction) while others append to it",
          match=(_REWRITE_LOST,), kind="mapping", racy=True),
    Cause("llama-retry-race", LLAMA, ("G6",), "contract gap",
          "BaseChatStore has no conditional append",
          "an idempotent retry reads the chat and appends, so two concurrent retries both "
          "append", "await asyncio.gather(append(u, 'user', 'x', message_id='m'), "
          "append(u, 'user', 'x', message_id='m'))",
          "two retries of one message run at once",
          # A retry that started after its first append returned, and still found nothing,
          # is covered-retry's (a compaction removed the first): not a race.
          match=(r"^G6 idempotent appends: retry append",), kind="mapping", racy=True,
          yields_to=("covered-retry",)),
    Cause("llama-empty-query", LLAMA, ("Inputs",), "availability",
          "VectorIndexRetriever.aretrieve with an empty query string (no embedding is "
          "computed for '', then the similarity is computed against None)",
          "searching for '' raises TypeError instead of returning results",
          "await index.as_retriever().aretrieve('')  # TypeError: NoneType * float",
          "the query string is empty",
          functions=("llama_index.core.indices.vector_store.retrievers.retriever:"
                     "VectorIndexRetriever._aretrieve",),
          match=(r"search\([^)]*, '', k=\d+\) raised TypeError",), shows=r"TypeError"),
)
