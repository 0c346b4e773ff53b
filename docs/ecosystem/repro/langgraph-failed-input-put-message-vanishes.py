"""A run whose first checkpoint write fails after it landed (a lost reply) leaves its input
message in the thread's state, and the thread's next run drops it.

LangGraph stores a run's input as a pending write of the ``__start__`` task on the run's
first checkpoint. When that checkpoint's ``aput`` raises after the saver stored it (what a
lost reply looks like to the client: the database committed, the connection dropped), the
run raises, and ``aget_state`` shows the input message (the state applies the saved pending
writes). The next run with new input starts from the same checkpoint but discards its
pending writes: the message a reader already saw is gone, though nothing deleted it. Any
saver on a network can lose a reply; ``InMemorySaver`` with one planted lost reply shows it
without one. Written against langgraph 1.2.24, langgraph-checkpoint 4.3.2.

Run::

    python langgraph-failed-input-put-message-vanishes.py
"""

import asyncio
import sys
from importlib.metadata import version

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph


class LostReply(InMemorySaver):
    """Stores every checkpoint; the put chosen by ``lose`` then raises, as a lost reply."""

    lose: int | None = None
    puts = 0

    async def aput(self, config, checkpoint, metadata, new_versions):
        stored = self.put(config, checkpoint, metadata, new_versions)
        self.puts += 1
        if self.puts == self.lose:
            raise ConnectionError("connection reset after the write was applied")
        return stored


async def main() -> int:
    print(f"langgraph {version('langgraph')}, "
          f"langgraph-checkpoint {version('langgraph-checkpoint')}")
    saver = LostReply()
    builder = StateGraph(MessagesState)
    builder.add_node("record", lambda state: {})
    builder.add_edge(START, "record")
    builder.add_edge("record", END)
    graph = builder.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "ann"}}

    async def messages() -> list[str]:
        return [m.content for m in (await graph.aget_state(config)).values["messages"]]

    await graph.ainvoke({"messages": [HumanMessage("first", id="1")]}, config)
    saver.lose = saver.puts + 1  # the next run's first checkpoint write
    try:
        await graph.ainvoke({"messages": [HumanMessage("second", id="2")]}, config)
    except ConnectionError as exc:
        print(f"the run of 'second' raised: {exc}")
    seen = await messages()
    print(f"aget_state after it: {seen}")
    await graph.ainvoke({"messages": [HumanMessage("third", id="3")]}, config)
    after = await messages()
    print(f"aget_state after the next run: {after}")
    if "second" in seen and "second" not in after:
        print("REPRODUCED: a message the state showed is dropped by the next run")
        return 1
    return 0


sys.exit(asyncio.run(main()))
