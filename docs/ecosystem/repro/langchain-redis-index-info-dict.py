"""RedisChatMessageHistory cannot be constructed twice on one index with redis-py 8.

The constructor (``_create_search_index``) reads ``FT.INFO`` of its index, if it
exists, to warn about a different key prefix, and parses ``index_definition`` as
the flat RESP2 list (``index_definition.index("prefixes")``), catching only
``ValueError``/``IndexError``/``ResponseError``/``RedisSearchError``. redis-py 8
speaks RESP3 by default and returns ``index_definition`` as a dict, so the second
history object on an index (every history after the first: another session, or
the same session on the next request) raises ``AttributeError: 'dict' object has
no attribute 'index'``, and the history cannot be used at all.
Written against langchain-redis 0.2.6, redisvl 0.27.0 and redis-py 8.1.0 on
Redis 8.2.

Run::

    NOMNESIA_REPRO_REDIS=redis://127.0.0.1:6379/0 \\
        python langchain-redis-index-info-dict.py
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
    client = Redis.from_url(URL)  # redis-py's defaults, as the class's own redis_url= does
    first = RedisChatMessageHistory("ann", redis_client=client, key_prefix=f"{name}:",
                                    index_name=name)
    try:
        first.add_messages([HumanMessage("hello")])
        try:
            second = RedisChatMessageHistory("bob", redis_client=client,
                                             key_prefix=f"{name}:", index_name=name)
        except AttributeError as exc:
            print(f"langchain-redis {version('langchain-redis')} with redis-py "
                  f"{version('redis')}: the second RedisChatMessageHistory on an existing "
                  f"index raised AttributeError: {exc}")
            return 1
        second.add_messages([HumanMessage("hi")])
        print(f"not reproduced: a second history on index {name} was made and used "
              f"({len(second.messages)} message)")
        return 0
    finally:
        first.delete()  # FT.DROPINDEX ... DD: the index and its documents
        client.close()


sys.exit(main())
