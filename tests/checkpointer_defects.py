"""LangGraph's ``InMemorySaver`` with one planted defect each: the positive controls of
``--langgraph-checkpointer``'s own promises (``suite/test_interface_promises.py``).

Each subclass breaks exactly one promise the way a real saver has been seen to, and only
that one; the unmodified ``InMemorySaver`` passes every check (the negative control):

- :class:`DuplicateWrites` (G6): ``put_writes`` keys a write by its call, not by (task id,
  index), so a retried write is stored again;
- :class:`OldestFirst` (G5): ``list`` yields oldest first;
- :class:`BeforeIgnored` (G5): ``list`` ignores ``before``, so pages repeat the newest;
- :class:`FoldedThreads` (G9): thread ids are keyed case-folded and stripped, as a
  RediSearch TAG field or a case-insensitive collation keys them;
- :class:`DeleteLeavesWrites` (G8): ``delete_thread`` drops the checkpoints but leaves the
  thread's writes and channel blobs;
- :class:`LockLeak` (G10): ``aget_tuple`` holds a lock across an await and releases it
  outside a ``finally``: a run cancelled there wedges every later call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

from langgraph.checkpoint.base import WRITES_IDX_MAP
from langgraph.checkpoint.memory import InMemorySaver


def _thread(config: Any) -> tuple[str, str, str]:
    c = config["configurable"]
    return str(c["thread_id"]), str(c.get("checkpoint_ns", "")), str(c["checkpoint_id"])


class DuplicateWrites(InMemorySaver):
    """G6: every call's writes are new writes, whatever their task id and index."""

    calls = 0

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        thread_id, ns, checkpoint_id = _thread(config)
        type(self).calls += 1
        for idx, (channel, value) in enumerate(writes):
            index = WRITES_IDX_MAP.get(channel, idx) + 1000 * type(self).calls
            self.writes[(thread_id, ns, checkpoint_id)][(task_id, index)] = (
                task_id, channel, self.serde.dumps_typed(value), task_path)


class OldestFirst(InMemorySaver):
    """G5: ``list`` yields a thread's checkpoints oldest first."""

    def list(self, config: Any, **kwargs: Any) -> Iterator[Any]:
        yield from reversed(list(super().list(config, **kwargs)))


class BeforeIgnored(InMemorySaver):
    """G5: ``list`` ignores ``before``: every page is the newest one."""

    def list(self, config: Any, *, before: Any = None, **kwargs: Any) -> Iterator[Any]:
        yield from super().list(config, **kwargs)


def _fold(config: Any) -> Any:
    if not config:
        return config
    c = dict(config["configurable"])
    c["thread_id"] = str(c["thread_id"]).strip().lower()
    return {**config, "configurable": c}


class FoldedThreads(InMemorySaver):
    """G9: thread ids are keyed case-folded and stripped of padding."""

    def get_tuple(self, config: Any) -> Any:
        return super().get_tuple(_fold(config))

    def list(self, config: Any, *, before: Any = None, **kwargs: Any) -> Iterator[Any]:
        yield from super().list(_fold(config), before=_fold(before), **kwargs)

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        return super().put(_fold(config), checkpoint, metadata, new_versions)

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        super().put_writes(_fold(config), writes, task_id, task_path)

    def delete_thread(self, thread_id: str) -> None:
        super().delete_thread(thread_id.strip().lower())


class DeleteLeavesWrites(InMemorySaver):
    """G8: ``delete_thread`` drops the checkpoints only."""

    def delete_thread(self, thread_id: str) -> None:
        self.storage.pop(thread_id, None)


class LockLeak(InMemorySaver):
    """G10: ``aget_tuple`` holds a lock across an await and releases it only when it
    returns: a run cancelled there leaves the lock held, and every later run of any thread
    waits on it (as aiosqlite's connection lock once did)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lock = asyncio.Lock()

    async def aget_tuple(self, config: Any) -> Any:
        await self.lock.acquire()
        await asyncio.sleep(0)  # a round trip to a database, where a cancel can land
        found = self.get_tuple(config)
        self.lock.release()  # not in a finally: a cancel above leaves it held
        return found
