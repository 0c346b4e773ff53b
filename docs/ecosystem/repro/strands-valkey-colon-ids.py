"""``ValkeySessionManager`` refuses a session id with ``:`` (``user:ann``), the separator of
its keys.

It refuses before writing anything (``ValueError: session_id cannot contain ':'
characters``), as the docstring of ``_get_session_key`` says ("Raises: ValueError: If
session_id contains colon characters"): an application whose session ids may hold a ``:``
(a namespaced id, a URN) must map them first. Written against
strands-valkey-session-manager 0.1.0 and strands-agents 1.65.0.

Run::

    NOMNESIA_REPRO_REDIS=redis://127.0.0.1:6379/0 python strands-valkey-colon-ids.py
"""
# needs: redis

import os
import sys
from importlib.metadata import version

import valkey
from strands_valkey_session_manager import ValkeySessionManager


def main() -> int:
    client = valkey.Valkey.from_url(os.environ["NOMNESIA_REPRO_REDIS"])
    try:
        ValkeySessionManager(session_id="user:ann", client=client)
    except ValueError as exc:
        print(f"strands-valkey-session-manager {version('strands-valkey-session-manager')}: "
              f"refused 'user:ann': {exc}")
        return 1
    finally:
        client.close()
    print("not reproduced: 'user:ann' was accepted")
    return 0


sys.exit(main())
