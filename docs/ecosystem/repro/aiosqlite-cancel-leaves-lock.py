"""A cancelled read on SQLAlchemy + aiosqlite leaves a lock: the next write fails.

llama-index's ``SQLAlchemyChatStore`` (the store behind ``Memory``) on
``sqlite+aiosqlite``. When a ``get_messages`` call is cancelled while its
SELECT is being fetched, SQLAlchemy terminates the connection
(``AsyncAdapt_terminate.terminate``): its graceful close is cancelled as well,
so it force-closes with aiosqlite's ``Connection.stop()``, which closes the
sqlite3 connection while the cancelled SELECT's cursor is still open. SQLite
keeps such a connection as a zombie holding its read lock until the garbage
collector frees the cursor: the next write waits the 5 s busy timeout and
fails with ``database is locked``.

Written against llama-index-core 0.14.25, SQLAlchemy 2.1.9, aiosqlite 0.22.1.
Cancels after 1..8 event-loop steps. Run: ``python aiosqlite-cancel-leaves-lock.py``
"""

import asyncio
import sys
import tempfile
import uuid

from llama_index.core.llms import ChatMessage
from llama_index.core.storage.chat_store.sql import SQLAlchemyChatStore


async def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        store = SQLAlchemyChatStore(table_name=f"repro_{uuid.uuid4().hex[:8]}",
                                    async_database_uri=f"sqlite+aiosqlite:///{folder}/chat.db")
        try:
            await store.add_message("u", ChatMessage(role="user", content="hello"))
            for steps in range(1, 9):
                task = asyncio.create_task(store.get_messages("u"))
                for _ in range(steps):
                    await asyncio.sleep(0)
                task.cancel()
                try:
                    await task
                    continue  # finished before the cancel
                except asyncio.CancelledError:
                    pass
                await asyncio.sleep(0.1)
                try:
                    await store.add_message("u", ChatMessage(role="user", content=f"s{steps}"))
                except Exception as exc:  # the defect is the error
                    print(f"get_messages cancelled after {steps} event-loop steps; the next "
                          f"add_message raised {type(exc).__name__}: "
                          f"{str(exc).splitlines()[0]}")
                    return 1
            print("not reproduced: every write after a cancelled read succeeded")
            return 0
        finally:
            if store._async_engine is not None:
                await store._async_engine.dispose()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
