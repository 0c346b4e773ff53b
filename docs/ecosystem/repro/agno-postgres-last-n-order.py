"""agno on PostgreSQL: "the last N memories" come back out of order.

``MemoryManager.search_user_memories(retrieval_method="last_n")`` reads the
user's rows with ``PostgresDb.get_user_memories`` (no ``ORDER BY``) and sorts
them by ``updated_at``, which ``add_user_memory`` sets in whole seconds
(``now_epoch_s()``). Memories added within one second tie, and a stable sort
keeps the ties in the order PostgreSQL returned them: heap order, which is not
insertion order once rows go where other rows were deleted (a forgotten user,
reclaimed by (auto)vacuum), or where another connection's insert landed. Here
the older memory comes back last, as the newest. Written against agno 3.1.10,
SQLAlchemy 2.1 and psycopg 3.3 on PostgreSQL 18; ``VACUUM`` stands for the
autovacuum a live database runs on its own.

Run::

    NOMNESIA_REPRO_POSTGRES=postgresql://postgres@127.0.0.1:5432/postgres \\
        python agno-postgres-last-n-order.py
"""
# needs: postgres

import logging
import os
import sys
import uuid
from importlib.metadata import version

import psycopg
from agno.db.postgres import PostgresDb
from agno.db.schemas.memory import UserMemory
from agno.memory.manager import MemoryManager

DSN = os.environ["NOMNESIA_REPRO_POSTGRES"]
logging.disable(logging.CRITICAL)


def attempt(manager: MemoryManager, schema: str) -> list[str]:
    """Another user's rows, deleted and vacuumed, between ann's two adds; ann's last 2."""
    for i in range(50):
        manager.add_user_memory(UserMemory(memory=f"carol's note {i}"), user_id="carol")
    manager.add_user_memory(UserMemory(memory="first"), user_id="ann")
    manager.clear_user_memories(user_id="carol")
    with psycopg.connect(DSN, autocommit=True) as admin:
        admin.execute(f'VACUUM "{schema}".agno_memories')
    manager.add_user_memory(UserMemory(memory="second"), user_id="ann")
    found = manager.search_user_memories(limit=2, retrieval_method="last_n", user_id="ann")
    stamps = {m.updated_at for m in found}
    manager.clear_user_memories(user_id="ann")
    return [m.memory for m in found] if len(stamps) == 1 else []  # a second passed: again


schema = f"repro_{uuid.uuid4().hex[:12]}"
db = PostgresDb(db_url="postgresql+psycopg://" + DSN.split("://", 1)[1], db_schema=schema)
try:
    manager = MemoryManager(db=db)
    for tries in range(1, 6):
        order = attempt(manager, schema)
        if order and order != ["first", "second"]:
            print(f"agno {version('agno')}: added 'first' then 'second' within one second; "
                  f"search_user_memories(limit=2, retrieval_method='last_n') returned "
                  f"{order}, out of order (try {tries})")
            sys.exit(1)
finally:
    db.db_engine.dispose()
    with psycopg.connect(DSN, autocommit=True) as admin:
        admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
print("not reproduced: in 5 tries last_n kept the order of the adds")
sys.exit(0)
