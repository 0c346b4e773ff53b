"""langgraph-checkpoint-redis AsyncRedisStore: asearch(limit=2**31) raises RedisSearchError.

Written against langgraph-checkpoint-redis 0.5.2 (redisvl 0.27.0, Redis 8.2 with
RediSearch and RedisJSON). ``asearch`` passes ``limit`` straight into the
RediSearch query (``LIMIT offset limit``, and ``KNN limit`` with a query), and
RediSearch refuses a LIMIT above its result cap (``MAXSEARCHRESULTS``, 1,000,000 by
default): a search for "everything" fails instead of returning the stored items.

    NOMNESIA_REPRO_REDIS=redis://127.0.0.1:6379 python langgraph-redis-limit-over-million.py
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
    error = None
    async with AsyncRedisStore.from_conn_string(
            os.environ["NOMNESIA_REPRO_REDIS"], store_prefix=prefix,
            vector_prefix=f"{prefix}_vectors") as store:
        try:
            await store.aput(ns, "a", {"text": "first"})
            try:
                found = await store.asearch(ns, limit=2**31)
            except Exception as exc:  # the point is which error
                error = f"{type(exc).__name__}: {exc}"
        finally:
            await store.store_index.delete(drop=True)
    if error is not None:
        print(f"asearch({ns}, limit=2**31) over one stored item raised {error}")
        return 1
    print(f"not reproduced: asearch(limit=2**31) returned {len(found)} item(s)")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
