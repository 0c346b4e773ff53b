"""The graph the ``--langgraph-checkpointer`` mapping drives: a ``MessagesState`` graph with
one node that records what it was given, compiled with the user's checkpointer, and the
saver's own methods called the way it supports (async, or sync in a worker thread).

Apart from the mapping (``langgraph_checkpointer.py``) so that its checks
(``_checkpointer_checks.py``) use the same graph without importing the mapping.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import Any

from ._base import in_thread, text_of

__all__ = ["ASYNC_METHODS", "SYNC_METHODS", "PlannedFailure", "Saver", "entry", "message",
           "synchronous_only", "thread"]

_TYPES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
SYNC_METHODS = ("get_tuple", "list", "put", "put_writes", "delete_thread")
ASYNC_METHODS = ("aget_tuple", "alist", "aput", "aput_writes", "adelete_thread")


def message(role: str, content: str, message_id: str) -> Any:
    """SPEC's role as LangChain's message type, with the id given."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    if role == "assistant":
        return AIMessage(content=content, id=message_id)
    if role == "system":
        return SystemMessage(content=content, id=message_id)
    if role == "tool":
        return ToolMessage(content=content, tool_call_id="nomnesia", id=message_id)
    return HumanMessage(content=content, id=message_id)


def entry(found: Any) -> dict[str, str]:
    kind = str(getattr(found, "type", ""))
    return {"role": _TYPES.get(kind, kind), "content": text_of(getattr(found, "content", ""))}


def thread(thread_id: str, **more: Any) -> dict[str, Any]:
    """A ``RunnableConfig`` for ``thread_id`` (the root namespace unless ``more`` says)."""
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": "", **more}}


class Saver:
    """The user's checkpointer and the graph compiled with it, called the way the saver
    supports: its async methods, or its sync ones in a worker thread.

    The graph's one node records, per thread, the ids of the messages it was given, and
    holds (an event to wait on) or fails (raises) where a check asked it to.
    """

    def __init__(self, saver: Any, synchronous: bool) -> None:
        from langchain_core.runnables import RunnableLambda
        from langgraph.graph import END, START, MessagesState, StateGraph

        self.saver = saver
        self.synchronous = synchronous
        self.given: dict[str, list[str]] = {}
        """Thread -> the message ids the node was given on its latest run."""
        self.holds: dict[str, asyncio.Event] = {}
        """Thread -> an event its next run's node waits for (async savers only)."""
        self.entered: dict[str, asyncio.Event] = {}
        """Thread -> an event its next run's node sets as it starts (async savers only)."""
        self.failing: set[str] = set()
        """Threads whose next run's node raises ``PlannedFailure``."""
        builder: Any = StateGraph(MessagesState)
        builder.add_node("record", RunnableLambda(self._node, afunc=self._anode))
        builder.add_edge(START, "record")
        builder.add_edge("record", END)
        self.graph = builder.compile(checkpointer=saver)

    def _seen(self, state: Any, config: Any) -> str:
        thread_id = str(config["configurable"]["thread_id"])
        self.given[thread_id] = [str(m.id) for m in state["messages"]]
        return thread_id

    def _node(self, state: Any, config: Any) -> dict[str, Any]:
        if self._seen(state, config) in self.failing:
            raise PlannedFailure("the node failed, as the check planned")
        return {}

    async def _anode(self, state: Any, config: Any) -> dict[str, Any]:
        thread_id = self._seen(state, config)
        entered = self.entered.get(thread_id)
        if entered is not None:
            entered.set()
        hold = self.holds.get(thread_id)
        if hold is not None:
            await hold.wait()
        if thread_id in self.failing:
            raise PlannedFailure("the node failed, as the check planned")
        return {}

    async def _run(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """``a<method>`` of the saver, or ``<method>`` in a worker thread."""
        if self.synchronous:
            return await in_thread(getattr(self.saver, method), *args, **kwargs)
        return await getattr(self.saver, f"a{method}")(*args, **kwargs)

    async def invoke(self, thread_id: str, messages: Sequence[Any]) -> Any:
        """One run of the graph on ``thread_id`` with ``messages`` as its input."""
        if self.synchronous:
            return await in_thread(self.graph.invoke, {"messages": list(messages)},
                                   thread(thread_id))
        return await self.graph.ainvoke({"messages": list(messages)}, thread(thread_id))

    async def messages(self, thread_id: str) -> list[Any]:
        """``(a)get_state(thread).values["messages"]``: the thread's messages, oldest first."""
        if self.synchronous:
            state = await in_thread(self.graph.get_state, thread(thread_id))
        else:
            state = await self.graph.aget_state(thread(thread_id))
        return list(state.values.get("messages", []))

    async def states(self, thread_id: str) -> list[Any]:
        """``(a)get_state_history(thread)``: every state of the thread, newest first."""
        if self.synchronous:
            return await in_thread(
                lambda: list(self.graph.get_state_history(thread(thread_id))))
        return [s async for s in self.graph.aget_state_history(thread(thread_id))]

    async def get_tuple(self, config: dict[str, Any]) -> Any:
        return await self._run("get_tuple", config)

    async def list(self, config: dict[str, Any] | None, *, before: dict[str, Any] | None = None,
                   limit: int | None = None) -> list[Any]:
        if self.synchronous:
            return await in_thread(
                lambda: list(self.saver.list(config, before=before, limit=limit)))
        return [t async for t in self.saver.alist(config, before=before, limit=limit)]

    async def put(self, config: dict[str, Any], checkpoint: Any, metadata: Any,
                  new_versions: Any) -> Any:
        return await self._run("put", config, checkpoint, metadata, new_versions)

    async def put_writes(self, config: dict[str, Any], writes: Sequence[tuple[str, Any]],
                         task_id: str) -> None:
        await self._run("put_writes", config, list(writes), task_id)

    async def delete_thread(self, thread_id: str) -> None:
        await self._run("delete_thread", thread_id)


class PlannedFailure(RuntimeError):
    """What the node raises where a check asked for a failed run."""


async def synchronous_only(saver: Any) -> bool:
    """Whether ``saver`` has only sync methods: its ``aget_tuple`` raises
    ``NotImplementedError`` (``SqliteSaver``; ``BaseCheckpointSaver`` for any saver that
    does not override it). Reads a thread no one writes: nothing is written."""
    probe = thread(f"nomnesia-probe-{uuid.uuid4().hex}")
    try:
        await saver.aget_tuple(probe)
    except NotImplementedError:
        return True
    return False
