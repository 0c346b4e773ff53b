"""AsyncRedisSaver.alist ignores ``before``: every page after the first repeats the first.

``alist`` turns ``before`` into a range on ``checkpoint_ts`` by parsing the checkpoint id as
a ULID, and when that fails ("If not a valid ULID, ignore the before filter") drops the
filter silently. LangGraph's checkpoint ids are UUIDv6 strings
(``1f1f26ee-966f-670b-8006-...``), never ULIDs, so ``before`` is ignored for every
checkpoint a graph writes: paging a thread's history with ``limit`` and ``before`` (what
``aget_state_history(config, before=..., limit=...)`` does) returns the newest page again
and never reaches the older checkpoints. Written against langgraph-checkpoint-redis 0.5.2
(redisvl 0.27) on Redis 8.2 with RediSearch.

Run::

    NOMNESIA_REPRO_REDIS=redis://127.0.0.1:6379/0 \\
        python langgraph-checkpoint-redis-list-ignores-before.py
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
        config = {"configurable": {"thread_id": f"ann-{uuid.uuid4().hex[:8]}"}}
        for i in range(3):
            await graph.ainvoke({"messages": [HumanMessage(f"m{i}", id=f"m{i}")]}, config)
        whole = [t.config["configurable"]["checkpoint_id"] async for t in saver.alist(config)]
        first = [t async for t in saver.alist(config, limit=2)]
        second = [t.config["configurable"]["checkpoint_id"]
                  async for t in saver.alist(config, before=first[-1].config, limit=2)]
        print(f"alist: {len(whole)} checkpoints, newest first")
        print(f"page 1 (limit=2):                      {[c[-6:] for c in whole[:2]]}")
        print(f"page 2 (before=page 1's last, limit=2): {[c[-6:] for c in second]}")
        print(f"expected page 2:                       {[c[-6:] for c in whole[2:4]]}")
        await saver.adelete_thread(config["configurable"]["thread_id"])
        if second != whole[2:4]:
            print("REPRODUCED: alist(before=..., limit=...) ignores before")
            return 1
    return 0


sys.exit(asyncio.run(main()))
