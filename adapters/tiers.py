"""The tier interfaces a TieredMemoryStore composes: short-term log and vector index.

Every stack in nomnesia is a short-term log + a vector index + an archive (the
source of truth). The log and the index have several implementations each
(Redis, Valkey; pgvector, Qdrant, Milvus, Redis vector sets ...), so their
interfaces live here, small and idempotent: the store may replay any call
after a crash, so a second identical call must change nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from nomnesia.suite.contract import Entry

__all__ = ["SelfChecking", "SharedLog", "ShortTermLog", "TierLost", "VectorIndex"]


class TierLost(Exception):
    """A tier found that its engine lost data (e.g. a restart without persistence).

    Raised by a read that cannot vouch for its answer; the store then reads the
    archive instead, and ``recover()`` rebuilds the tier.
    """


@runtime_checkable
class SelfChecking(Protocol):
    """Optional for a tier: it can tell whether its engine lost data since it was last complete.

    A namespace-wide marker that disappears with the data is enough: the store
    rebuilds the tier from the archive between ``begin_rebuild`` and
    ``mark_intact``, and the marker is set only if nothing was lost meanwhile.
    """

    async def intact(self) -> bool: ...

    async def begin_rebuild(self) -> str: ...

    async def mark_intact(self, token: str) -> bool: ...


@runtime_checkable
class SharedLog(Protocol):
    """Optional for a log that several store processes (replicas) share.

    In one process the store knows which users have a write in flight and reads
    the archive for them. Another replica cannot know, so a log it reads mid-write
    (a compaction's summary put, its originals not yet removed) shows two
    summaries. A per-user *write marker* in the log engine itself carries that
    knowledge: set when a write starts, deleted when it ends, left behind by a
    write that died, and read atomically with the tail.
    """

    async def begin_write(self, user_id: str, token: str) -> bool:
        """Set the user's marker to ``token``; whether a marker was already there.

        One left behind means a write died mid-way (perhaps in another process):
        the caller re-syncs the user's tiers before writing.
        """

    async def end_write(self, user_id: str, token: str) -> None:
        """Delete the marker if it still holds ``token`` (a late call cannot clear a newer one)."""

    async def tail_if_idle(self, user_id: str, limit: int) -> list[Entry] | None:
        """``tail``, or None if the user's marker is set; one atomic read of both."""


@runtime_checkable
class ShortTermLog(Protocol):
    """The newest entries of each user, in seq order, for fast ``get_history``.

    ``name`` names the backend in errors and consistency reports.
    """

    name: str

    async def put(self, entries: Sequence[Entry]) -> None:
        """Insert or overwrite entries, keyed by (user_id, id); idempotent."""

    async def remove(self, user_id: str, entry_ids: Sequence[str]) -> None:
        """Remove entries by id; ids that are absent are ignored."""

    async def tail(self, user_id: str, limit: int) -> list[Entry]:
        """The newest ``limit`` entries of the user, ascending by seq.

        A log that can tell it lost data (``SelfChecking``) raises ``TierLost``
        instead of answering from what is left.
        """

    async def ids(self, user_id: str) -> set[str]:
        """Every entry id the log holds for the user (for ``consistent_state``)."""

    async def delete_user(self, user_id: str) -> None:
        """Drop everything of the user."""

    async def aclose(self) -> None: ...


@runtime_checkable
class VectorIndex(Protocol):
    """Vectors of live entries, searched per user.

    ``search_staleness`` is how long (seconds) an upsert may take to become
    visible to ``query``; the store adds it to its own declaration.
    User ids are data: implementations filter by exact equality on a stored
    field, never by building query syntax from the id.
    """

    name: str
    dim: int
    search_staleness: float

    async def upsert(self, entries: Sequence[Entry], vectors: Sequence[Sequence[float]]) -> None:
        """Insert or overwrite, keyed by (user_id, id); idempotent."""

    async def delete(self, user_id: str, entry_ids: Sequence[str]) -> None:
        """Delete by id; ids that are absent are ignored."""

    async def query(self, user_id: str, vector: Sequence[float], k: int) -> list[str]:
        """Ids of the user's ``k`` nearest entries (cosine), best first."""

    async def ids(self, user_id: str) -> set[str]:
        """Every entry id the index holds for the user (for ``consistent_state``)."""

    async def delete_user(self, user_id: str) -> None: ...

    async def aclose(self) -> None: ...
