"""``SQLSessionManager`` (``strands-session-sql``) on PostgreSQL cannot store a session whose
id is longer than about 240 characters: its keys are ``VARCHAR(255)``.

``SQLSessionStorage`` makes one table ``(pk String(255), sk String(255), data Text)``, and
``strands-agents-session`` keys a session's messages ``SESSION#<id>#AGENT#<agent id>``: the
id, the agent id and 15 characters of their own. PostgreSQL refuses a longer value
(``StringDataRightTruncation``), so with a 256-character session id the session cannot be
created; with an id of 245 its session is created and its agent's messages are refused.
SQLite ignores the length and stores them. Nothing documents a limit. Written against
strands-session-sql 0.2.0, strands-agents-session 0.2.0 and strands-agents 1.65.0 on
PostgreSQL 18.

Run::

    NOMNESIA_REPRO_POSTGRES=postgresql://user@127.0.0.1:5432/db \\
        python strands-sql-postgres-key-255.py
"""
# needs: postgres

import os
import sys
import uuid
from importlib.metadata import version

from sqlalchemy.exc import DataError
from strands import Agent
from strands_sql_session_manager import SQLSessionManager

URL = "postgresql+psycopg://" + os.environ["NOMNESIA_REPRO_POSTGRES"].split("://", 1)[1]
TABLE = f"repro_{uuid.uuid4().hex[:8]}"


def main() -> int:
    refused = []
    managers = []
    try:
        for length in (256, 245):
            session_id = "u" * length
            try:
                manager = SQLSessionManager(session_id=session_id, url=URL, table_name=TABLE)
                managers.append(manager)
                agent = Agent(agent_id="a", session_manager=manager, callback_handler=None)
                manager.append_message({"role": "user", "content": [{"text": "hi"}]}, agent)
            except DataError as exc:
                refused.append(f"{length} characters: {str(exc.orig).splitlines()[0]}")
    finally:
        if managers:
            managers[0].storage.table.drop(managers[0].storage.engine, checkfirst=True)
        for manager in managers:
            manager.storage.engine.dispose()
    if refused:
        print(f"strands-session-sql {version('strands-session-sql')} on PostgreSQL: sessions "
              f"with ids of {'; '.join(refused)}")
        return 1
    print("not reproduced: both long ids were stored")
    return 0


sys.exit(main())
