"""A deliberately broken TieredMemoryStore: the nemesis's positive control.

It acknowledges an append once the archive holds it and its outbox row is
cleared, and writes the short-term log and the vector index afterwards, from a
write-behind buffer flushed by a background task. A reader in between, or a
client killed before the flush, loses an acknowledged append: the archive has
it, no outbox row says the log is behind, so nothing ever repairs it. A
nemesis that passes this store is not testing anything.

    NemesisConfig(store_factory="nomnesia.suite.nemesis.broken:open_late_tiers")
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from contextlib import AbstractAsyncContextManager
from typing import Any

from nomnesia.adapters.stacks import open_engine_stack
from nomnesia.adapters.tiered import TieredMemoryStore

from ..contract import Entry
from ..contract.validation import validate_append

__all__ = ["LateTiersStore", "open_late_tiers"]


class LateTiersStore(TieredMemoryStore):
    """Acknowledges appends before the log and the index hold them (the bug under test).

    A write-behind buffer, as many caches have: entries queue up and a background
    task flushes them to the log and the index every ``FLUSH_EVERY`` seconds.
    """

    FLUSH_EVERY = 0.05

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._queue: list[Entry] = []
        self._flusher: asyncio.Task[None] | None = None

    async def append_message(self, user_id: str, role: str, content: str,
                             *, message_id: str | None = None) -> Entry:
        user_id, role, content, message_id = validate_append(user_id, role, content, message_id)
        entry_id = message_id if message_id is not None else uuid.uuid4().hex
        entry: Entry
        entry, outbox = await self._call(
            self.archive.name, self.archive.append(user_id, entry_id, role, content))
        if outbox is not None:
            await self._call(self.archive.name, self.archive.clear([outbox]))
            self._queue.append(entry)
            if self._flusher is None:
                self._flusher = asyncio.create_task(self._flush())
        return entry

    async def _flush(self) -> None:
        while True:
            await asyncio.sleep(self.FLUSH_EVERY)  # the write-behind delay: this is the bug
            batch, self._queue = self._queue, []
            if batch:
                with contextlib.suppress(Exception):
                    await self._put_tiers(batch, await self._vectors(batch), "append")

    async def aclose(self) -> None:
        if self._flusher is not None:
            self._flusher.cancel()
        await super().aclose()


def open_late_tiers(**kw: Any) -> AbstractAsyncContextManager[TieredMemoryStore]:
    """The ``pgvector`` stack with the broken append."""
    return open_engine_stack("pgvector", store_cls=LateTiersStore, **kw)
