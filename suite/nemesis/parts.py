"""Faults as parts, composed by name: Jepsen's nemesis protocol over the suite's engine seam.

A *part* knows a few fault names (``fs``), says whether it can act on an engine
(``applies``), starts one fault on one engine and heals it. :class:`Nemesis`
composes parts the way ``jepsen.nemesis/compose`` does: every fault name belongs
to exactly one part, and a second claim on a name is an error, not a silent
override. Healing is always possible and idempotent (``heal``), so a test can heal
in a ``finally`` whatever it started.

The vocabulary is Toxiproxy's, on the suite's proxy (``proxy.py``):

- ``lost-reply``: the next reply on every open connection is swallowed and the
  connection reset, after the request reached the engine (the write landed; the
  client never hears so);
- ``refuse``: every connection is reset, and every new one on accept;
- ``stall``: bytes are read and dropped; the heal closes what the stall held;
- ``latency``: every chunk is held back (20 to 100 ms);
- ``pause``: the engine process is stopped (SIGSTOP) and continued (SIGCONT), for
  engines the session's provider started and can find.

Kill-and-restart stays with the long nemesis (``runner.py``): the embedded Redis
runs without persistence, so a restart there would lose what the engine itself
acknowledged and fail a store for the suite's own setting (SPEC "Faults").
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from nomnesia.adapters.engines.proxy import Proxy

__all__ = ["WIRE", "FaultPart", "Nemesis", "PausePart", "WirePart"]

WIRE: dict[str, str] = {"lost-reply": "drop-replies", "refuse": "reset", "stall": "blackhole",
                        "latency": "latency"}
"""Each wire fault's proxy mode."""


class FaultPart(Protocol):
    """One kind of fault source (the proxies, the engine processes ...)."""

    fs: tuple[str, ...]
    """The fault names this part handles."""

    def applies(self, f: str, engine: str) -> bool:
        """Whether fault ``f`` can hit ``engine``."""
        ...

    def start(self, f: str, engine: str, rng: random.Random) -> str:
        """Start ``f`` on ``engine``; returns what was done (``latency 50ms``)."""
        ...

    def heal(self, engine: str) -> None:
        """End whatever this part started on ``engine``; a no-op when nothing is active."""
        ...

    def hits(self, f: str, engine: str) -> int | None:
        """How many calls ``f`` on ``engine`` has visibly hit so far (a counter: the caller
        takes differences), or None where the part cannot tell."""
        ...


class WirePart:
    """Wire faults on the proxies in front of the engines."""

    fs: tuple[str, ...] = tuple(WIRE)

    def __init__(self, proxies: Mapping[str, Proxy]) -> None:
        self.proxies = dict(proxies)

    def applies(self, f: str, engine: str) -> bool:
        return f in WIRE and engine in self.proxies

    def start(self, f: str, engine: str, rng: random.Random) -> str:
        latency = float(rng.choice((20, 50, 100))) if f == "latency" else 0.0
        self.proxies[engine].set_mode(WIRE[f], latency)
        return f"{f} {latency:g}ms" if latency else f

    def heal(self, engine: str) -> None:
        proxy = self.proxies.get(engine)
        if proxy is not None and proxy.mode != "pass":
            proxy.set_mode("pass")

    def hits(self, f: str, engine: str) -> int | None:
        """Replies swallowed, for ``lost-reply``: only then did a write land unheard."""
        return self.proxies[engine].swallowed if f == "lost-reply" else None


class PausePart:
    """SIGSTOP/SIGCONT of the engine processes an ``EngineControl`` can find."""

    fs: tuple[str, ...] = ("pause",)

    def __init__(self, control: Any, engines: Iterable[str]) -> None:
        self.control = control
        self.engines = set(engines)
        self.paused: set[str] = set()

    def applies(self, f: str, engine: str) -> bool:
        return f == "pause" and engine in self.engines

    def start(self, f: str, engine: str, rng: random.Random) -> str:
        self.control.pause(engine)
        self.paused.add(engine)
        return "pause"

    def heal(self, engine: str) -> None:
        if engine in self.paused:
            self.control.resume(engine)
            self.paused.discard(engine)

    def hits(self, f: str, engine: str) -> int | None:
        return None  # a paused engine holds every call that reaches it; none is counted


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

    def faults_for(self, engine: str) -> list[str]:
        """The fault names that can hit ``engine``, in a fixed order (seeds replay)."""
        return [f for f, part in self.by_name.items() if part.applies(f, engine)]

    def start(self, f: str, engine: str, rng: random.Random) -> str:
        part = self.by_name[f]
        if not part.applies(f, engine):
            raise ValueError(f"fault {f!r} cannot hit {engine!r}")
        return part.start(f, engine, rng)

    def hits(self, f: str, engine: str) -> int | None:
        """``hits`` of the part that handles ``f``."""
        return self.by_name[f].hits(f, engine)

    def heal(self, engines: Iterable[str]) -> None:
        """Heal every part on every engine named; each part is tried even if one raised."""
        errors: list[BaseException] = []
        for engine in engines:
            for part in self.parts:
                try:
                    part.heal(engine)
                except Exception as exc:  # heal the rest, then say what failed
                    errors.append(exc)
        if errors:
            raise errors[0]


def session_nemesis(scope: Any, provider: Any) -> Nemesis:
    """The nemesis for one faulted scope: wire faults on its proxies, pauses where the
    provider is the embedded one (it alone knows its engines' processes)."""
    parts: list[FaultPart] = [WirePart(scope.engines)]
    pausable = sorted(scope.provided)
    if pausable:
        from nomnesia.adapters.engines import EmbeddedProvider, EngineControl

        if isinstance(provider, EmbeddedProvider):
            parts.append(PausePart(EngineControl(provider), pausable))
    return Nemesis(parts)
