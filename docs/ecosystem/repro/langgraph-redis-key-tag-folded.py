"""langgraph-checkpoint-redis AsyncRedisStore: a put of key 'Ann' deletes the item with key 'ann'.

Written against langgraph-checkpoint-redis 0.5.2 (redisvl 0.27.0, Redis 8.2 with
RediSearch and RedisJSON). The store's RediSearch index declares the item ``key`` as
a TAG field with the defaults, which are case-insensitive (and RediSearch trims
whitespace around tag values). Every put and delete first deletes whatever
``@prefix:<namespace> @key:{<key>}`` finds, so a put of key ``"Ann"`` (or ``"ann "``)
deletes the item stored under key ``"ann"`` in the same namespace, and a put of
``"y\\n"`` (a newline the escaper leaves alone) deletes the item ``"y "``.

    NOMNESIA_REPRO_REDIS=redis://127.0.0.1:6379 python langgraph-redis-key-tag-folded.py
"""
# needs: redis

import asyncio
import os
import sys
import uuid

from langgraph.store.redis import AsyncRedisStore


async def main() -> int:
    prefix = f"repro_{uuid.uuid4().hex[:12]}"
    ns = ("mem", "bob")
    async with AsyncRedisStore.from_conn_string(
            os.environ["NOMNESIA_REPRO_REDIS"], store_prefix=prefix,
            vector_prefix=f"{prefix}_vectors") as store:
        try:
            await store.aput(ns, "ann", {"text": "first"})
            await store.aput(ns, "Ann", {"text": "second"})
            await store.aput(ns, "y ", {"text": "third"})
            await store.aput(ns, "y\n", {"text": "fourth"})
            # asearch, not aget: aget finds nothing in a two-label namespace here.
            kept = {i.key for i in await store.asearch(ns, limit=10)}
            lost = [k for k in ("ann", "Ann", "y ", "y\n") if k not in kept]
        finally:
            await store.store_index.delete(drop=True)
    if lost:
        print(f"four distinct keys were put in {ns}; a later put deleted the item with key "
              f"{', '.join(repr(k) for k in lost)} (asearch no longer lists it)")
        return 1
    print("not reproduced: keys differing in case or whitespace are distinct items")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
