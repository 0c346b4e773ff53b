"""A ``FileSessionManager`` session deleted while another request appends to it can never
be opened again: every new session manager for that id raises "already exists".

``FileSessionManager.delete_session`` removes the session's directory (``shutil.rmtree``);
a request that had already restored the session then appends, and ``_write_file`` makes the
message's directories again (``os.makedirs(..., exist_ok=True)``), without
``session.json``. ``read_session`` then finds no session, and ``create_session`` refuses
because the directory exists, so ``RepositorySessionManager.__init__`` raises
``SessionException`` for every later request of that session id, until someone deletes it
again. Concurrent deletes, reads and appends also raise ``FileNotFoundError`` (rmtree of a
directory another call is emptying), ``OSError: Directory not empty`` (rmtree while a
message is written) and "Messages directory missing" (a restore between a delete's steps).
Written against strands-agents 1.65.0.

Run::

    python strands-file-delete-wedges-session.py
"""

import sys
import tempfile
from importlib.metadata import version

from strands import Agent
from strands.session import FileSessionManager
from strands.types.exceptions import SessionException


def request(storage: str) -> tuple[FileSessionManager, Agent]:
    manager = FileSessionManager(session_id="s", storage_dir=storage)
    return manager, Agent(agent_id="a", session_manager=manager, callback_handler=None)


def main() -> int:
    with tempfile.TemporaryDirectory() as storage:
        manager, agent = request(storage)
        manager.append_message({"role": "user", "content": [{"text": "hello"}]}, agent)
        busy, busy_agent = request(storage)  # a request that restored the session ...
        manager.delete_session("s")  # ... while the user deletes it
        busy.append_message({"role": "assistant", "content": [{"text": "hi"}]}, busy_agent)
        try:
            request(storage)  # the user's next request for the session
        except SessionException as exc:
            print(f"strands-agents {version('strands-agents')}: after a delete_session "
                  f"concurrent with an append, a new FileSessionManager for the session "
                  f"raises SessionException: {exc}")
            return 1
    print("not reproduced: the session opens again after the delete")
    return 0


sys.exit(main())
