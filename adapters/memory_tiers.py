"""In-process ShortTermLog and VectorIndex, for unit tests of TieredMemoryStore.

They keep the tiers' contracts (idempotent, keyed by entry id, per user) with
no engine, so the store's crash handling can be tested in milliseconds; the
failpoint sweep then repeats it on the real engines.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from nomnesia.suite.contract import Entry

from .bounds import clamp_limit
from .indexes._common import check_k
from .tiers import TierLost

__all__ = ["InMemoryIndex", "InMemoryLog"]


class InMemoryLog:
    """A dict per user; ``tail`` sorts by seq."""

    def __init__(self, name: str = "log") -> None:
        self.name = name
        self._users: dict[str, dict[str, Entry]] = {}
        self._intact = False
        self._rebuild: str | None = None
        self._tokens = 0
        self._writing: dict[str, str] = {}  # SharedLog's per-user write markers

    def lose_everything(self) -> None:
        """What an engine restarted without persistence does (for tests)."""
        self._users.clear()
        self._writing.clear()
        self._intact = False
        self._rebuild = None

    async def intact(self) -> bool:
        return self._intact

    async def begin_rebuild(self) -> str:
        self._tokens += 1
        self._rebuild = str(self._tokens)
        return self._rebuild

    async def mark_intact(self, token: str) -> bool:
        if self._rebuild != token:
            return False
        self._intact, self._rebuild = True, None
        return True

    async def begin_write(self, user_id: str, token: str) -> bool:
        left = user_id in self._writing
        self._writing[user_id] = token
        return left

    async def end_write(self, user_id: str, token: str) -> None:
        if self._writing.get(user_id) == token:
            del self._writing[user_id]

    async def tail_if_idle(self, user_id: str, limit: int) -> list[Entry] | None:
        return None if user_id in self._writing else await self.tail(user_id, limit)

    async def put(self, entries: Sequence[Entry]) -> None:
        for entry in entries:
            self._users.setdefault(entry.user_id, {})[entry.id] = entry

    async def remove(self, user_id: str, entry_ids: Sequence[str]) -> None:
        user = self._users.get(user_id, {})
        for entry_id in entry_ids:
            user.pop(entry_id, None)

    async def tail(self, user_id: str, limit: int) -> list[Entry]:
        if not self._intact:
            raise TierLost(f"{self.name} lost its data")
        entries = sorted(self._users.get(user_id, {}).values(), key=lambda e: e.seq)
        return entries[-clamp_limit(limit):]  # the same bound as every engine's log

    async def ids(self, user_id: str) -> set[str]:
        return set(self._users.get(user_id, {}))

    async def delete_user(self, user_id: str) -> None:
        self._users.pop(user_id, None)

    async def aclose(self) -> None:
        """Nothing to release."""


class InMemoryIndex:
    """Exact cosine search over a dict per user."""

    search_staleness = 0.0

    def __init__(self, dim: int = 384, name: str = "index") -> None:
        self.name = name
        self.dim = dim
        self._users: dict[str, dict[str, list[float]]] = {}

    async def upsert(self, entries: Sequence[Entry], vectors: Sequence[Sequence[float]]) -> None:
        for entry, vector in zip(entries, vectors, strict=True):
            self._users.setdefault(entry.user_id, {})[entry.id] = list(vector)

    async def delete(self, user_id: str, entry_ids: Sequence[str]) -> None:
        user = self._users.get(user_id, {})
        for entry_id in entry_ids:
            user.pop(entry_id, None)

    async def query(self, user_id: str, vector: Sequence[float], k: int) -> list[str]:
        scored = [(math.fsum(a * b for a, b in zip(vector, v, strict=False)), entry_id)
                  for entry_id, v in self._users.get(user_id, {}).items()]
        scored.sort(key=lambda s: s[0], reverse=True)
        return [entry_id for _, entry_id in scored[:check_k(k)]]  # as every engine index

    async def ids(self, user_id: str) -> set[str]:
        return set(self._users.get(user_id, {}))

    async def delete_user(self, user_id: str) -> None:
        self._users.pop(user_id, None)

    async def aclose(self) -> None:
        """Nothing to release."""
