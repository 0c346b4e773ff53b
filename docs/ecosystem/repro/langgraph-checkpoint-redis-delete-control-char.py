"""AsyncRedisSaver.adelete_thread deletes nothing of a thread whose id holds a control
character (tab, newline, \\x01, \\x1f): the conversation stays readable after the delete.

``adelete_thread`` finds what to delete by a RediSearch query on the ``thread_id`` TAG
field, where those characters do not match the stored value; the checkpoint and its
"latest" pointer are read by key, so ``aget_state`` still returns the whole thread.
Written against langgraph-checkpoint-redis 0.5.2 (redisvl 0.27) on Redis 8.2 with
RediSearch.

Run::

    NOMNESIA_REPRO_REDIS=redis://127.0.0.1:6379/0 \\
        python langgraph-checkpoint-redis-delete-control-char.py
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
        tag = uuid.uuid4().hex[:6]
        kept = []
        for thread_id in (f"ann{tag}b", f"ann{tag}\tb", f"ann{tag}\nb", f"ann{tag}\x01b",
                          f"ann{tag}\x1fb"):
            config = {"configurable": {"thread_id": thread_id}}
            await graph.ainvoke({"messages": [HumanMessage("a note", id=str(uuid.uuid4()))]},
                                config)
            await saver.adelete_thread(thread_id)
            left = (await graph.aget_state(config)).values.get("messages", [])
            print(f"after adelete_thread({thread_id!r}): aget_state holds {len(left)} messages")
            if left:
                kept.append(thread_id)
        if kept:
            print(f"REPRODUCED: adelete_thread left {kept!r}")
            return 1
    return 0


sys.exit(asyncio.run(main()))
