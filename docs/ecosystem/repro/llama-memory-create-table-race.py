"""llama-index SQLAlchemyChatStore: concurrent first calls query a table not created yet.

``SQLAlchemyChatStore`` creates its table lazily, on the first call
(``_initialize``). ``_setup_tables`` assigns ``self._table`` *before* its
``CREATE TABLE`` has run; ``_initialize`` returns early as soon as ``_table``
is set. So a second call that starts while the first one is still creating
the table skips initialisation and queries a table that does not exist yet
(SQLite: ``no such table``; PostgreSQL: ``UndefinedTableError ... does not
exist``). Every ``Memory`` sharing one chat store hits this on a busy start.

Written against llama-index-core 0.14.25 (aiosqlite). Tries up to 20 fresh
stores. Run: ``python llama-memory-create-table-race.py``
"""

import asyncio
import sys
import tempfile
import uuid

from llama_index.core.storage.chat_store.sql import SQLAlchemyChatStore


async def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        for attempt in range(1, 21):
            store = SQLAlchemyChatStore(
                table_name=f"repro_{uuid.uuid4().hex[:8]}",
                async_database_uri=f"sqlite+aiosqlite:///{folder}/chat{attempt}.db")
            try:
                results = await asyncio.gather(store.get_messages("alice"),
                                               store.get_messages("bob"),
                                               return_exceptions=True)
            finally:
                if store._async_engine is not None:
                    await store._async_engine.dispose()
            errors = [r for r in results if isinstance(r, BaseException)]
            if errors:
                first = str(errors[0]).splitlines()[0]
                print(f"try {attempt}: two concurrent first calls on a fresh store; one raised "
                      f"{type(errors[0]).__name__}: {first}")
                return 1
        print("not reproduced: 20 fresh stores, concurrent first calls all succeeded")
        return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
