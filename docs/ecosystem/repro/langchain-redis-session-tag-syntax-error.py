"""RedisChatMessageHistory: some session ids make every read a RediSearch syntax error.

``messages`` and ``clear`` query ``@session_id:{<id>}``, the id escaped by
redisvl's ``TokenEscaper``, which leaves ``|``, ``_``, newlines and DEL alone.
For ids such as ``"ann || true"``, ``"_"`` or ``"\\n"`` the query does not parse:
``add_messages`` stores the messages, then ``messages`` raises
``RedisSearchError: ... Syntax error``. Shown with a RESP2 client
(``protocol=2``): with redis-py 8's default RESP3 the class fails earlier
(langchain-redis-index-info-dict.py).
Written against langchain-redis 0.2.6, redisvl 0.27.0 and redis-py 8.1.0 on
Redis 8.2.

Run::

    NOMNESIA_REPRO_REDIS=redis://127.0.0.1:6379/0 \\
        python langchain-redis-session-tag-syntax-error.py
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
from redisvl.exceptions import RedisSearchError

URL = os.environ["NOMNESIA_REPRO_REDIS"]
warnings.simplefilter("ignore")  # the class is deprecated since 0.2.6; it still ships


def main() -> int:
    name = f"repro_{uuid.uuid4().hex}"
    client = Redis.from_url(URL, protocol=2)
    histories = []
    try:
        failed = []
        for session_id in ("ann || true", "_", "\n", "\x7f"):
            history = RedisChatMessageHistory(session_id, redis_client=client,
                                              key_prefix=f"{name}:", index_name=name)
            histories.append(history)
            history.add_messages([HumanMessage("hello")])
            try:
                _ = history.messages  # the read runs the FT.SEARCH query
            except RedisSearchError as exc:
                failed.append((session_id, str(exc).splitlines()[0]))
        if failed:
            for session_id, error in failed:
                print(f"langchain-redis {version('langchain-redis')}: messages of session "
                      f"{session_id!r} raised RedisSearchError: {error}")
            return 1
        print("not reproduced: every session's messages were read")
        return 0
    finally:
        if histories:
            histories[0].delete()  # FT.DROPINDEX ... DD: the index and its documents
        client.close()


sys.exit(main())
