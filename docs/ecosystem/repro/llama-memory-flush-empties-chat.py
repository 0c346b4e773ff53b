"""llama-index Memory's flush archives the whole chat, the message just put included.

``Memory._manage_queue`` (run by every ``Memory.aput``) flushes the oldest
messages once the chat passes ``token_limit * chat_history_token_ratio``. It
wants the first kept message to be a ``user`` one; when no active message has
role ``user`` it moves the last one into the flush as well, finds no user turn
to keep, and archives every message. ``Memory.aget()`` then returns ``[]`` right
after an acknowledged ``aput``, although Memory's docstring says it "maintains
at least one complete conversation turn".

Written against llama-index-core 0.14.25 (SQLAlchemyChatStore on aiosqlite).
Run: ``python llama-memory-flush-empties-chat.py``
"""

import asyncio
import sys
import tempfile
import uuid

from llama_index.core.llms import ChatMessage
from llama_index.core.memory import Memory
from llama_index.core.storage.chat_store.sql import SQLAlchemyChatStore


async def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        store = SQLAlchemyChatStore(table_name=f"repro_{uuid.uuid4().hex[:8]}",
                                    async_database_uri=f"sqlite+aiosqlite:///{folder}/chat.db")
        memory = Memory.from_defaults(session_id="s", chat_store=store, token_limit=100,
                                      token_flush_size=10)
        try:
            for i in range(40):
                content = f"assistant message number {i}"
                await memory.aput(ChatMessage(role="assistant", content=content))
                chat = await memory.aget()
                if not chat:
                    archived = await memory.aget_all()
                    print(f"after aput #{i} ({content!r}) returned, aget() returned [] "
                          f"({len(archived)} messages all archived, the one just put included)")
                    return 1
            print("not reproduced: aget() always kept at least one message")
            return 0
        finally:
            if store._async_engine is not None:
                await store._async_engine.dispose()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
