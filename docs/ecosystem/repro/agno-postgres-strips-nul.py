"""agno's PostgresDb stores a run whose message contains NUL (U+0000) with the NUL
removed, and says nothing: ``'a\\x00b'`` is read back as ``'ab'``.

PostgreSQL's jsonb cannot hold \\u0000; agno strips it before the write
(``agno.utils.string.sanitize_postgres_strings`` on ``run_data``) instead of refusing
the run, so what the agent said is not what is stored (and ``'\\x00'`` becomes ``''``).
SqliteDb stores it as given. Written against agno 3.1.10 on PostgreSQL 18.

Run::

    NOMNESIA_REPRO_POSTGRES=postgresql://postgres@127.0.0.1:5432/postgres \\
        python agno-postgres-strips-nul.py
"""
# needs: postgres

import os
import sys
import time
import uuid
from urllib.parse import urlsplit

import psycopg
from agno.db.base import SessionType
from agno.db.postgres import PostgresDb
from agno.models.message import Message
from agno.run.agent import RunOutput
from agno.run.base import RunStatus
from agno.session import AgentSession

DSN = os.environ["NOMNESIA_REPRO_POSTGRES"]


def main(dsn: str) -> int:
    url = "postgresql+psycopg://" + dsn.split("://", 1)[1]
    db = PostgresDb(db_url=url)
    session = AgentSession(session_id="s1", agent_id="a", user_id="ann",
                           created_at=int(time.time()))
    run = RunOutput(run_id=str(uuid.uuid4()), agent_id="a", session_id="s1", user_id="ann",
                    status=RunStatus.completed, created_at=int(time.time()),
                    messages=[Message(role="user", content="a\x00b")])
    session.upsert_run(run=run)
    db.upsert_session(session)
    db.upsert_run(run=run, session_id="s1", user_id="ann", run_index=0)
    stored = db.get_session("s1", SessionType.AGENT, user_id="ann")
    content = stored.runs[0].messages[0].content
    db.close()
    if content != "a\x00b":
        print(f"NUL stripped: stored 'a\\x00b', read back {content!r}, no error")
        return 1
    print(f"not reproduced: read back {content!r}")
    return 0


database = f"repro_{uuid.uuid4().hex[:12]}"
with psycopg.connect(DSN, autocommit=True) as admin:
    admin.execute(f'CREATE DATABASE "{database}"')
try:
    code = main(urlsplit(DSN)._replace(path=f"/{database}").geturl())
finally:
    with psycopg.connect(DSN, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{database}" WITH (FORCE)')
sys.exit(code)
