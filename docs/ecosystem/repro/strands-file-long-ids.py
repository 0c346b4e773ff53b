"""``FileSessionManager`` cannot store a session whose id is longer than about 247 bytes:
``OSError: [Errno 36] File name too long``.

The session's directory is ``session_<session id>``, and a file system limits one name to
255 bytes (``NAME_MAX``); nothing shortens or hashes a long id, and nothing documents a
limit. 256 ASCII characters fail, and so do 64 four-byte emoji. The error comes before
anything is written. Written against strands-agents 1.65.0.

Run::

    python strands-file-long-ids.py
"""

import sys
import tempfile
from importlib.metadata import version

from strands.session import FileSessionManager


def main() -> int:
    failed = []
    with tempfile.TemporaryDirectory() as storage:
        for session_id in ("u" * 256, "\N{BRAIN}" * 64):
            try:
                FileSessionManager(session_id=session_id, storage_dir=storage)
            except OSError as exc:
                failed.append(f"{len(session_id)} characters: {exc.strerror}")
    if failed:
        print(f"strands-agents {version('strands-agents')}: FileSessionManager could not "
              f"create sessions with ids of {'; '.join(failed)}")
        return 1
    print("not reproduced: both long ids were stored")
    return 0


sys.exit(main())
