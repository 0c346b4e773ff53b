"""``ValkeySessionManager`` puts session ids into ``SCAN MATCH`` patterns unescaped: a session
reads other sessions' messages, and deleting one session deletes others.

``list_messages`` scans ``session:<id>:agent:<agent>:message:*`` and ``delete_session``
scans ``session:<id>*``, both with the id as it is. In a pattern ``*``, ``?``, ``[...]`` and
``\\`` are syntax, so the session ``ann*`` lists the messages of ``ann`` and ``anna`` as its
own, a session whose id holds a backslash finds none of its own messages, and since the
delete's pattern ends in ``*`` with no separator, deleting ``ann`` also deletes ``anna``
(every session whose id starts with ``ann``). Written against
strands-valkey-session-manager 0.1.0 and strands-agents 1.65.0, on Redis 8.2 with RedisJSON
(the manager stores records with ``JSON.SET``).

Run::

    NOMNESIA_REPRO_REDIS=redis://127.0.0.1:6379/0 python strands-valkey-key-patterns.py
"""
# needs: redis

import os
import sys
import uuid
from importlib.metadata import version

import valkey
from strands import Agent
from strands_valkey_session_manager import ValkeySessionManager

client = valkey.Valkey.from_url(os.environ["NOMNESIA_REPRO_REDIS"])
base = f"repro{uuid.uuid4().hex[:8]}"


def say(session_id: str, text: str) -> ValkeySessionManager:
    """One request of ``session_id`` whose agent adds one message."""
    manager = ValkeySessionManager(session_id=session_id, client=client)
    agent = Agent(agent_id="a", session_manager=manager, callback_handler=None)
    manager.append_message({"role": "user", "content": [{"text": text}]}, agent)
    return manager


def texts(manager: ValkeySessionManager, session_id: str) -> list[str]:
    return [m.message["content"][0]["text"] for m in manager.list_messages(session_id, "a")]


def main() -> int:
    ann, anna, star = f"{base}ann", f"{base}anna", f"{base}ann*"
    try:
        manager = say(ann, "ann's note")
        say(anna, "anna's note")
        say(star, "ann*'s note")
        leaked = texts(manager, star)
        manager.delete_session(ann)
        anna_after = texts(manager, anna)
    finally:
        for key in client.scan_iter(match=f"session:{base}*"):
            client.delete(key)
        client.close()
    problems = []
    if leaked != ["ann*'s note"]:
        problems.append(f"session '{star}' lists {leaked}")
    if anna_after != ["anna's note"]:
        problems.append(f"after delete_session('{ann}'), session '{anna}' lists {anna_after}")
    if problems:
        print(f"strands-valkey-session-manager {version('strands-valkey-session-manager')}: "
              + "; ".join(problems))
        return 1
    print("not reproduced: each session lists its own messages, and a delete keeps others")
    return 0


sys.exit(main())
