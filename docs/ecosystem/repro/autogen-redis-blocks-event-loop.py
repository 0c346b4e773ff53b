"""AutoGen ``RedisMemory``'s ``async`` methods block the event loop on a synchronous client.

``RedisMemory.add``/``query``/``clear`` are coroutines, but each calls redisvl's
``MessageHistory`` over redis-py's synchronous ``Redis`` client
(``RedisMemory.__init__``: ``Redis.from_url``) with no thread in between. While
Redis is slow to answer, the whole event loop stands still: no other task runs,
and ``asyncio.wait_for(memory.add(...), 0.2)`` cannot time out, it returns when
Redis answers. Redis is made slow here with its own ``CLIENT PAUSE 2000 WRITE``
(a failover, a long command or a network stall look the same). Written against
autogen-ext 0.7.5, redisvl 0.27 and redis-py 8.2 on Redis 8.2 with RediSearch.

Run::

    NOMNESIA_REPRO_REDIS=redis://127.0.0.1:6379/0 \\
        python autogen-redis-blocks-event-loop.py
"""
# needs: redis

import asyncio
import os
import sys
import time
import uuid
from importlib.metadata import version

from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_ext.memory.redis import RedisMemory, RedisMemoryConfig
from redis import Redis

URL = os.environ["NOMNESIA_REPRO_REDIS"]


async def main() -> int:
    name = f"repro_{uuid.uuid4().hex[:8]}:ann"
    memory = RedisMemory(RedisMemoryConfig(redis_url=URL, index_name=name, prefix=name,
                                           sequential=True))
    ticks: list[float] = []

    async def heartbeat() -> None:
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.01)

    beat = asyncio.create_task(heartbeat())
    try:
        await asyncio.sleep(0.05)
        with Redis.from_url(URL) as admin:
            admin.execute_command("CLIENT", "PAUSE", "2000", "WRITE")
        started = time.monotonic()
        try:
            await asyncio.wait_for(memory.add(MemoryContent(
                content="a note", mime_type=MemoryMimeType.TEXT)), 0.2)
            outcome = "returned"
        except TimeoutError:
            outcome = "timed out"
        took = time.monotonic() - started
        gap = max(b - a for a, b in zip(ticks, [*ticks[1:], time.monotonic()], strict=True))
    finally:
        beat.cancel()
        with Redis.from_url(URL) as admin:
            admin.execute_command("CLIENT", "UNPAUSE")
        await memory.close()
    if gap > 1.0:
        print(f"autogen-ext {version('autogen-ext')}: RedisMemory.add under "
              f"asyncio.wait_for(..., 0.2) {outcome} after {took:.1f} s; the event loop "
              f"did not run for {gap:.1f} s (a heartbeat every 10 ms stood still)")
        return 1
    print(f"not reproduced: add {outcome} after {took:.1f} s, the loop's longest gap "
          f"{gap:.2f} s")
    return 0


sys.exit(asyncio.run(main()))
