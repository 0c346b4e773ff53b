"""agno's InMemoryDb: a run saved on a session that was deleted while the run was in
flight brings the deleted session's runs back.

An agent loads its session when a run starts and saves it when the run ends
(``upsert_session``, then ``upsert_run``). If the session is deleted in between (a user
deletes the conversation while a reply is being written), ``InMemoryDb.upsert_session``
sees no stored session and inserts the incoming one "with whatever runs it carries":
every run the loaded copy held, deleted ones included. SqliteDb and PostgresDb write no
runs in ``upsert_session`` (runs live in their own table since agno 3), so only the new
run survives there.

Written against agno 3.1.10. Run: ``python agno-in-memory-delete-resurrects-runs.py``.
Exits 1 while the deleted runs come back, 0 when they do not.
"""

import sys
import time
import uuid

from agno.db.base import SessionType
from agno.db.in_memory import InMemoryDb
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


db = InMemoryDb()
save_run(db, AgentSession(session_id="s1", agent_id="a", user_id="ann"), "my card number")
loaded = db.get_session("s1", SessionType.AGENT, user_id="ann")  # a run starts
db.delete_session("s1", user_id="ann")  # the user deletes the conversation
assert db.get_session("s1", SessionType.AGENT, user_id="ann") is None
save_run(db, loaded, "hello")  # the run in flight ends
after = db.get_session("s1", SessionType.AGENT, user_id="ann")
texts = [m.content for run in after.runs for m in run.messages]
if "my card number" in texts:
    print(f"deleted run came back: after delete_session and one more run, the session "
          f"holds {texts}")
    sys.exit(1)
print(f"not reproduced: the session holds {texts}")
