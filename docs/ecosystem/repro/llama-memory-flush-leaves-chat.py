"""llama-index Memory's flush takes messages out of the chat it returns (documented).

Once the active messages pass ``token_limit * chat_history_token_ratio``,
``Memory.aput`` flushes the oldest ones: their rows are marked ``archived``
(``aget_all()`` still returns them) and handed to the memory blocks, and
``Memory.aget()`` no longer returns them. With ``Memory.from_defaults``' empty
``memory_blocks`` nothing of them is left in the chat Memory gives the model.
Memory's class docstring describes this ("the oldest messages ... are ejected
from the FIFO queue"); a caller who reads ``aget()`` as the conversation's
history loses them.

Written against llama-index-core 0.14.25 (SQLAlchemyChatStore on aiosqlite).
Run: ``python llama-memory-flush-leaves-chat.py``
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
            sent = []
            for i in range(30):
                role = "user" if i % 2 == 0 else "assistant"
                sent.append(f"{role} message number {i}")
                await memory.aput(ChatMessage(role=role, content=sent[-1]))
            chat = [m.content for m in await memory.aget()]
            everything = [m.content for m in await memory.aget_all()]
            gone = [c for c in sent if c not in chat]
            if gone and all(c in everything for c in gone):
                print(f"{len(gone)} of {len(sent)} messages put are archived, not in aget() "
                      f"(first: {gone[0]!r}); aget() keeps {len(chat)}, no memory block holds them")
                return 1
            print("not reproduced: every message put is still in aget()")
            return 0
        finally:
            if store._async_engine is not None:
                await store._async_engine.dispose()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
