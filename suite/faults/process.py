"""Faults on engine processes: ``pause`` (SIGSTOP, then SIGCONT) and ``kill`` (SIGKILL, then a
restart on the same port and data).

Both act through a *control*: ``nomnesia.adapters.engines.EngineControl`` for the engines the
session's provider started (it knows their processes), or the user's own commands
(``nemesis/commands.py``) on a deployment the suite did not start. A kill is over when it
returns (the engine answers again); it goes only to engines run with durable settings, so a
restart never loses what the engine itself acknowledged (SPEC "Faults").
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Iterable
from typing import Protocol

from .base import Started

__all__ = ["Control", "KillPart", "PausePart"]


class Control(Protocol):
    """What these parts need of an engine control."""

    def pause(self, engine: str) -> None: ...

    def resume(self, engine: str) -> None: ...

    def kill(self, engine: str) -> None: ...

    def start(self, engine: str) -> None: ...


class PausePart:
    """SIGSTOP/SIGCONT of the engine processes ``control`` can find."""

    fs: tuple[str, ...] = ("pause",)

    def __init__(self, control: Control, engines: Iterable[str]) -> None:
        self.control = control
        self.engines = set(engines)
        self.paused: set[str] = set()

    def applies(self, f: str, target: str) -> bool:
        return f in self.fs and target in self.engines

    async def start(self, f: str, target: str, rng: random.Random) -> Started:
        self.control.pause(target)
        self.paused.add(target)
        return Started(self.fs[0])

    async def heal(self, target: str) -> None:
        if target in self.paused:
            self.control.resume(target)
            self.paused.discard(target)

    def hits(self, f: str, target: str) -> int | None:
        return None  # a paused engine holds every call that reaches it; none is counted


class KillPart:
    """SIGKILL an engine, then start it again on the same data, waiting until it answers."""

    fs: tuple[str, ...] = ("kill",)

    def __init__(self, control: Control, engines: Iterable[str]) -> None:
        self.control = control
        self.engines = set(engines)

    def applies(self, f: str, target: str) -> bool:
        return f in self.fs and target in self.engines

    async def start(self, f: str, target: str, rng: random.Random) -> Started:
        await asyncio.to_thread(self.control.kill, target)
        restart = await asyncio.to_thread(self._restart, target)
        return Started(self.fs[0], note=f"engine answered {restart:.3f} s after restart",
                       held=False)

    def _restart(self, target: str) -> float:
        began = time.monotonic()
        self.control.start(target)
        return time.monotonic() - began

    async def heal(self, target: str) -> None:
        """Nothing to undo: ``start`` restarted the engine before it returned."""

    def hits(self, f: str, target: str) -> int | None:
        return None
