"""FragileMemoryStore: the seed's store, bugs and all. The suite must always catch it.

It is kept as a positive control: if a change to the suite ever lets this
store pass, the suite has gone blind. Its bugs are the ones users call amnesia:

- the vector "index" is written after an await, so search lags appends while
  claiming ``search_staleness = 0``, and a cancel there loses the write;
- seq is the length of a list read before an await, so concurrent appends
  share a seq and reorder;
- compaction deletes the originals, *then* awaits the summarizer, so readers
  see a hole and an interrupted compaction loses the entries outright;
- search filters by key prefix, so user ``ann`` sees ``anna``'s memory;
- retries with a ``message_id`` append a duplicate; no per-user locking.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Sequence
from types import TracebackType

from nomnesia.suite.contract import ConsistencyReport, Difference, Entry

from .memory_tiers import InMemoryArchive, InMemoryIndex, InMemoryLog
from .text import ConcatSummarizer, HashingEmbedder
from .tiered import TieredMemoryStore

__all__ = ["EngineError", "FragileMemoryStore", "LongLongLog", "TopKHeapIndex",
           "UnclampedTieredStore", "clamped_tiered_store", "unclamped_tiered_store"]


class FragileMemoryStore:
    """Short-term list, raw "PostgreSQL" list and a "vector" dict, written in that order."""

    search_staleness: float = 0.0

    def __init__(self, *, keep_last: int = 4, seed: int | None = None) -> None:
        self.keep_last = keep_last
        self._rng = random.Random(seed)
        self._short: dict[str, list[Entry]] = {}
        self._postgres: dict[str, list[Entry]] = {}
        self._vectors: dict[str, tuple[Entry, list[float]]] = {}
        self._embedder = HashingEmbedder()
        self._summarizer = ConcatSummarizer()

    async def __aenter__(self) -> FragileMemoryStore:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()

    async def _jitter(self) -> None:
        # The seed awaited network calls here; a few event-loop turns are enough
        # to let other tasks interleave the same way.
        for _ in range(self._rng.randint(0, 3)):
            await asyncio.sleep(0)

    async def append_message(self, user_id: str, role: str, content: str,
                             *, message_id: str | None = None) -> Entry:
        short = self._short.setdefault(user_id, [])
        seq = len(self._postgres.get(user_id, [])) + 1
        await self._jitter()
        entry = Entry(message_id or uuid.uuid4().hex, user_id, seq, role, content)
        short.append(entry)
        self._postgres.setdefault(user_id, []).append(entry)
        await self._jitter()
        self._vectors[f"{user_id}:{entry.id}"] = (entry, self._embedder.embed_one(content))
        return entry

    async def get_history(self, user_id: str, limit: int = 10) -> list[Entry]:
        return list(self._short.get(user_id, [])[-limit:])

    async def search(self, user_id: str, query: str, k: int = 5) -> list[Entry]:
        q = self._embedder.embed_one(query)
        hits = [(sum(a * b for a, b in zip(q, vec, strict=True)), entry)
                for key, (entry, vec) in self._vectors.items() if key.startswith(user_id)]
        hits.sort(key=lambda hit: hit[0], reverse=True)
        return [entry for _, entry in hits[:k]]

    async def compact(self, user_id: str) -> Entry | None:
        short = self._short.get(user_id, [])
        if len(short) <= self.keep_last:
            return None
        old = short[: -self.keep_last]
        del short[: -self.keep_last]
        await self._jitter()
        content = await self._summarizer.summarize(user_id, old)
        summary = Entry(uuid.uuid4().hex, user_id, old[0].seq, "summary", content,
                        tuple(e.id for e in old))
        short.insert(0, summary)
        return summary

    async def forget(self, user_id: str) -> None:
        self._short.pop(user_id, None)
        await self._jitter()
        for key in [key for key in self._vectors if key.startswith(user_id)]:
            del self._vectors[key]

    async def consistent_state(self, user_id: str) -> ConsistencyReport:
        short = {e.id for e in self._short.get(user_id, [])}
        vectors = {e.id for key, (e, _) in self._vectors.items() if key.startswith(f"{user_id}:")}
        differences = [Difference("vector", "missing", i) for i in sorted(short - vectors)]
        return ConsistencyReport.of(user_id, differences, backends=("short-term", "vector"))

    async def recover(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


# --------------------------------------------------------------------------- unclamped k and limit


class EngineError(RuntimeError):
    """An engine's error reply (like redis-py's ResponseError), not a caller's ValueError."""


class LongLongLog(InMemoryLog):
    """An in-process log that takes ``limit`` the way Redis' ``ZRANGE`` does: a long long.

    ``tail`` is ``ZRANGE key -limit -1`` on the wire; a start below ``-(2**63)`` is
    refused, as Redis refuses it ("value is not an integer or out of range").
    """

    async def tail(self, user_id: str, limit: int) -> list[Entry]:
        if not -(2**63) <= -limit < 2**63:
            raise EngineError("ERR value is not an integer or out of range")
        return await super().tail(user_id, limit)


class TopKHeapIndex(InMemoryIndex):
    """An in-process index that takes ``k`` the way Redis' ``VSIM ... COUNT k`` does.

    ``COUNT`` is a long long, and the engine allocates a heap of ``k`` 8-byte slots
    before it looks at the data: past ``memory`` bytes it aborts (Redis logs "Out Of
    Memory allocating 68719476736 bytes!" for ``COUNT 2**33``), and every later call,
    of any user, finds the connection closed.
    """

    def __init__(self, dim: int = 384, name: str = "index", *, memory: int = 2**30) -> None:
        super().__init__(dim, name)
        self.memory = memory
        self.aborted = False

    def _alive(self) -> None:
        if self.aborted:
            raise ConnectionError("Connection closed by server (the engine aborted earlier)")

    async def upsert(self, entries: Sequence[Entry], vectors: Sequence[Sequence[float]]) -> None:
        self._alive()
        await super().upsert(entries, vectors)

    async def delete(self, user_id: str, entry_ids: Sequence[str]) -> None:
        self._alive()
        await super().delete(user_id, entry_ids)

    async def query(self, user_id: str, vector: Sequence[float], k: int) -> list[str]:
        self._alive()
        if k >= 2**63:
            raise EngineError("ERR COUNT is not an integer or out of range")
        if 8 * k > self.memory:
            self.aborted = True
            raise ConnectionError(f"Connection closed by server (it aborted: Out Of Memory "
                                  f"allocating {8 * k} bytes)")
        return await super().query(user_id, vector, k)

    async def ids(self, user_id: str) -> set[str]:
        self._alive()
        return await super().ids(user_id)

    async def delete_user(self, user_id: str) -> None:
        self._alive()
        await super().delete_user(user_id)


class UnclampedTieredStore(TieredMemoryStore):
    """TieredMemoryStore as it was before issue 14: the caller's k and limit go to the tiers.

    It asks the index for ``max(4 * k, 20)`` ids and the log for ``limit`` entries,
    whatever their size. On ``LongLongLog`` and ``TopKHeapIndex`` the suite's limit
    tests must fail it (tests/test_limits.py), and pass ``clamped_tiered_store``.
    """

    _index_k = staticmethod(lambda k: max(4 * k, 20))
    _history_limit = staticmethod(lambda limit: limit)


def unclamped_tiered_store() -> UnclampedTieredStore:
    """``--store`` factory of the positive control (raw k and limit, engine-like tiers)."""
    return UnclampedTieredStore(log=LongLongLog(), index=TopKHeapIndex(),
                                archive=InMemoryArchive())


def clamped_tiered_store() -> TieredMemoryStore:
    """The same engine-like tiers under the real store: the limit tests must pass it."""
    return TieredMemoryStore(log=LongLongLog(), index=TopKHeapIndex(), archive=InMemoryArchive())
