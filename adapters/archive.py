"""The archive tier: the source of truth of a TieredMemoryStore, and an in-memory one.

Every write of the store is first one archive transaction that also records an
*outbox* row: the promise that the short-term log and the vector index will be
brought in line with the archive for that user. The tiers are then updated and
the outbox row cleared; ``recover()`` replays whatever rows are left. So the
archive alone decides what happened, and a crash between two backend writes
can only leave a tier *behind*, never the archive half-written.

``InMemoryArchive`` has the exact semantics of the PostgreSQL archive with no
engine, so the store's logic can be unit-tested in milliseconds.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from nomnesia.suite.contract import SUMMARY_ROLE, Entry
from nomnesia.suite.errors import BackendTimeout

from .bounds import PerUser

__all__ = ["ArchiveTier", "InMemoryArchive", "SharedArchive", "StalePrefix"]


class StalePrefix(Exception):
    """The prefix a compaction summarised is no longer the live prefix; recompute."""


@runtime_checkable
class SharedArchive(Protocol):
    """Optional for an archive that several store processes (replicas) share.

    A store serialises each user's writes with an in-process lock, but a write is
    several backend calls, and a replica re-syncing the same user in between
    removes from the log an entry it read too early. ``user_lock`` extends the
    lock to every process on the archive; it must die with its holder, so a
    crashed process cannot block a user forever.
    """

    def user_lock(self, user_id: str,
                  timeout: float) -> AbstractAsyncContextManager[None]:
        """Hold the user's lock for the block; give up after ``timeout`` seconds of waiting."""


@runtime_checkable
class ArchiveTier(Protocol):
    """Durable entries of every user plus an outbox of tier updates still owed."""

    name: str

    async def append(self, user_id: str, entry_id: str, role: str,
                     content: str) -> tuple[Entry, int | None]:
        """One transaction: assign the next seq, write the entry and an outbox row.

        Returns the entry and the outbox row id. If ``entry_id`` is already
        accounted for with the same role and content, returns that entry and
        ``None`` (nothing written); with a different one, or if it is the id
        of a live summary, raises ``ValueError`` (nothing written).
        """

    async def commit_compaction(self, user_id: str, prefix: Sequence[Entry],
                                summary: Entry) -> int:
        """One transaction: check ``prefix`` is still the live prefix (else ``StalePrefix``),
        write ``summary``, mark ``prefix`` covered, record an outbox row (its id is returned)."""

    async def forget(self, user_id: str) -> int:
        """One transaction: delete everything of the user and record an outbox row."""

    async def tail(self, user_id: str, limit: int) -> list[Entry]:
        """The newest ``limit`` live entries, ascending by seq."""

    async def live(self, user_id: str) -> list[Entry]:
        """Every live entry, ascending by seq."""

    async def live_among(self, user_id: str, ids: Sequence[str], content: str) -> list[Entry]:
        """Live entries whose id is in ``ids`` or whose content equals ``content``."""

    async def users(self) -> list[str]:
        """Every user with entries (for rebuilding a tier that lost its data)."""

    async def pending(self, user_id: str | None = None) -> list[tuple[int, str]]:
        """Outbox rows ``(id, user_id)`` not yet cleared, oldest first."""

    async def clear(self, outbox_ids: Sequence[int], *, lazy: bool = False) -> None:
        """Drop outbox rows. ``lazy`` lets the archive fold the delete into its next write."""

    async def aclose(self) -> None: ...


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
