"""``crash``: SIGKILL a nemesis load worker mid-call; a fresh one reopens the namespace.

The one fault whose target is the client, not an engine: the store's process dies with calls
in flight, and its successor must find what was acknowledged (after ``recover()``). It is a
part like the others (``nomnesia.suite.faults.base``), composed by the runner; what it kills
and spawns are the runner's workers, reached through :class:`Workers`.
"""

from __future__ import annotations

import random
from typing import Protocol

from ..faults.base import Started

__all__ = ["CrashPart", "Workers"]


class Workers(Protocol):
    """What the crash needs of the runner."""

    async def standby_ready(self) -> None:
        """Until the warm standby has imported everything (so the crash measures recovery,
        not imports)."""
        ...

    async def kill_worker(self) -> int:
        """SIGKILL a live load worker (drawn by the run's seeded generator); when."""
        ...

    async def spawn(self) -> object:
        """Activate the standby as a load worker."""
        ...


class CrashPart:
    """Kill a load worker and let the standby take its place."""

    fs: tuple[str, ...] = ("crash",)

    def __init__(self, workers: Workers) -> None:
        self.workers = workers

    def applies(self, f: str, target: str) -> bool:
        return f in self.fs and target == "client"

    async def prepare(self) -> None:
        await self.workers.standby_ready()

    async def start(self, f: str, target: str, rng: random.Random) -> Started:
        await self.workers.kill_worker()
        await self.workers.spawn()
        return Started(self.fs[0], held=False)

    async def heal(self, target: str) -> None:
        """Nothing to undo: ``start`` spawned the worker's successor."""

    def hits(self, f: str, target: str) -> int | None:
        return None
