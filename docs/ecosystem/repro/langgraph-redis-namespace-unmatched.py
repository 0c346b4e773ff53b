"""langgraph-checkpoint-redis AsyncRedisStore: items under some namespace labels are never found.

Written against langgraph-checkpoint-redis 0.5.2 (redisvl 0.27.0, Redis 8.2 with
RediSearch and RedisJSON). The namespace is stored in a RediSearch TEXT field and
looked up with a full-text query built by ``_namespace_to_text``, which escapes ASCII
punctuation only. A label that RediSearch tokenises differently from what the query
spells (an emoji, a tab, 'İ') is written, but ``asearch`` of its own namespace finds
nothing.

    NOMNESIA_REPRO_REDIS=redis://127.0.0.1:6379 python langgraph-redis-namespace-unmatched.py
"""
# needs: redis

import asyncio
import os
import sys
import uuid

from langgraph.store.redis import AsyncRedisStore

LABELS = ["🧠", "ann\tb", "İstanbul"]


async def main() -> int:
    prefix = f"repro_{uuid.uuid4().hex[:12]}"
    lost = []
    async with AsyncRedisStore.from_conn_string(
            os.environ["NOMNESIA_REPRO_REDIS"], store_prefix=prefix,
            vector_prefix=f"{prefix}_vectors") as store:
        try:
            for label in LABELS:
                await store.aput(("mem", label), "k", {"text": "note"})
                if not await store.asearch(("mem", label), limit=10):
                    lost.append(label)
        finally:
            await store.store_index.delete(drop=True)
    for label in lost:
        print(f"aput(('mem', {label!r}), ...) returned, then asearch found nothing")
    if not lost:
        print(f"not reproduced: asearch finds the item of every label in {LABELS!r}")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
