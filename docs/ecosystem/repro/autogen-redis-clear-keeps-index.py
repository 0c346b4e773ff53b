"""AutoGen ``RedisMemory.clear()`` keeps the memory's index, whose name is the team's key.

``RedisMemory.clear()`` deletes the entries and keeps the RediSearch index
(``MessageHistory.clear``: "Delete every message, leaving the index in place");
only ``close()`` drops it. A memory per user is named after the user
(``index_name=f"mem:{user_id}"``), so after the user's memory is cleared Redis
still lists an index named after them (``FT._LIST``): forgetting a user with
``clear()`` leaves the user id in the engine. Documented behaviour, a hazard for
erasure. Written against autogen-ext 0.7.5, redisvl 0.27 and redis-py 8.2 on
Redis 8.2 with RediSearch.

Run::

    NOMNESIA_REPRO_REDIS=redis://127.0.0.1:6379/0 \\
        python autogen-redis-clear-keeps-index.py
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
    name = f"repro_{uuid.uuid4().hex[:8]}:mem:ann"
    memory = RedisMemory(RedisMemoryConfig(redis_url=URL, index_name=name, prefix=name,
                                           sequential=True))
    try:
        await memory.add(MemoryContent(content="prefers tea", mime_type=MemoryMimeType.TEXT))
        await memory.clear()
        left = len((await memory.query("")).results)
        with Redis.from_url(URL) as client:
            indexes = [i.decode() if isinstance(i, bytes) else str(i)
                       for i in client.execute_command("FT._LIST")]
    finally:
        await memory.close()
    if name in indexes:
        print(f"autogen-ext {version('autogen-ext')}: after clear() the memory holds {left} "
              f"entries, and Redis still lists the index {name!r} named after the user")
        return 1
    print("not reproduced: clear() dropped the index too")
    return 0


sys.exit(asyncio.run(main()))
