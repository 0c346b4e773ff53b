"""``strands-agents-session``'s ``KeyValueSessionManager`` (``SQLSessionManager``) deletes a
session's messages only through its agent records: messages stored without one outlive
``delete_session``, and come back in the next session of that id.

``delete_session`` reads the session's partition (``SESSION#<id>``), deletes the message
partition of each ``AGENT#`` record it finds there, then the session's partition. A request
that restored the session before a delete and appends after it writes its message to
``SESSION#<id>#AGENT#<agent>`` with no session or agent record left to point to it; every
later ``delete_session`` finds no agent and leaves that message, and the next session of
the id lists it as its own. Written against strands-agents-session 0.2.0,
strands-session-sql 0.2.0 (strands-sql-session-manager 0.2.0) and strands-agents 1.65.0,
on SQLite.

Run::

    python strands-kv-delete-leaves-messages.py
"""

import sys
import tempfile
from importlib.metadata import version

from strands import Agent
from strands_sql_session_manager import SQLSessionManager


def request(url: str) -> tuple[SQLSessionManager, Agent]:
    manager = SQLSessionManager(session_id="s", url=url)
    return manager, Agent(agent_id="a", session_manager=manager, callback_handler=None)


def say(manager: SQLSessionManager, agent: Agent, text: str) -> None:
    """What the agent's MessageAddedEvent hook does when its turn adds a message."""
    manager.append_message({"role": "user", "content": [{"text": text}]}, agent)


def main() -> int:
    with tempfile.TemporaryDirectory() as where:
        url = f"sqlite:///{where}/sessions.db"
        manager, agent = request(url)
        say(manager, agent, "hello")
        busy, busy_agent = request(url)  # a request that restored the session ...
        manager.delete_session("s")  # ... while the user deletes it
        say(busy, busy_agent, "late reply")
        manager.delete_session("s")  # the user deletes the session again
        fresh, fresh_agent = request(url)  # and starts a new one with the same id
        say(fresh, fresh_agent, "new session")
        listed = [m.message["content"][0]["text"] for m in fresh.list_messages("s", "a")]
        for m in (manager, busy, fresh):
            m.storage.engine.dispose()
    if "late reply" in listed:
        print(f"strands-agents-session {version('strands-agents-session')}, strands-session-sql "
              f"{version('strands-session-sql')}: after two delete_session('s'), the new "
              f"session 's' lists {listed}: a deleted message is back")
        return 1
    print(f"not reproduced: the new session lists {listed}")
    return 0


sys.exit(main())
