"""langgraph-checkpoint-redis AsyncRedisStore: a second put of a key gives it a new created_at.

Written against langgraph-checkpoint-redis 0.5.2 (redisvl 0.27.0, Redis 8.2 with
RediSearch and RedisJSON). A put deletes the stored document and loads a new one
with ``created_at = now``, so updating an item (or retrying its write with the same
key and value) moves it after every item written since: ordering by ``created_at``,
the only order a ``BaseStore`` keeps, no longer follows creation.
``AsyncPostgresStore`` keeps ``created_at`` on an upsert.

    NOMNESIA_REPRO_REDIS=redis://127.0.0.1:6379 python langgraph-redis-put-resets-created-at.py
"""
# needs: redis

import asyncio
import os
import sys
import uuid

from langgraph.store.redis import AsyncRedisStore


async def main() -> int:
    prefix = f"repro_{uuid.uuid4().hex[:12]}"
    ns = ("mem", "ann")
    async with AsyncRedisStore.from_conn_string(
            os.environ["NOMNESIA_REPRO_REDIS"], store_prefix=prefix,
            vector_prefix=f"{prefix}_vectors") as store:
        try:
            async def created() -> dict[str, object]:
                # asearch, not aget: aget finds nothing in a two-label namespace here.
                return {i.key: i.created_at for i in await store.asearch(ns, limit=10)}

            await store.aput(ns, "a", {"text": "first"})
            first = (await created())["a"]
            await asyncio.sleep(0.01)
            await store.aput(ns, "b", {"text": "second"})
            await asyncio.sleep(0.01)
            await store.aput(ns, "a", {"text": "first"})  # the same write, retried
            now = await created()
            again = now["a"]
            order = sorted(now, key=lambda k: now[k])
        finally:
            await store.store_index.delete(drop=True)
    if again != first:
        print(f"re-putting key 'a' with the same value: created_at moved from {first} to "
              f"{again}; ordered by created_at the items are {order}, not ['a', 'b']")
        return 1
    print("not reproduced: a second put keeps the item's created_at")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
