"""RedisChatMessageHistory: a cancelled ``aclear()`` still clears the session, later.

The class defines no async methods, so ``aclear`` is langchain-core's default,
``await run_in_executor(None, self.clear)``. Cancelling the awaiting task raises
``CancelledError`` in the caller at once, but the thread running ``clear()``
goes on: a read right after the cancellation can still see the messages, and
once the thread finishes they are gone. Shown with a RESP2 client
(``protocol=2``): with redis-py 8's default RESP3 the class fails earlier
(langchain-redis-index-info-dict.py).
Written against langchain-redis 0.2.6, langchain-core 1.8.3, redisvl 0.27.0 and
redis-py 8.1.0 on Redis 8.2.

Run::

    NOMNESIA_REPRO_REDIS=redis://127.0.0.1:6379/0 \\
        python langchain-redis-aclear-thread.py
"""
# needs: redis

import asyncio
import os
import sys
import time
import uuid
import warnings
from importlib.metadata import version

from langchain_core.messages import HumanMessage
from langchain_redis import RedisChatMessageHistory
from redis import Redis

URL = os.environ["NOMNESIA_REPRO_REDIS"]
warnings.simplefilter("ignore")  # the class is deprecated since 0.2.6; it still ships


async def attempt(history: RedisChatMessageHistory) -> bool:
    """Cancel an aclear() as soon as it started; True if the messages were still there
    after the cancellation and went later."""
    history.add_messages([HumanMessage(f"fact {i}") for i in range(20)])
    task = asyncio.create_task(history.aclear())
    await asyncio.sleep(0)  # aclear has handed clear() to the executor
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    else:
        return False  # it finished before the cancel: try again
    if not history.messages:
        return False  # the thread was done already: nothing happened after the cancel
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if not history.messages:
            return True
        await asyncio.sleep(0.05)
    return False


async def run() -> int:
    name = f"repro_{uuid.uuid4().hex}"
    client = Redis.from_url(URL, protocol=2)
    history = RedisChatMessageHistory("ann", redis_client=client, key_prefix=f"{name}:",
                                      index_name=name)
    try:
        for tries in range(1, 21):
            if await attempt(history):
                print(f"langchain-redis {version('langchain-redis')}, langchain-core "
                      f"{version('langchain-core')}: aclear() raised CancelledError and the "
                      f"messages were still there, then the session was cleared after the "
                      f"cancellation (try {tries})")
                return 1
            history.clear()
        print("not reproduced: in 20 tries no cancelled aclear() cleared the session")
        return 0
    finally:
        history.delete()  # FT.DROPINDEX ... DD: the index and its documents
        client.close()


sys.exit(asyncio.run(run()))
