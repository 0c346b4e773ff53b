"""AsyncRedisSaver.alist (and so ``aget_state_history``) of one thread returns the
checkpoints of every thread whose id differs from it by case or by trailing whitespace.

``alist`` filters with ``Tag("thread_id") == thread_id`` on a RediSearch TAG field, and TAG
fields are case-insensitive and trimmed unless declared ``CASESENSITIVE``: threads
``Ann-x``, ``ann-x`` and ``Ann-x `` (two users' conversations) are one for ``alist``, so one
user's history shows the other's messages. ``aget_state`` (a key lookup) is right; the
history and listing are not. Written against langgraph-checkpoint-redis 0.5.2 (redisvl
0.27) on Redis 8.2 with RediSearch.

Run::

    NOMNESIA_REPRO_REDIS=redis://127.0.0.1:6379/0 \\
        python langgraph-checkpoint-redis-thread-tag-folded.py
"""
# needs: redis

import asyncio
import os
import sys
import uuid
from importlib.metadata import version

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.redis.aio import AsyncRedisSaver
from langgraph.graph import END, START, MessagesState, StateGraph

URL = os.environ["NOMNESIA_REPRO_REDIS"]


async def main() -> int:
    print(f"langgraph-checkpoint-redis {version('langgraph-checkpoint-redis')}")
    async with AsyncRedisSaver.from_conn_string(URL) as saver:
        builder = StateGraph(MessagesState)
        builder.add_node("record", lambda state: {})
        builder.add_edge(START, "record")
        builder.add_edge("record", END)
        graph = builder.compile(checkpointer=saver)
        base = f"Ann-{uuid.uuid4().hex[:6]}"
        threads = [base, base.lower(), f"{base} "]
        for thread_id in threads:
            message = HumanMessage(f"of {thread_id!r}", id=str(uuid.uuid4()))
            await graph.ainvoke({"messages": [message]},
                                {"configurable": {"thread_id": thread_id}})
        config = {"configurable": {"thread_id": base}}
        listed = sorted({t.config["configurable"]["thread_id"] async for t in saver.alist(config)})
        history = {m.content async for s in graph.aget_state_history(config)
                   for m in s.values.get("messages", [])}
        print(f"alist(thread {base!r}) returns checkpoints of threads {listed!r}")
        print(f"aget_state_history(thread {base!r}) holds messages {sorted(history)!r}")
        for thread_id in threads:
            await saver.adelete_thread(thread_id)
        if listed != [base]:
            print("REPRODUCED: one thread's list returns other threads' checkpoints")
            return 1
    return 0


sys.exit(asyncio.run(main()))
