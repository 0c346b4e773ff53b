"""RedisSession.get_items(limit=2**64) fails with a Redis error instead of returning the history.

``RedisSession.get_items`` reads the newest ``limit`` items with
``LRANGE key -limit -1``, the limit unclamped; Redis parses the start index as a
signed 64-bit integer, so any limit above 2**63 fails with ResponseError ("value is
not an integer or out of range"). Written against openai-agents 0.24.0 and
redis-py 8.1 on Redis 8.2.

Run::

    NOMNESIA_REPRO_REDIS=redis://127.0.0.1:6379/0 python agents-redis-limit-overflow.py
"""
# needs: redis

import asyncio
import os
import sys
import uuid
from importlib.metadata import version

import redis.asyncio as redis
from agents.extensions.memory import RedisSession

URL = os.environ["NOMNESIA_REPRO_REDIS"]


async def main() -> int:
    client = redis.from_url(URL)
    prefix = f"repro_{uuid.uuid4().hex[:12]}"
    session = RedisSession("repro", redis_client=client, key_prefix=prefix)
    try:
        await session.add_items([{"role": "user", "content": "hello"}])
        items = await session.get_items(limit=2**63 - 1)
        print(f"get_items(limit=2**63 - 1) returned {len(items)} item(s)")
        try:
            items = await session.get_items(limit=2**64)
        except Exception as exc:
            print(f"openai-agents {version('openai-agents')}: RedisSession.get_items("
                  f"limit=2**64) raised {type(exc).__name__}: {exc}")
            return 1
        print(f"not reproduced: get_items(limit=2**64) returned {len(items)} item(s)")
        return 0
    finally:
        keys = [key async for key in client.scan_iter(match=f"{prefix}:*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()


sys.exit(asyncio.run(main()))
