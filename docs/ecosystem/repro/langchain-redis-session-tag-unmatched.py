"""RedisChatMessageHistory: messages of some session ids are stored but never found.

``messages`` finds a session's documents with ``@session_id:{<id>}`` on a
RediSearch TAG field, the id escaped by redisvl's ``TokenEscaper`` (ASCII
punctuation and the space only). RediSearch trims whitespace from tag values
when it indexes them, and the escaper leaves a tab, control characters and the
backtick alone, so for ids such as ``"ann "``, ``"ann\\tb"`` or ``"`tick`"`` the
query spells another tag: ``add_messages`` stores the messages and ``messages``
returns ``[]`` (``clear`` does not delete them either). Shown with a RESP2 client
(``protocol=2``): with redis-py 8's default RESP3 the class fails earlier
(langchain-redis-index-info-dict.py).
Written against langchain-redis 0.2.6, redisvl 0.27.0 and redis-py 8.1.0 on
Redis 8.2.

Run::

    NOMNESIA_REPRO_REDIS=redis://127.0.0.1:6379/0 \\
        python langchain-redis-session-tag-unmatched.py
"""
# needs: redis

import os
import sys
import uuid
import warnings
from importlib.metadata import version

from langchain_core.messages import HumanMessage
from langchain_redis import RedisChatMessageHistory
from redis import Redis

URL = os.environ["NOMNESIA_REPRO_REDIS"]
warnings.simplefilter("ignore")  # the class is deprecated since 0.2.6; it still ships


def main() -> int:
    name = f"repro_{uuid.uuid4().hex}"
    client = Redis.from_url(URL, protocol=2)
    histories = []
    try:
        lost = []
        for session_id in ("ann ", " ann", "ann\tb", "`tick`"):
            history = RedisChatMessageHistory(session_id, redis_client=client,
                                              key_prefix=f"{name}:", index_name=name)
            histories.append(history)
            history.add_messages([HumanMessage(f"note of {session_id!r}")])
            if not history.messages:
                lost.append(session_id)
        if lost:
            print(f"langchain-redis {version('langchain-redis')}: for session ids "
                  f"{lost} messages returned nothing after add_messages stored a message")
            return 1
        print("not reproduced: every session read back its message")
        return 0
    finally:
        if histories:
            histories[0].delete()  # FT.DROPINDEX ... DD: the index and its documents
        client.close()


sys.exit(main())
