"""RedisChatStore.aset_messages deletes the chat before it serializes the replacement.

``aset_messages`` is a DELETE, then one ``model_dump_json`` and RPUSH per message.
When one message of the replacement cannot be serialized (an object the caller put
in ``additional_kwargs``: a datetime-like object, a tool's raw result), the call
raises ``PydanticSerializationError`` after the DELETE and the RPUSHes of the
messages before it: the chat's acknowledged messages are gone, and the chat holds
part of the replacement. No race is needed; ``set_messages`` (sync) does the same.
Written against llama-index-storage-chat-store-redis 0.8.0 (llama-index-core
0.14.25) on Redis 8.2.

Run::

    NOMNESIA_REPRO_REDIS=redis://127.0.0.1:6379/0 \\
        python llama-redis-set-messages-poisoned.py
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


def texts(messages: list[ChatMessage]) -> list[str]:
    return [str(m.content) for m in messages]


async def main() -> int:
    store = RedisChatStore(redis_url=URL)
    key = f"repro-{uuid.uuid4().hex}"
    chat = [ChatMessage(role="user", content=f"kept {i}") for i in range(3)]
    replacement = [ChatMessage(role="user", content="new 0"),
                   ChatMessage(role="assistant", content="new 1",
                               additional_kwargs={"attachment": object()}),
                   ChatMessage(role="user", content="new 2")]
    found = []
    try:
        for method in ("aset_messages", "set_messages"):
            await store.aset_messages(key, chat)
            try:
                done = getattr(store, method)(key, replacement)
                if asyncio.iscoroutine(done):
                    await done
                raised = "returned"
            except Exception as exc:  # what a caller's except clause would see
                raised = f"raised {type(exc).__name__}"
            after = texts(await store.aget_messages(key))
            print(f"{method}(key, {texts(replacement)} with an object() in message 2) "
                  f"{raised}; the chat held {texts(chat)} and now holds {after}")
            if raised != "returned" and after != texts(chat):
                found.append(method)
    finally:
        await store.adelete_messages(key)
    if found:
        print(f"llama-index-storage-chat-store-redis "
              f"{version('llama-index-storage-chat-store-redis')}: {', '.join(found)} raised "
              f"after deleting the chat: its {len(chat)} acknowledged messages are lost and "
              "the replacement is half-written")
        return 1
    print("not reproduced: a replacement that cannot be serialized left the chat as it was")
    return 0


sys.exit(asyncio.run(main()))
