"""RedisHistoryProvider drops a repeated non-user turn: save_messages returns, nothing is stored.

``save_messages`` keeps only what ``filter_new_messages`` (agent-framework-core)
does not take for a replay of the stored history. A message without an id that
equals the last stored one is taken for a replay and dropped, unless its role is
user: a tool that answers "OK" twice, or an assistant that repeats itself, loses
the second turn with no error. The docstring says it "preserves legitimate
duplicate turns"; it does so for user turns only.
Written against agent-framework-redis 1.0.0b261022 (agent-framework-core 1.23.0)
on Redis 8.2.

Run::

    NOMNESIA_REPRO_REDIS=redis://127.0.0.1:6379/0 \\
        python agent-framework-drops-repeated-turn.py
"""
# needs: redis

import asyncio
import os
import sys
import uuid
from importlib.metadata import version

import redis.asyncio as redis
from agent_framework import Message
from agent_framework_redis import RedisHistoryProvider

URL = os.environ["NOMNESIA_REPRO_REDIS"]


async def main() -> int:
    client = redis.from_url(URL, decode_responses=True)
    provider = RedisHistoryProvider(redis_client=client,
                                    application_id=f"repro_{uuid.uuid4().hex[:12]}")
    session = "s1"
    try:
        await provider.save_messages(session, [Message(role="user", contents=["run it twice"])])
        for _ in range(2):
            await provider.save_messages(session, [Message(role="tool", contents=["OK"])])
        stored = [(str(m.role), m.text) for m in await provider.get_messages(session)]
    finally:
        await provider.clear(session)
        await client.aclose()
    oks = stored.count(("tool", "OK"))
    if oks < 2:
        print(f"agent-framework-redis {version('agent-framework-redis')}: save_messages "
              f"returned twice for ('tool', 'OK'); the session stored {oks} of the 2 "
              f"acknowledged: {stored}")
        return 1
    print(f"not reproduced: {stored}")
    return 0


sys.exit(asyncio.run(main()))
