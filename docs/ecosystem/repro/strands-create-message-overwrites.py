"""Two Strands session managers on one session append at the same index, and the second
``create_message`` silently replaces the first one's message.

``RepositorySessionManager.append_message`` takes the next index from the last message
*it* knows of (read once, in ``initialize``), and the repositories' ``create_message``
writes that index whatever is there: ``FileSessionManager`` replaces
``message_<index>.json`` (``os.replace``), ``ValkeySessionManager`` runs ``JSON.SET``, and
``strands-agents-session``'s ``KeyValueSessionManager`` (``SQLSessionManager``) upserts.
So two requests served at once for one session id (two workers, two processes, a retry
while the first is still running) each store their turn at the same index, and one turn
is gone without an error. This script shows it on ``FileSessionManager``; written against
strands-agents 1.65.0.

Run::

    python strands-create-message-overwrites.py
"""

import sys
import tempfile
from importlib.metadata import version

from strands import Agent
from strands.session import FileSessionManager


def request(storage: str) -> tuple[FileSessionManager, Agent]:
    """What a server does for one request of session ``s``: a session manager, an agent."""
    manager = FileSessionManager(session_id="s", storage_dir=storage)
    return manager, Agent(agent_id="a", session_manager=manager, callback_handler=None)


def main() -> int:
    with tempfile.TemporaryDirectory() as storage:
        first, agent1 = request(storage)
        second, agent2 = request(storage)  # a second request for the same session
        # What each agent's MessageAddedEvent hook does when its turn adds a message:
        first.append_message({"role": "user", "content": [{"text": "turn of request 1"}]},
                             agent1)
        second.append_message({"role": "user", "content": [{"text": "turn of request 2"}]},
                              agent2)
        stored = [m.message["content"][0]["text"] for m in first.list_messages("s", "a")]
    if stored != ["turn of request 1", "turn of request 2"]:
        print(f"strands-agents {version('strands-agents')}: two appends to session 's' "
              f"returned, and the session holds {stored}: the first turn was overwritten "
              "at index 0")
        return 1
    print(f"not reproduced: the session holds {stored}")
    return 0


sys.exit(main())
