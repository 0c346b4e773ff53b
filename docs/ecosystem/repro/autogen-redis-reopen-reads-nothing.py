"""AutoGen ``RedisMemory``: a second memory with the same configuration reads nothing.

``RedisMemory.__init__`` makes redisvl's ``MessageHistory`` without a
``session_tag``, so redisvl tags every entry with a ULID made for that Python
object (``BaseMessageHistory.__init__``: ``session_tag or create_ulid()``) and
``query`` reads only that tag. An application that makes its ``RedisMemory``
again with the same ``RedisMemoryConfig`` (a restart, a second worker) reads
none of what the first stored, though it is all still in Redis (and a
``clear()`` of the new object deletes it). ``RedisMemoryConfig`` has no field to
pass a tag. Written against autogen-ext 0.7.5, redisvl 0.27 and redis-py 8.2 on
Redis 8.2 with RediSearch.

Run::

    NOMNESIA_REPRO_REDIS=redis://127.0.0.1:6379/0 \\
        python autogen-redis-reopen-reads-nothing.py
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
    name = f"repro_{uuid.uuid4().hex[:8]}:ann"
    config = RedisMemoryConfig(redis_url=URL, index_name=name, prefix=name, sequential=True)
    first = RedisMemory(config)
    try:
        for fact in ("prefers metric units", "is vegan"):
            await first.add(MemoryContent(content=fact, mime_type=MemoryMimeType.TEXT))
        read_first = [str(c.content) for c in (await first.query("")).results]
        second = RedisMemory(config)  # the same configuration: the app after a restart
        read_second = [str(c.content) for c in (await second.query("")).results]
        with Redis.from_url(URL) as client:
            keys = len(list(client.scan_iter(match=f"{name}:*")))
    finally:
        await first.close()  # drops the index and its documents
    if read_first and not read_second:
        print(f"autogen-ext {version('autogen-ext')}, redisvl {version('redisvl')}: the first "
              f"RedisMemory reads {read_first}; a second one with the same config reads "
              f"{read_second}, though Redis still holds {keys} keys under the prefix")
        return 1
    print(f"not reproduced: the second RedisMemory read {read_second}")
    return 0


sys.exit(asyncio.run(main()))
