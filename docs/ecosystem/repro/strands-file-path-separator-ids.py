"""``FileSessionManager`` refuses a session id with a path separator (``ann/1``,
``../ann``): the id names a directory.

It refuses before writing anything (``_identifier.validate``: ``ValueError: session_id=...
| id cannot contain path separators``), so an id cannot reach outside its session's
directory; the ``session_`` prefix keeps ``..`` inside the storage directory too. The
docstring of ``FileSessionManager.__init__`` says it: "ID is not allowed to contain path
separators (e.g., a/b)". An application whose session ids are user-chosen (an e-mail
address is fine, a path or a URL is not) must map them first. Written against
strands-agents 1.65.0.

Run::

    python strands-file-path-separator-ids.py
"""

import os
import sys
import tempfile
from importlib.metadata import version

from strands.session import FileSessionManager


def main() -> int:
    refused = []
    with tempfile.TemporaryDirectory() as root:
        storage = os.path.join(root, "sessions")
        for session_id in ("ann/1", "../ann"):
            try:
                FileSessionManager(session_id=session_id, storage_dir=storage)
            except ValueError as exc:
                refused.append(f"{session_id!r}: {exc}")
        outside = sorted(set(os.listdir(root)) - {"sessions"})
    if refused:
        print(f"strands-agents {version('strands-agents')}: FileSessionManager refused "
              f"{'; '.join(refused)} (nothing written outside the storage directory: "
              f"{outside or 'none'})")
        return 1
    print("not reproduced: both ids were accepted")
    return 0


sys.exit(main())
