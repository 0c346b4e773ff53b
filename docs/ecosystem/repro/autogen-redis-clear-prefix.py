"""AutoGen ``RedisMemory.clear()`` for one memory deletes other memories' entries.

A ``RedisMemory`` is redisvl's ``MessageHistory`` on a RediSearch index over the
key prefix ``RedisMemoryConfig.prefix``. ``RedisMemory.clear()`` is
``MessageHistory.clear()``, which is ``SearchIndex.clear()``: it deletes every
document the *index* covers. A RediSearch prefix is a plain string prefix, so
the index of prefix ``mem:ann`` also covers the keys of the memories with
prefixes ``mem:anna`` and ``mem:ann:1`` (redisvl writes ``<prefix>:<ulid>``):
clearing ann's memory deletes anna's and ``ann:1``'s, though each reads only
its own (the read is filtered by its own session tag). Written against
autogen-ext 0.7.5, redisvl 0.27 and redis-py 8.2 on Redis 8.2 with RediSearch.

Run::

    NOMNESIA_REPRO_REDIS=redis://127.0.0.1:6379/0 python autogen-redis-clear-prefix.py
"""
# needs: redis

import asyncio
import os
import sys
import uuid
from importlib.metadata import version

from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_ext.memory.redis import RedisMemory, RedisMemoryConfig

URL = os.environ["NOMNESIA_REPRO_REDIS"]


def memory(name: str) -> RedisMemory:
    return RedisMemory(RedisMemoryConfig(redis_url=URL, index_name=name, prefix=name,
                                         sequential=True))


async def texts(m: RedisMemory) -> list[str]:
    return [str(c.content) for c in (await m.query("")).results]


async def main() -> int:
    base = f"repro_{uuid.uuid4().hex[:8]}:mem"
    users = {u: memory(f"{base}:{u}") for u in ("ann", "anna", "ann:1")}
    try:
        for user, m in users.items():
            await m.add(MemoryContent(content=f"{user}'s note", mime_type=MemoryMimeType.TEXT))
        before = {u: await texts(m) for u, m in users.items()}
        await users["ann"].clear()
        after = {u: await texts(m) for u, m in users.items()}
    finally:
        for m in users.values():
            await m.close()
    lost = [u for u in ("anna", "ann:1") if before[u] and not after[u]]
    if lost:
        print(f"autogen-ext {version('autogen-ext')}, redisvl {version('redisvl')}: clear() of "
              f"the memory with prefix '{base}:ann' deleted the entries of {lost}: before "
              f"{before}, after {after}")
        return 1
    print(f"not reproduced: after ann's clear(): {after}")
    return 0


sys.exit(asyncio.run(main()))
