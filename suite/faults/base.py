"""The one fault model: a part per fault family, composed by fault name (Jepsen's nemesis).

A *part* handles a few fault names (``fs``), says where each applies (``applies``), starts
one fault on one target, and heals whatever it started there. Every fault of nomnesia is
one of these: the wire faults on the proxies (``wire.py``), pause and kill of engine
processes (``process.py``), failover and link faults of replicated topologies
(``replication.py``), the crash of a nemesis worker (``nemesis/crash.py``). The partial-
failure test (``during.py``) and the nemesis runner compose the same parts; they differ
only in how they schedule and judge.

:class:`Nemesis` composes parts the way ``jepsen.nemesis/compose`` does: each fault name
belongs to exactly one part, and a second claim on a name is an error. Healing is always
possible and idempotent, so a caller heals in a ``finally`` whatever it started.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["FaultPart", "Nemesis", "Started"]


@dataclass
class Started:
    """What a part's ``start`` did: how it reads, and whether the fault is still on."""

    what: str
    """How the fault reads in a history note or a window (``latency 50ms``)."""
    detail: str = ""
    """The nemesis report's detail for it (``latency50ms``, ``freeze``): what was drawn."""
    note: str = ""
    """What the fault's own machinery said (``engine answered 0.4 s after restart``)."""
    figures: dict[str, float] = field(default_factory=dict)
    """Measurements the fault returned (a failover's promotion time ...)."""
    held: bool = True
    """Whether the fault lasts until ``heal`` (a paused engine), or was over when ``start``
    returned (a kill and restart, a failover): the caller holds only the first kind."""


class FaultPart(Protocol):
    """One family of faults (the proxies, the engine processes, the replication links ...)."""

    fs: tuple[str, ...]
    """The fault names this part handles."""

    def applies(self, f: str, target: str) -> bool:
        """Whether fault ``f`` can hit ``target`` (an engine name, or ``client``)."""
        ...

    async def start(self, f: str, target: str, rng: random.Random) -> Started:
        """Start ``f`` on ``target``, drawing its parameters from ``rng``."""
        ...

    async def heal(self, target: str) -> None:
        """End whatever this part started on ``target``; a no-op when nothing is on."""
        ...

    def hits(self, f: str, target: str) -> int | None:
        """How many calls ``f`` on ``target`` has visibly hit so far (a counter: the caller
        takes differences), or None where the part cannot tell."""
        ...


class Nemesis:
    """Parts composed by fault name; each name is handled by exactly one part."""

    def __init__(self, parts: Iterable[FaultPart]) -> None:
        self.parts = list(parts)
        self.by_name: dict[str, FaultPart] = {}
        for part in self.parts:
            for f in part.fs:
                if f in self.by_name:
                    raise ValueError(f"fault {f!r} is claimed by {type(self.by_name[f]).__name__}"
                                     f" and {type(part).__name__}")
                self.by_name[f] = part

    def faults_for(self, target: str) -> list[str]:
        """The fault names that can hit ``target``, in a fixed order (seeds replay)."""
        return [f for f, part in self.by_name.items() if part.applies(f, target)]

    async def start(self, f: str, target: str, rng: random.Random) -> Started:
        part = self.by_name[f]
        if not part.applies(f, target):
            raise ValueError(f"fault {f!r} cannot hit {target!r}")
        return await part.start(f, target, rng)

    def hits(self, f: str, target: str) -> int | None:
        """``hits`` of the part that handles ``f``."""
        return self.by_name[f].hits(f, target)

    async def heal(self, targets: Iterable[str]) -> None:
        """Heal every part on every target named; each part is tried even if one raised."""
        errors: list[BaseException] = []
        for target in targets:
            for part in self.parts:
                try:
                    await part.heal(target)
                except Exception as exc:  # heal the rest, then say what failed
                    errors.append(exc)
        if errors:
            raise errors[0]
