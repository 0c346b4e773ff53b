"""langgraph-checkpoint-redis AsyncRedisStore: some namespace labels make queries a syntax error.

Written against langgraph-checkpoint-redis 0.5.2 (redisvl 0.27.0, Redis 8.2 with
RediSearch and RedisJSON). ``_namespace_to_text`` escapes the label with redisvl's
``TokenEscaper``, which leaves '|', '`', newlines and DEL alone; the result goes into
a RediSearch query string, so ``aput`` (its delete-before-put query) or ``asearch``
raises ``RedisSearchError: Syntax error``.

    NOMNESIA_REPRO_REDIS=redis://127.0.0.1:6379 python langgraph-redis-namespace-syntax-error.py
"""
# needs: redis

import asyncio
import os
import sys
import uuid

from langgraph.store.redis import AsyncRedisStore

LABELS = ["ann || true", "`tick`", "ann\n"]


async def main() -> int:
    prefix = f"repro_{uuid.uuid4().hex[:12]}"
    failed = []
    async with AsyncRedisStore.from_conn_string(
            os.environ["NOMNESIA_REPRO_REDIS"], store_prefix=prefix,
            vector_prefix=f"{prefix}_vectors") as store:
        try:
            for label in LABELS:
                try:
                    await store.aput(("mem", label), "k", {"text": "note"})
                    await store.asearch(("mem", label), limit=10)
                except Exception as exc:  # the library's own error type is what we show
                    failed.append(f"label {label!r}: {type(exc).__name__}: {exc}")
        finally:
            await store.store_index.delete(drop=True)
    for line in failed:
        print(line)
    if not failed:
        print(f"not reproduced: aput and asearch work for every label in {LABELS!r}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
