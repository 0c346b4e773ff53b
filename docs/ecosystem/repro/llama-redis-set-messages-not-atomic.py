"""RedisChatStore.aset_messages is not atomic: readers see the chat empty or half-written.

``aset_messages`` is a DELETE, then one RPUSH round trip per message, with no
MULTI or pipeline. A reader in between sees an empty or partial chat, and a task
cancelled in between (a client timeout, a shutdown) leaves it so: messages that
were acknowledged before the rewrite are gone. This script rewrites a chat of 50
messages with the same 50 messages while another task reads it.
Written against llama-index-storage-chat-store-redis 0.8.0 on Redis 8.2.

Run::

    NOMNESIA_REPRO_REDIS=redis://127.0.0.1:6379/0 \\
        python llama-redis-set-messages-not-atomic.py
"""
# needs: redis

import asyncio
import os
import sys
import uuid
from importlib.metadata import version

from llama_index.core.llms import ChatMessage
from llama_index.storage.chat_store.redis import RedisChatStore

URL = os.environ["NOMNESIA_REPRO_REDIS"]


async def main() -> int:
    store = RedisChatStore(redis_url=URL)
    key = f"repro-{uuid.uuid4().hex}"
    messages = [ChatMessage(role="user", content=f"message {i}") for i in range(50)]
    await store.aset_messages(key, messages)
    seen: set[int] = set()
    try:
        for attempt in range(1, 21):
            rewrite = asyncio.create_task(store.aset_messages(key, messages))
            while not rewrite.done():
                seen.add(len(await store.aget_messages(key)))
            await rewrite
            partial = sorted(n for n in seen if n < len(messages))
            if partial:
                print(f"llama-index-storage-chat-store-redis "
                      f"{version('llama-index-storage-chat-store-redis')}: while aset_messages "
                      f"rewrote {len(messages)} messages, aget_messages returned a chat that was "
                      f"empty or half-written: lengths {partial[:8]} (attempt {attempt})")
                for yields in range(1, 200):  # cancel ever later, until it lands mid-way
                    await store.aset_messages(key, messages)
                    cancelled = asyncio.create_task(store.aset_messages(key, messages))
                    for _ in range(yields):
                        await asyncio.sleep(0)
                    cancelled.cancel()
                    await asyncio.gather(cancelled, return_exceptions=True)
                    left = len(await store.aget_messages(key))
                    if left < len(messages):
                        print(f"a rewrite cancelled after {yields} event-loop turns left "
                              f"{left} of the {len(messages)} acknowledged messages")
                        break
                return 1
    finally:
        await store.adelete_messages(key)
    print(f"not reproduced: every read during 20 rewrites saw {sorted(seen)} messages")
    return 0


sys.exit(asyncio.run(main()))
