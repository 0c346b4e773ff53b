"""SQLiteSession.get_items(limit=2**64) raises OverflowError instead of returning the history.

``SQLiteSession.get_items`` binds ``limit`` as the parameter of ``LIMIT ?``
unclamped (``resolve_session_limit`` passes an explicit limit through), and
Python's sqlite3 module cannot bind an int outside SQLite's signed 64-bit range.
Any limit of 2**63 or more (a "give me everything" sentinel, ``sys.maxsize + 1``)
fails; 2**63 - 1 works. Written against openai-agents 0.24.0.

Run::

    python agents-sqlite-limit-overflow.py
"""

import asyncio
import sys
from importlib.metadata import version

from agents import SQLiteSession


async def main() -> int:
    session = SQLiteSession("repro")  # the default: an in-memory database
    try:
        await session.add_items([{"role": "user", "content": "hello"}])
        items = await session.get_items(limit=2**63 - 1)
        print(f"get_items(limit=2**63 - 1) returned {len(items)} item(s)")
        try:
            items = await session.get_items(limit=2**64)
        except OverflowError as exc:
            print(f"openai-agents {version('openai-agents')}: SQLiteSession.get_items("
                  f"limit=2**64) raised OverflowError: {exc}")
            return 1
        print(f"not reproduced: get_items(limit=2**64) returned {len(items)} item(s)")
        return 0
    finally:
        session.close()


sys.exit(asyncio.run(main()))
