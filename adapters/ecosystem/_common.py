"""What every ecosystem adapter shares: the contract-side mapping a team would write once.

None of the audited libraries has the contract's ``seq``, ``covers`` or
``compact``; each adapter maps them the same obvious way, written here once:

- ``seq`` comes from :func:`next_seq`, a per-process counter seeded from the
  wall clock (a "timestamp" column is what teams reach for);
- ``compact`` reads the live history, writes one summary (the project's
  deterministic :class:`~nomnesia.adapters.text.ConcatSummarizer`) whose
  ``covers`` lists every message id of the prefix, then deletes the prefix with
  whatever the library offers; the adapters keep no lock of their own, so the
  library's lack of a conditional write stays visible;
- ``limit`` and ``k`` are clamped to :data:`ALL` before they reach a library:
  the contract has no upper bound, the libraries do (so ``test_limits.py``
  passes on every audit; ``probes.huge_limits`` shows what the clamp keeps
  from the library: PostgreSQL ``LIMIT`` overflowing its bigint).

Validation: the adapters check only the contract's own vocabulary (``role``,
``message_id``, ``limit``, ``k``, the query's type) with
:mod:`nomnesia.suite.contract.validation`, as a team would; ``user_id`` and ``content``
go to the library exactly as given, because how the library treats them is
what the audit measures. The one exception is ``consistent_state``, which is
the adapter's own (no library has it): it validates the user id itself.
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import Any

from nomnesia.suite.contract import SUMMARY_ROLE, ConsistencyReport, Entry, EntryLike
from nomnesia.suite.contract.validation import (
    validate_limit,
    validate_message_id,
    validate_query,
    validate_role,
    validate_user_id,
)

from ..text import ConcatSummarizer, HashingEmbedder

__all__ = [
    "ALL",
    "DIM",
    "AuditStore",
    "clamp",
    "covers_of",
    "embedder",
    "next_seq",
    "retried",
    "summarize",
    "vector_id",
]

ALL = 10_000
"""The most entries an adapter asks a library for in one call."""

DIM = 64
"""Dimension of the deterministic embedder every audit uses (no model download)."""

_seq_lock = threading.Lock()
_seq = itertools.count(time.time_ns() // 1000)


def next_seq() -> int:
    """A strictly increasing sequence number for this process (microseconds at start)."""
    with _seq_lock:
        return next(_seq)


_VECTOR_IDS = uuid.UUID("0b7e1c0e-8f0a-4a43-9d55-3f1c2b9e6a10")


def vector_id(user_id: str, entry_id: str) -> str:
    """A vector store's id for one user's entry: message ids are unique per user only."""
    return str(uuid.uuid5(_VECTOR_IDS, f"{user_id}\x00{entry_id}"))


def clamp(name: str, value: int) -> int:
    """``limit``/``k`` validated as the contract says, then bounded for the library."""
    return min(validate_limit(name, value), ALL)


_embedder = HashingEmbedder(DIM)


def embedder() -> HashingEmbedder:
    """The deterministic hashing embedder, shared (it is stateless)."""
    return _embedder


def retried(entries: Iterable[Entry], message_id: str, role: str, content: str) -> Entry | None:
    """The entry an idempotent retry returns (G6), None if ``message_id`` is new.

    The libraries keep no index by message id, so the adapters scan the user's
    entries; a retry with other role or content is refused, as SPEC asks.
    """
    for existing in entries:
        if existing.id == message_id:
            if (existing.role, existing.content) != (role, content):
                raise ValueError(f"message_id {message_id!r} already holds other content")
            return existing
    return None


def covers_of(prefix: Sequence[EntryLike]) -> tuple[str, ...]:
    """Message ids a summary of ``prefix`` replaces (through earlier summaries, never their ids).

    Each id once: where a library lets two compactions both win, the next
    prefix holds two summaries over the same messages, and concatenating their
    covers would double the list at every round (gigabytes within a minute).
    """
    covers: dict[str, None] = {}
    for entry in prefix:
        covers.update(dict.fromkeys(entry.covers if entry.role == SUMMARY_ROLE else (entry.id,)))
    return tuple(covers)


_summarizer = ConcatSummarizer()


async def summarize(user_id: str, prefix: Sequence[EntryLike]) -> str:
    return await _summarizer.summarize(user_id, prefix)


def check_append(role: object, message_id: object) -> tuple[str, str | None]:
    """The contract-side checks of ``append_message``: role and message id only."""
    return validate_role(role), validate_message_id(message_id)


def check_query(query: object) -> str:
    return validate_query(query)


def entry(entry_id: str, user_id: str, seq: int, role: str, content: str,
          covers: Sequence[str] = ()) -> Entry:
    return Entry(entry_id, user_id, int(seq), role, content, tuple(covers))


class AuditStore:
    """Base of the audit adapters: keep_last, staleness, lifecycle; no guarantee of its own.

    ``consistent_state`` defaults to "one backend of record, nothing to
    compare"; adapters over two backends override it. ``recover`` does nothing:
    none of the libraries has a recovery step, and the adapters add none.
    """

    library = "unknown"
    backends: tuple[str, ...] = ()
    search_staleness: float = 0.0

    def __init__(self, *, keep_last: int = 4) -> None:
        self.keep_last = validate_limit("keep_last", keep_last)

    async def consistent_state(self, user_id: str) -> ConsistencyReport:
        """Validates the id: this method is the adapter's own, no library call would."""
        return ConsistencyReport.of(validate_user_id(user_id), (), self.backends)

    async def recover(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()


class ChatPlusVectors(AuditStore):
    """An audit adapter over a chat-history store plus a vector store, the pair most teams build.

    langchain-postgres and llama-index both leave the write path to the team:
    the message goes to the chat history, then its copy to the vector store,
    with no transaction or outbox between them. That path, the idempotent retry
    of a ``message_id`` and the history read are the same for both, so they
    are written here once; a subclass says how to read and write its two
    libraries (``_entries``, ``_record``, ``_index``).
    """

    async def _entries(self, user_id: str) -> list[Entry]:
        """The user's live history, oldest first, read from the chat store."""
        raise NotImplementedError

    async def _record(self, e: Entry) -> None:
        """Add ``e`` to the user's chat history."""
        raise NotImplementedError

    async def _index(self, e: Entry) -> None:
        """Add ``e``'s copy to the vector store."""
        raise NotImplementedError

    async def _replace(self, user_id: str, entries: Sequence[Entry]) -> None:
        """Make ``entries`` the user's whole chat history (the library's clear-and-set)."""
        raise NotImplementedError

    async def _unindex(self, user_id: str, entry_ids: Sequence[str]) -> None:
        """Delete the vector-store copies of the user's ``entry_ids``."""
        raise NotImplementedError

    async def append_message(self, user_id: str, role: str, content: str,
                             *, message_id: str | None = None) -> Entry:
        role, message_id = check_append(role, message_id)
        if message_id is not None:
            existing = retried(await self._entries(user_id), message_id, role, content)
            if existing is not None:
                return existing
        e = entry(message_id or uuid.uuid4().hex, user_id, next_seq(), role, content)
        await self._record(e)
        await self._index(e)
        return e

    async def get_history(self, user_id: str, limit: int = 10) -> list[Entry]:
        limit = clamp("limit", limit)
        return (await self._entries(user_id))[-limit:]

    async def compact(self, user_id: str) -> Entry | None:
        """History first (summary + kept), then the summary's copy, then the prefix's
        copies out of the vector store: three library calls, no lock, as teams write it."""
        live = await self._entries(user_id)
        if len(live) <= self.keep_last:
            return None
        prefix, kept = live[: len(live) - self.keep_last], live[len(live) - self.keep_last:]
        summary = entry(uuid.uuid4().hex, user_id, prefix[-1].seq, SUMMARY_ROLE,
                        await summarize(user_id, prefix), covers_of(prefix))
        await self._replace(user_id, [summary, *kept])
        await self._index(summary)
        await self._unindex(user_id, [e.id for e in prefix])
        return summary

