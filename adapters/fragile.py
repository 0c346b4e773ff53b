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
from types import TracebackType

from nomnesia.suite.contract import ConsistencyReport, Difference, Entry

from .text import ConcatSummarizer, HashingEmbedder

__all__ = ["FragileMemoryStore"]


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
