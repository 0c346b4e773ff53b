"""The tiers a TieredMemoryStore composes: their interfaces, their errors, their namespaces.

Every stack in nomnesia is a short-term log + a vector index + an archive (the
source of truth). The log and the index have several implementations each
(Redis, Valkey; pgvector, Qdrant, Milvus, Redis vector sets ...), so their
interfaces live here, small and idempotent: the store may replay any call
after a crash, so a second identical call must change nothing.

The archive is the source of truth. Every write of the store is first one
archive transaction that also records an *outbox* row: the promise that the
short-term log and the vector index will be brought in line with the archive
for that user. The tiers are then updated and the outbox row cleared;
``recover()`` replays whatever rows are left. So the archive alone decides what
happened, and a crash between two backend writes can only leave a tier
*behind*, never the archive half-written.

Every tier of a store lives in one *namespace* (``check_namespace``), which
becomes a PostgreSQL schema, a Qdrant/Milvus collection and a Redis key
prefix, so many stores share one engine unseen. The in-process tiers are in
``memory_tiers.py``.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Protocol, runtime_checkable

from nomnesia.suite.contract import Entry

__all__ = ["NAMESPACE_RE", "ArchiveTier", "SelfChecking", "SharedArchive", "SharedLog",
           "ShortTermLog", "StalePrefix", "TierDown", "TierLost", "VectorIndex", "check_namespace",
           "new_namespace"]

NAMESPACE_RE = re.compile(r"^[a-z][a-z0-9_]{0,47}$")
"""What a namespace may be. It becomes a PostgreSQL schema, a Qdrant or Milvus
collection, a Redis key prefix and a SCAN glob, all unescaped, so only a
conservative alphabet is accepted (namespaces come from code, never users)."""


def new_namespace() -> str:
    """A fresh namespace (``nm_<16 hex>``), so that many stores share one engine unseen."""
    return f"nm_{secrets.token_hex(8)}"


def check_namespace(namespace: str) -> str:
    """``namespace`` if it matches ``NAMESPACE_RE``, else ValueError before anything is written."""
    if not isinstance(namespace, str) or not NAMESPACE_RE.match(namespace):
        raise ValueError(f"namespace {namespace!r} must match {NAMESPACE_RE.pattern}")
    return namespace


class TierLost(Exception):
    """A tier found that its engine lost data (e.g. a restart without persistence).

    Raised by a read that cannot vouch for its answer; the store then reads the
    archive instead, and ``recover()`` rebuilds the tier.
    """


class TierDown(Exception):
    """A tier's engine does not answer (down, restarting, failing over).

    Not a loss and not a refusal: on a read the store serves from the archive
    instead, and trusts the tier again once it answers; on the log's ``put`` after
    an archive commit it sends the put again, within its timeout, so an append
    waits out a failover. A tier raises it only for a connection that failed,
    never for an error the engine answered with (a bad argument stays an error:
    the archive must not hide it, and sending it again would not help)."""


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
        """Insert or overwrite entries, keyed by (user_id, id); idempotent.

        May raise ``TierDown`` when the engine did not answer (down, failing over):
        the put may or may not have landed, and the store sends it again, which an
        idempotent put makes safe (``TieredMemoryStore._log_put``).
        """

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
