"""The seed's own four-method store, bugs and all, and a correct store with the same four methods.

The project began from a memory store of four methods: ``append_message(user_id,
role, content) -> None``, ``get_history(user_id, limit=10) -> list[dict]``
(dicts with ``role`` and ``content``), ``compact(user_id) -> None`` and
``consistent_state(user_id) -> bool``. No message ids, no search, no forget, no
``recover``, no ``keep_last``: SPEC.md's ``seed`` profile. Its short-term list
stands for Redis, its archive for PostgreSQL and its vector list for a vector
database; every ``await`` stands for a network call, where other requests run.

``SeedMemoryStore`` is the suite's positive control for that profile: it has the
seed's two classic bugs, and the suite must always report both, by guarantee:

- the vector write lands after an ``await`` (the embedding call), so a request
  cancelled there leaves a message in the short-term list with no vector, and
  ``consistent_state`` stays false forever (G10, G11);
- ``compact`` reads the short-term list, awaits the summarizer, then rewrites
  the list as ``[summary, *kept]`` from that stale read, so an append that
  landed meanwhile is lost (G1, G7).

``CorrectSeedStore`` is the negative control: the same four methods and tiers,
written so that the same suite finds nothing.

    python -m pytest --pyargs nomnesia.suite --store nomnesia.adapters.seed:SeedMemoryStore
"""

from __future__ import annotations

import asyncio
import random
from collections import defaultdict

from .text import HashingEmbedder

__all__ = ["KEEP", "CorrectSeedStore", "SeedMemoryStore"]

KEEP = 4
"""Messages ``compact`` keeps after the summary (the seed's constant, not an attribute)."""

Message = dict[str, str]


class _Tiers:
    """The three tiers and the slow calls, shared by both stores."""

    def __init__(self, seed: int | None) -> None:
        self._rng = random.Random(seed)
        self._short: dict[str, list[Message]] = defaultdict(list)  # Redis: short-term list
        self._archive: dict[str, list[Message]] = defaultdict(list)  # PostgreSQL: raw copy
        self._vectors: dict[str, list[tuple[Message, list[float]]]] = defaultdict(list)
        self._embedder = HashingEmbedder(64)

    async def _network(self) -> None:
        """A network call: a few event-loop turns in which other requests run."""
        for _ in range(self._rng.randint(1, 3)):
            await asyncio.sleep(0)

    async def _embed(self, content: str) -> list[float]:
        await self._network()
        return self._embedder.embed_one(content)

    async def _summarize(self, messages: list[Message]) -> Message:
        await self._network()  # the LLM call
        words = " / ".join(m["content"][:24] for m in messages)
        return {"role": "system", "content": f"Summary of {len(messages)} messages: {words}",
                "summary": "yes"}

    async def get_history(self, user_id: str, limit: int = 10) -> list[Message]:
        return [{"role": m["role"], "content": m["content"]}
                for m in self._short[user_id][-limit:]]

    async def consistent_state(self, user_id: str) -> bool:
        """Every message of the short-term list has its vector."""
        indexed = {id(m) for m, _ in self._vectors[user_id]}
        return all(id(m) in indexed for m in self._short[user_id] if "summary" not in m)


class SeedMemoryStore(_Tiers):
    """The seed's store: short-term list, archive and vectors, with the seed's two bugs."""

    def __init__(self, *, seed: int | None = None) -> None:
        super().__init__(seed)

    async def append_message(self, user_id: str, role: str, content: str) -> None:
        message = {"role": role, "content": content}
        self._short[user_id].append(message)
        self._archive[user_id].append(message)
        vector = await self._embed(content)  # bug: the message is already visible
        self._vectors[user_id].append((message, vector))

    async def compact(self, user_id: str) -> None:
        messages = list(self._short[user_id])
        if len(messages) <= KEEP:
            return
        summary = await self._summarize(messages[:-KEEP])
        self._short[user_id] = [summary, *messages[-KEEP:]]  # bug: rewritten from a stale read


class CorrectSeedStore(_Tiers):
    """The same four methods, correct: nothing is visible before every tier has it, and a
    compaction removes exactly what it summarised, whatever was appended meanwhile."""

    def __init__(self, *, seed: int | None = None) -> None:
        super().__init__(seed)
        self._compacting: dict[str, asyncio.Lock] = defaultdict(asyncio.Lock)

    async def append_message(self, user_id: str, role: str, content: str) -> None:
        vector = await self._embed(content)  # the slow call first, while nothing is written
        message = {"role": role, "content": content}
        # One step, no await: a cancel lands before it or after it, never inside.
        self._short[user_id].append(message)
        self._archive[user_id].append(message)
        self._vectors[user_id].append((message, vector))

    async def compact(self, user_id: str) -> None:
        async with self._compacting[user_id]:  # one compaction per user at a time
            old = self._short[user_id][:-KEEP]
            if not old:
                return
            summary = await self._summarize(old)
            current = self._short[user_id]
            # Appends only add at the end, so the summarised prefix is still the prefix.
            self._short[user_id] = [summary, *current[len(old):]]
