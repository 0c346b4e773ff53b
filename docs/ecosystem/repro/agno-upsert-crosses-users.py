"""agno: adding a memory that carries another user's memory id rewrites that user's memory.

``MemoryManager.add_user_memory(memory, user_id="bob")`` (and
``replace_user_memory``, and the agent's ``update_memory`` tool) writes with the
database's ``upsert_user_memory``: ``INSERT ... ON CONFLICT (memory_id) DO
UPDATE SET memory = ...``, with no condition on the row's ``user_id``. A memory
id is one key for all users, so bob's write, given ann's id (a model that
repeats an id it saw, a client that reuses ids), replaces ann's memory text:
ann now reads bob's text, and bob does not see it at all. agno's own session
upsert guards the same statement with ``WHERE user_id = excluded.user_id``; the
memory upsert does not. Shown on ``SqliteDb`` and on ``PostgresDb``.
Written against agno 3.1.10 and SQLAlchemy 2.1, on PostgreSQL 18.

Run::

    NOMNESIA_REPRO_POSTGRES=postgresql://postgres@127.0.0.1:5432/postgres \\
        python agno-upsert-crosses-users.py
"""
# needs: postgres

import logging
import os
import sys
import tempfile
import uuid
from importlib.metadata import version
from pathlib import Path

import psycopg
from agno.db.postgres import PostgresDb
from agno.db.schemas.memory import UserMemory
from agno.db.sqlite import SqliteDb
from agno.memory.manager import MemoryManager

DSN = os.environ["NOMNESIA_REPRO_POSTGRES"]
logging.disable(logging.CRITICAL)


def show(db: object, name: str) -> str | None:
    manager = MemoryManager(db=db)
    ann_id = manager.add_user_memory(UserMemory(memory="ann: allergic to penicillin"),
                                     user_id="ann")
    manager.add_user_memory(UserMemory(memory="bob: likes jazz", memory_id=ann_id),
                            user_id="bob")
    ann = [m.memory for m in manager.get_user_memories(user_id="ann") or []]
    bob = [m.memory for m in manager.get_user_memories(user_id="bob") or []]
    if "ann: allergic to penicillin" not in ann:
        return (f"{name}: after bob's add_user_memory with ann's memory id, ann's memories "
                f"are {ann} and bob's are {bob}")
    return None


schema = f"repro_{uuid.uuid4().hex[:12]}"
shown = []
with tempfile.TemporaryDirectory() as where:
    sqlite = SqliteDb(db_file=str(Path(where) / "agno.db"))
    shown.append(show(sqlite, "SqliteDb"))
    sqlite.db_engine.dispose()
postgres = PostgresDb(db_url="postgresql+psycopg://" + DSN.split("://", 1)[1], db_schema=schema)
try:
    shown.append(show(postgres, "PostgresDb"))
finally:
    postgres.db_engine.dispose()
    with psycopg.connect(DSN, autocommit=True) as admin:
        admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')

lines = [line for line in shown if line]
if lines:
    print(f"agno {version('agno')}: another user's memory rewritten:")
    for line in lines:
        print(f"  {line}")
    sys.exit(1)
print("not reproduced: ann's memory survived bob's write with her memory id on both databases")
sys.exit(0)
