"""RedisChatMessageHistory: a session reads and clears the messages of its case variant.

``session_id`` is indexed as a RediSearch TAG field with redisvl's defaults (not
case-sensitive), and ``messages``/``clear`` find a session's documents with
``@session_id:{<id>}`` without comparing the documents' own ``session_id``. So
the session ``"Ann"`` returns the messages of ``"ann"``, and ``clear()`` on
``"Ann"`` deletes them. Shown with a RESP2 client (``protocol=2``): with redis-py
8's default RESP3 the second history cannot be constructed at all
(langchain-redis-index-info-dict.py).
Written against langchain-redis 0.2.6, redisvl 0.27.0 and redis-py 8.1.0 on
Redis 8.2.

Run::

    NOMNESIA_REPRO_REDIS=redis://127.0.0.1:6379/0 \\
        python langchain-redis-session-tag-folded.py
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

    def history(session_id: str) -> RedisChatMessageHistory:
        return RedisChatMessageHistory(session_id, redis_client=client,
                                       key_prefix=f"{name}:", index_name=name)

    ann = history("ann")
    try:
        ann.add_messages([HumanMessage("ann's secret")])
        other = history("Ann")
        seen = [m.content for m in other.messages]
        other.clear()
        left = [m.content for m in ann.messages]
        head = f"langchain-redis {version('langchain-redis')}:"
        if seen:
            print(f"{head} session 'Ann' returned the messages of session 'ann': {seen}")
        if not left:
            print(f"{head} clear() on session 'Ann' deleted the messages of session 'ann'")
        if seen or not left:
            return 1
        print("not reproduced: session 'Ann' saw nothing of 'ann', and its clear() left "
              f"'ann' with {left}")
        return 0
    finally:
        ann.delete()  # FT.DROPINDEX ... DD: the index and its documents
        client.close()


sys.exit(main())
