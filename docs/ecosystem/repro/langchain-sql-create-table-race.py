"""langchain-community SQLChatMessageHistory: concurrent first calls race the table's CREATE.

In async mode (an ``AsyncEngine`` as ``connection``) ``SQLChatMessageHistory`` creates its
table on its first call (``_acreate_table_if_not_exists``: ``metadata.create_all``, which
checks for the table and then creates it, in its own transaction). Each history is one
session, so the first calls of two sessions sharing a table (two users of an application
that just started) both find no table and both create it: one fails with SQLite's ``table
... already exists`` (PostgreSQL: a unique violation on ``pg_type``), and the message it
was asked to store is not stored.

Written against langchain-community 0.4.2 with SQLAlchemy 2.1 and aiosqlite. Tries up to 20
fresh databases. Run: ``python langchain-sql-create-table-race.py``
"""

import asyncio
import sys
import tempfile
import warnings

warnings.simplefilter("ignore", DeprecationWarning)  # langchain-community's sunset notice

from langchain_community.chat_message_histories import SQLChatMessageHistory  # noqa: E402
from langchain_core.messages import HumanMessage  # noqa: E402
from sqlalchemy.ext.asyncio import create_async_engine  # noqa: E402


async def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        for attempt in range(1, 21):
            engine = create_async_engine(f"sqlite+aiosqlite:///{folder}/chat{attempt}.db")
            try:
                histories = [SQLChatMessageHistory(user, table_name="messages",
                                                   connection=engine)
                             for user in ("alice", "bob", "carol")]
                results = await asyncio.gather(
                    *(h.aadd_messages([HumanMessage("hello")]) for h in histories),
                    return_exceptions=True)
            finally:
                await engine.dispose()
            errors = [r for r in results if isinstance(r, BaseException)]
            if errors:
                first = str(errors[0]).splitlines()[0]
                print(f"try {attempt}: first messages of three sessions at once; "
                      f"{len(errors)} raised {type(errors[0]).__name__}: {first}")
                return 1
        print("not reproduced: 20 fresh databases, concurrent first messages all stored")
        return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
