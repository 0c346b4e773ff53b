"""Two requests that open a new Strands session at once: one of them fails with
``SessionException: Session ... already exists``.

``RepositorySessionManager.__init__`` calls ``read_session`` and, when it finds none,
``create_session``; the repositories' ``create_session`` refuses a session that exists
(``FileSessionManager``: its directory; ``ValkeySessionManager``: ``EXISTS``;
``strands-agents-session``'s ``KeyValueSessionManager``: a get), and the manager does not
read the session again. So of two first requests of one session (a user who sends twice,
two workers), the one that reads second raises instead of joining the session. This script
opens fresh sessions from two threads at once on ``FileSessionManager``, up to 200 times.
Written against strands-agents 1.65.0.

Run::

    python strands-session-create-race.py
"""

import sys
import tempfile
import threading
from importlib.metadata import version

from strands.session import FileSessionManager
from strands.types.exceptions import SessionException


def open_session(session_id: str, storage: str, start: threading.Barrier,
                 errors: list[str]) -> None:
    """One request's session manager, made when the other request's is."""
    start.wait()
    try:
        FileSessionManager(session_id=session_id, storage_dir=storage)
    except SessionException as exc:
        errors.append(str(exc))


def main() -> int:
    with tempfile.TemporaryDirectory() as storage:
        for attempt in range(1, 201):
            errors: list[str] = []
            start = threading.Barrier(2)
            threads = [threading.Thread(target=open_session,
                                        args=(f"s{attempt}", storage, start, errors))
                       for _ in range(2)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            if errors:
                print(f"strands-agents {version('strands-agents')}: two managers opening "
                      f"new session s{attempt} at once (try {attempt}): one raised "
                      f"SessionException: {errors[0]}")
                return 1
    print("not reproduced in 200 tries: every pair of first requests opened the session")
    return 0


sys.exit(main())
