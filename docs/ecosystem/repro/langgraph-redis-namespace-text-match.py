"""langgraph-checkpoint-redis AsyncRedisStore: one namespace's reads and writes reach another's.

Written against langgraph-checkpoint-redis 0.5.2 (redisvl 0.27.0, Redis 8.2 with
RediSearch and RedisJSON). ``AsyncRedisStore`` finds a namespace's items with a
full-text query on a TEXT field (``@prefix:<namespace>*``) and never checks the
namespace of what comes back, so ``asearch(("mem", "ann"))`` also returns the items
of ``("mem", "anna")`` and ``("mem", "Ann")``. The delete that precedes every put
uses the same kind of query (``@prefix:<namespace> @key:{<key>}``), so a put in
``("mem", "Bob")`` deletes the item with the same key in ``("mem", "bob")``.

    NOMNESIA_REPRO_REDIS=redis://127.0.0.1:6379 python langgraph-redis-namespace-text-match.py
"""
# needs: redis

import asyncio
import os
import sys
import uuid

from langgraph.store.redis import AsyncRedisStore


async def main() -> int:
    prefix = f"repro_{uuid.uuid4().hex[:12]}"
    async with AsyncRedisStore.from_conn_string(
            os.environ["NOMNESIA_REPRO_REDIS"], store_prefix=prefix,
            vector_prefix=f"{prefix}_vectors") as store:
        try:
            await store.aput(("mem", "ann"), "a1", {"text": "ann's note"})
            await store.aput(("mem", "anna"), "a2", {"text": "anna's note"})
            await store.aput(("mem", "Ann"), "a3", {"text": "Ann's note"})
            found = sorted(i.namespace[-1] for i in await store.asearch(("mem", "ann"), limit=10))
            await store.aput(("mem", "bob"), "same", {"text": "bob's note"})
            await store.aput(("mem", "Bob"), "same", {"text": "Bob's note"})
            bob = await store.aget(("mem", "bob"), "same")
        finally:
            await store.store_index.delete(drop=True)
    defects = []
    if found != ["ann"]:
        defects.append(f"asearch(('mem', 'ann')) returned the items of {found}")
    if bob is None:
        defects.append("aput(('mem', 'Bob'), 'same', ...) deleted the item of ('mem', 'bob')")
    for line in defects:
        print(line)
    if not defects:
        print("not reproduced: each namespace sees and changes only its own items")
    return 1 if defects else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
