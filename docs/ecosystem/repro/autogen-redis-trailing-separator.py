"""AutoGen ``RedisMemory`` whose prefix ends in '::' stores entries that it never reads back.

``RedisMemory`` hands its ``prefix`` to redisvl's ``MessageHistory``, which
creates the RediSearch index over that prefix as given
(``MessageHistorySchema.from_params``), but writes each entry under a key made
by ``BaseStorage._key``, which strips every key separator (':') from the end of
the prefix and adds one back. For a prefix that ends in two or more ':' (one
memory per user under ``mem:`` + the user id, for a user id ending in ':', such
as ``ann::`` or ``::``) the keys fall outside the index (and inside the index of
the shorter prefix, ``mem:ann``): ``add`` returns normally, the entry is in
Redis, and ``query`` returns nothing. Written against autogen-ext 0.7.5, redisvl
0.27 and redis-py 8.2 on Redis 8.2 with RediSearch.

Run::

    NOMNESIA_REPRO_REDIS=redis://127.0.0.1:6379/0 \\
        python autogen-redis-trailing-separator.py
"""
# needs: redis

import asyncio
import os
import sys
import uuid
from importlib.metadata import version

from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_ext.memory.redis import RedisMemory, RedisMemoryConfig
from redis import Redis

URL = os.environ["NOMNESIA_REPRO_REDIS"]


async def main() -> int:
    base = f"repro_{uuid.uuid4().hex[:8]}"
    name = f"{base}:mem:ann::"  # the memory of user 'ann::'
    memory = RedisMemory(RedisMemoryConfig(redis_url=URL, index_name=name, prefix=name,
                                           sequential=True))
    try:
        await memory.add(MemoryContent(content="prefers tea", mime_type=MemoryMimeType.TEXT))
        read = [str(c.content) for c in (await memory.query("")).results]
        with Redis.from_url(URL) as client:
            keys = sorted(k.decode() for k in client.scan_iter(match=f"{base}:*"))
    finally:
        await memory.close()
        with Redis.from_url(URL) as client:
            for key in client.scan_iter(match=f"{base}:*"):
                client.delete(key)
    if keys and not read:
        print(f"autogen-ext {version('autogen-ext')}, redisvl {version('redisvl')}: add() to "
              f"the memory with prefix {name!r} returned; query() reads {read}, the entry is "
              f"under {keys[0]!r}, outside the index")
        return 1
    print(f"not reproduced: query() read {read}")
    return 0


sys.exit(asyncio.run(main()))
