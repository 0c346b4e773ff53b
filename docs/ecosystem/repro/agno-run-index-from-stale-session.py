"""agno's SqliteDb: a run saved from a session loaded before the session was deleted keeps
its old ``run_index``, so every later run is put before it, and the "latest run" is the
old one.

An agent loads its session when a run starts and, when the run ends, stores the run with
``run_index`` = its place in the session as loaded (``resolve_run_index``, as
``Agent._apersist_run_in_session`` does). Runs are read back ordered by ``run_index``.
If the session is deleted while a run is in flight (a user clears the conversation during
a reply), that run is stored at its old place, say 3, in a session that now starts
afresh: the next run, loaded after it, gets index 1 and is read *before* it, although it
began after it had ended; ``get_session(runs_limit=1)`` (the context an agent sends its
model) returns the old one. Concurrent runs on one session likewise share an index and
are ordered by ``created_at`` seconds, then by their random ``run_id``.

Written against agno 3.1.10. Run: ``python agno-run-index-from-stale-session.py``.
Exits 1 while the later run is read before the earlier one, 0 when not.
"""

import sys
import tempfile
import time
import uuid
from pathlib import Path

from agno.db.base import SessionType
from agno.db.sqlite import SqliteDb
from agno.models.message import Message
from agno.run.agent import RunOutput
from agno.run.base import RunStatus
from agno.session import AgentSession
from agno.session._utils import resolve_run_index


def save_run(db, session, text):
    """What agno's Agent does when a run ends (Agent._apersist_run_in_session)."""
    run = RunOutput(run_id=str(uuid.uuid4()), agent_id="a", session_id=session.session_id,
                    user_id=session.user_id, status=RunStatus.completed,
                    messages=[Message(role="user", content=text)], created_at=int(time.time()))
    session.upsert_run(run=run)
    db.upsert_session(session)
    db.upsert_run(run=run, session_id=session.session_id, user_id=session.user_id,
                  run_index=resolve_run_index(session, run))


def load(db):
    return db.get_session("s1", SessionType.AGENT, user_id="ann")


with tempfile.TemporaryDirectory() as where:
    db = SqliteDb(db_file=str(Path(where) / "agno.db"))
    save_run(db, AgentSession(session_id="s1", agent_id="a", user_id="ann"), "first")
    for text in ("second", "third"):
        save_run(db, load(db), text)
    in_flight = load(db)  # a run starts
    db.delete_session("s1", user_id="ann")  # the user clears the conversation
    save_run(db, in_flight, "reply in flight")  # the run ends
    save_run(db, load(db), "next question")  # a run that begins after it ended
    order = [m.content for run in load(db).runs for m in run.messages]
    latest = [m.content for run in db.get_session("s1", SessionType.AGENT, user_id="ann",
                                                  runs_limit=1).runs for m in run.messages]
    db.close()
if order.index("next question") < order.index("reply in flight"):
    print(f"later run read first: the session reads {order}; runs_limit=1 gives {latest}")
    sys.exit(1)
print(f"not reproduced: the session reads {order}")
