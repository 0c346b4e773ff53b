"""A deliberately broken TieredMemoryStore: the nemesis's positive control.

It acknowledges an append once the archive holds it and its outbox row is
cleared, and writes the short-term log and the vector index afterwards, in a
background task. Inside one process that looks almost right (the task runs a
moment later); a reader in that moment, or a client killed before the task
ran, loses an acknowledged append: the archive has it, no outbox row says the
log is behind, so nothing ever repairs it. A nemesis that passes this store is
not testing anything.

    NemesisConfig(store_factory="nomnesia.suite.nemesis.broken:open_late_tiers")
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from nomnesia.adapters.stacks import open_engine_stack
from nomnesia.adapters.tiered import TieredMemoryStore

from ..contract import Entry
from ..validation import validate_append

__all__ = ["LateTiersStore", "open_late_tiers"]


class LateTiersStore(TieredMemoryStore):
    """Returns from append before the log and the index are written (the bug under test)."""

    _late: set[asyncio.Task[None]]

    async def append_message(self, user_id: str, role: str, content: str,
                             *, message_id: str | None = None) -> Entry:
        user_id, role, content, message_id = validate_append(user_id, role, content, message_id)
        entry_id = message_id if message_id is not None else uuid.uuid4().hex
        entry, outbox = await self._call(
            self.archive.name, self.archive.append(user_id, entry_id, role, content))
        if outbox is not None:
            await self._call(self.archive.name, self.archive.clear([outbox]))
            vector = self._vectors([entry])
            task = asyncio.ensure_future(self._put_tiers([entry], vector, "append"))
            self._late.add(task)
            task.add_done_callback(self._late.discard)
        return entry


@asynccontextmanager
async def _late(**kw: Any) -> AsyncIterator[TieredMemoryStore]:
    async with open_engine_stack(None, log_engine="redis", **kw) as store:
        store.__class__ = LateTiersStore  # same state, the broken append
        assert isinstance(store, LateTiersStore)
        store._late = set()
        yield store


def open_late_tiers(**kw: Any) -> AbstractAsyncContextManager[TieredMemoryStore]:
    """The ``pgvector`` stack with the broken append."""
    return _late(**kw)
