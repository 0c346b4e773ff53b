"""A LangGraph checkpointer (``BaseCheckpointSaver``) as a store of the ``history`` profile,
driven through a real compiled graph, as an application keeps its short-term memory.

LangChain deprecated ``BaseChatMessageHistory`` (langchain-core 1.6.4) for LangGraph's
short-term memory: a graph over ``MessagesState`` compiled with a checkpointer, one thread
per conversation. The mapping builds that graph with the user's checkpointer and no model:
one node, ``record``, notes what it was given and writes nothing, so every state the suite
reads is the reducer's and the saver's doing.

What maps to what:

- one checkpointer for every user; a user is a thread (``thread_id`` = the user id);
- ``append_message(u, role, content, message_id=None)`` is one run, ``ainvoke({"messages":
  [message]}, thread)``: the message a ``HumanMessage`` (user), ``AIMessage`` (assistant),
  ``SystemMessage`` (system) or ``ToolMessage`` (tool, ``tool_call_id="nomnesia"``), its
  ``id`` the caller's message id, else a new UUID (``add_messages`` gives one anyway; ours
  is known before the run, so a check can tell the node saw it). ``add_messages`` replaces
  a message whose id it already holds: a retried id with other content overwrites (G6 is
  not judged in the history profile);
- ``get_history(u, limit)`` is ``aget_state(thread).values["messages"]``, the newest
  ``limit`` of them, each read back as its role (``human``, ``ai``, ``system``, ``tool``)
  and text;
- ``forget(u)`` is ``adelete_thread(u)``.

A thread runs one run at a time, as LangGraph's Agent Server runs them by default: runs
of one thread and its deletion are queued behind each other in this process ("Enqueue is
the default double texting strategy [...] Double texting is a feature of LangSmith
Deployment. It is not available in the LangGraph open source framework",
https://docs.langchain.com/langsmith/double-texting). Without the queue two concurrent
runs of one thread both start from the same checkpoint and the later one's write drops
the other's message, with every saver: LangGraph's documented behaviour, not a saver's
defect, so it is queued (``enqueue=False``, the option ``--langgraph-concurrent-runs``,
removes the queue, to grade that hazard).
Reads are never queued.

Sync savers: a saver whose async methods raise ``NotImplementedError`` (``SqliteSaver``,
``PostgresSaver``) is driven through the graph's sync methods (``invoke``, ``get_state``,
``delete_thread``), each in a worker thread, as a threaded application calls them, and
awaited to its end when the suite cancels it (``_base.in_thread``: such an application cannot
cancel a call midway, and the thread would write on after a cancel the suite made); the
mapping finds out by reading a never-written thread once, when it opens.

Beyond the history profile, the checkpointer's own promises are checked at its own
interface (``promises``, run by ``test_interface_promises.py``; the checks are in
``_checkpointer_checks.py``). ``ainvoke`` of a batch is one run, so the interface faults
apply too (``poisoned_batch``). What it cannot see: search, compaction (a summarising
node is the application's), and ``recover``.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from ..contract import Guarantee
from ..contract.validation import validate_limit, validate_message_id
from ._base import Mapped, contract_role, has
from ._checkpointer_checks import PROMISES, Check
from ._checkpointer_graph import (
    ASYNC_METHODS,
    SYNC_METHODS,
    Saver,
    entry,
    message,
    synchronous_only,
)
from ._poison import PoisonedCall, Unserializable, describe_batch

__all__ = ["LangGraphCheckpointer", "Saver", "open_store"]

class LangGraphCheckpointer(Mapped):
    """The suite's calls on one LangGraph checkpointer, through a graph compiled with it."""

    requires = ASYNC_METHODS

    def __init__(self, factory: Callable[..., Any], *, enqueue: bool = True) -> None:
        super().__init__(factory)
        self.enqueue = enqueue
        self._saver: Saver | None = None
        self._queues: dict[str, asyncio.Lock] = {}

    def missing(self, found: Any) -> list[str]:
        lacking = super().missing(found)
        if lacking and all(has(found, name) for name in SYNC_METHODS):
            return []  # a sync-only saver: driven through its sync methods
        return lacking

    @classmethod
    def fits(cls, found: Any) -> bool:
        return all(has(found, n) for n in ASYNC_METHODS) or all(
            has(found, n) for n in SYNC_METHODS)

    async def saver(self) -> Saver:
        """The checkpointer (made on first use) and its graph."""
        found = await self._object()
        if self._saver is None or self._saver.saver is not found:
            self._saver = Saver(found, await synchronous_only(found))
        return self._saver

    def queue(self, thread_id: str) -> asyncio.Lock:
        """The thread's run queue (runs and deletion one at a time, in the order they came)."""
        return self._queues.setdefault(thread_id, asyncio.Lock())

    async def append_message(self, user_id: str, role: str, content: str, *,
                             message_id: str | None = None) -> None:
        role = contract_role(role)
        message_id = validate_message_id(message_id)
        made = message(role, content, message_id if message_id is not None
                       else uuid.uuid4().hex)
        await self.run(user_id, [made])

    async def run(self, user_id: str, messages: Sequence[Any]) -> Any:
        """One run of the graph on the user's thread, queued behind the thread's others."""
        saver = await self.saver()
        if not self.enqueue:
            return await saver.invoke(user_id, messages)
        async with self.queue(user_id):
            return await saver.invoke(user_id, messages)

    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]:
        limit = validate_limit("limit", limit)  # the state has no limit: the slice is ours
        found = await (await self.saver()).messages(user_id)
        return [entry(m) for m in found[-limit:]]

    async def forget(self, user_id: str) -> None:
        saver = await self.saver()
        if self.enqueue:
            async with self.queue(user_id):
                await saver.delete_thread(user_id)
        else:
            await saver.delete_thread(user_id)
        saver.given.pop(user_id, None)

    def promises(self) -> dict[Guarantee, Check]:
        """The checkpointer's own promises, each a check under the guarantee it keeps
        (``test_interface_promises.py`` runs them)."""
        return dict(PROMISES)

    async def poisoned_batch(self, user_id: str, batch: Sequence[tuple[str, str]],
                             poisoned: int) -> PoisonedCall:
        """One run whose input is ``batch``, message ``poisoned``'s ``additional_kwargs``
        holding an object no serializer knows: the run's checkpoint holds every message of
        it, so a saver that serializes must refuse the whole checkpoint."""
        messages = [message(contract_role(role), content, uuid.uuid4().hex)
                    for role, content in batch]
        messages[poisoned].additional_kwargs["nomnesia_poison"] = Unserializable()
        saver = await self.saver()

        async def run() -> object:
            return await self.run(user_id, messages)

        where = describe_batch(len(messages), poisoned, "additional_kwargs")
        method = "invoke" if saver.synchronous else "ainvoke"
        return PoisonedCall(f"CompiledStateGraph.{method}({{'messages': [{where}]}}) on "
                            f"{type(saver.saver).__name__}", run)

    async def aclose(self) -> None:
        self._saver = None
        self._queues.clear()
        await super().aclose()


@asynccontextmanager
async def open_store(factory: Callable[..., Any], *, enqueue: bool = True
                     ) -> AsyncIterator[LangGraphCheckpointer]:
    async with LangGraphCheckpointer(factory, enqueue=enqueue) as store:
        yield store


MAPPED = LangGraphCheckpointer
"""The mapping, whose ``fits`` says whether an object suits this option."""
