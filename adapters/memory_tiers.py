"""In-process tiers (log, index, archive), for unit tests of TieredMemoryStore.

They keep the tiers' contracts (idempotent, keyed by entry id, per user) with
no engine, so the store's crash handling can be tested in milliseconds; the
failpoint sweep then repeats it on the real engines. ``InMemoryArchive`` has
the exact semantics of the PostgreSQL archive, and is its reference.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from nomnesia.suite.contract import SUMMARY_ROLE, Entry
from nomnesia.suite.contract.errors import BackendTimeout

from .bounds import PerUser, check_k, clamp_limit
from .tiers import StalePrefix, TierLost

__all__ = ["InMemoryArchive", "InMemoryIndex", "InMemoryLog"]


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


@dataclass
class _User:
    next_seq: int = 1
    # every message ever acknowledged, and the live summaries
    entries: dict[str, Entry] = field(default_factory=dict)
    covered: set[str] = field(default_factory=set)


class InMemoryArchive:
    """The archive semantics without an engine (unit tests, and the reference for PostgreSQL)."""

    name = "archive"

    def __init__(self) -> None:
        self._users: dict[str, _User] = {}
        self._outbox: dict[int, str] = {}
        self._next_outbox = 1
        self._lock = asyncio.Lock()
        self._user_locks: PerUser[asyncio.Lock] = PerUser(asyncio.Lock)

    def _record(self, user_id: str) -> int:
        ob = self._next_outbox
        self._next_outbox += 1
        self._outbox[ob] = user_id
        return ob

    async def append(self, user_id: str, entry_id: str, role: str,
                     content: str) -> tuple[Entry, int | None]:
        user = self._users.setdefault(user_id, _User())
        existing = user.entries.get(entry_id)
        if existing is not None:
            if existing.role == SUMMARY_ROLE:
                raise ValueError(f"message_id {entry_id!r} is the id of a summary")
            if (existing.role, existing.content) != (role, content):
                raise ValueError(f"message_id {entry_id!r} already holds a different message")
            return existing, None
        entry = Entry(entry_id, user_id, user.next_seq, role, content)
        user.next_seq += 1
        user.entries[entry_id] = entry
        return entry, self._record(user_id)

    def _live(self, user_id: str) -> list[Entry]:
        user = self._users.get(user_id)
        if user is None:
            return []
        live = [e for e in user.entries.values() if e.id not in user.covered]
        return sorted(live, key=lambda e: e.seq)

    async def commit_compaction(self, user_id: str, prefix: Sequence[Entry],
                                summary: Entry) -> int:
        live = self._live(user_id)
        if [e.id for e in live[: len(prefix)]] != [e.id for e in prefix]:
            raise StalePrefix(user_id)
        user = self._users[user_id]
        for entry in prefix:
            if entry.role == SUMMARY_ROLE:
                del user.entries[entry.id]  # a replaced summary is kept by no one
            else:
                user.covered.add(entry.id)
        user.entries[summary.id] = summary
        return self._record(user_id)

    async def forget(self, user_id: str) -> int:
        self._users.pop(user_id, None)
        return self._record(user_id)

    async def tail(self, user_id: str, limit: int) -> list[Entry]:
        return self._live(user_id)[-limit:]

    async def live(self, user_id: str) -> list[Entry]:
        return self._live(user_id)

    async def live_among(self, user_id: str, ids: Sequence[str], content: str) -> list[Entry]:
        wanted = set(ids)
        return [e for e in self._live(user_id) if e.id in wanted or e.content == content]

    async def users(self) -> list[str]:
        return list(self._users)

    async def pending(self, user_id: str | None = None) -> list[tuple[int, str]]:
        return [(ob, u) for ob, u in sorted(self._outbox.items()) if user_id in (None, u)]

    async def clear(self, outbox_ids: Sequence[int], *, lazy: bool = False) -> None:
        for ob in outbox_ids:
            self._outbox.pop(ob, None)

    def holds_anything_of(self, user_id: str) -> bool:
        """For tests of G8: is any trace of the user left, outbox included?"""
        return user_id in self._users or user_id in self._outbox.values()

    @asynccontextmanager
    async def user_lock(self, user_id: str, timeout: float) -> AsyncIterator[None]:
        """Replicas in one process share this archive: one asyncio lock per user."""
        with self._user_locks.use(user_id) as lock:  # dropped when no one holds or awaits it
            try:
                await asyncio.wait_for(lock.acquire(), timeout)
            except (TimeoutError, asyncio.TimeoutError):  # distinct before Python 3.11
                raise BackendTimeout(self.name, timeout,
                                     f"waiting for the lock of {user_id!r}") from None
            try:
                yield
            finally:
                lock.release()

    async def aclose(self) -> None:
        """Nothing to release."""
