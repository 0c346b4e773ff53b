"""agno's ``MemoryManager.add_user_memory`` returns a memory id for a write that failed.

``add_user_memory`` writes through ``MemoryManager._upsert_db_memory``, which
catches every exception, logs a warning and returns the string "Error adding
memory"; ``add_user_memory`` ignores that string and returns the memory id, as
for a stored memory (its docstring: "Returns: str: The id of the memory"). Two
failures show it: a memory text with NUL (U+0000), which PostgreSQL's jsonb
``memory`` column refuses (agno strips NUL from ``input`` and ``feedback``
only), and a database that is down (nothing listens on the URL's port). The
caller cannot tell either from a success; the memory is not there.
Written against agno 3.1.10, SQLAlchemy 2.1 and psycopg 3.3 on PostgreSQL 18.

Run::

    NOMNESIA_REPRO_POSTGRES=postgresql://postgres@127.0.0.1:5432/postgres \\
        python agno-acks-failed-write.py
"""
# needs: postgres

import logging
import os
import socket
import sys
import uuid
from importlib.metadata import version

import psycopg
from agno.db.postgres import PostgresDb
from agno.db.schemas.memory import UserMemory
from agno.memory.manager import MemoryManager

DSN = os.environ["NOMNESIA_REPRO_POSTGRES"]
URL = "postgresql+psycopg://" + DSN.split("://", 1)[1]
logging.disable(logging.CRITICAL)  # agno logs the swallowed error as a warning


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def attempt(manager: MemoryManager, text: str) -> tuple[str | None, list[str]]:
    """The id add_user_memory returned, and the texts the user's memories hold afterwards."""
    memory_id = manager.add_user_memory(UserMemory(memory=text), user_id="ann")
    try:
        stored = [m.memory for m in manager.get_user_memories(user_id="ann") or []]
    except Exception as exc:  # the database is down: the read fails, loudly
        stored = [f"(read raised {type(exc).__name__})"]
    return memory_id, stored


schema = f"repro_{uuid.uuid4().hex[:12]}"
shown = []
try:
    manager = MemoryManager(db=PostgresDb(db_url=URL, db_schema=schema))
    memory_id, stored = attempt(manager, "a\x00b")
    if memory_id and "a\x00b" not in stored:
        shown.append(f"add_user_memory(UserMemory(memory='a\\x00b')) returned id {memory_id!r}; "
                     f"the user's memories: {stored}")
    down = f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/postgres"
    manager = MemoryManager(db=PostgresDb(db_url=down, db_schema=schema))
    memory_id, stored = attempt(manager, "kept?")
    if memory_id:
        shown.append(f"with the database down, add_user_memory returned id {memory_id!r}; "
                     f"reading back: {stored}")
finally:
    with psycopg.connect(DSN, autocommit=True) as admin:
        admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')

if shown:
    print(f"agno {version('agno')}: an id for a write that failed:")
    for line in shown:
        print(f"  {line}")
    sys.exit(1)
print("not reproduced: add_user_memory raised or returned no id for both failed writes")
sys.exit(0)
