"""Wire faults, on the fault proxy in front of each engine: one part for every toxic.

The fault names are the toxics' own (``nomnesia.adapters.engines.toxics``): ``lost-reply``,
``refuse``, ``stall``, ``latency``. A latency's milliseconds are drawn from the part's
``latencies`` (the partial-failure test keeps them short; the nemesis reaches half a second).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from nomnesia.adapters.engines.proxy import Proxy
from nomnesia.adapters.engines.toxics import TOXICS, Toxic, make
from nomnesia.adapters.engines.toxics.latency import Latency
from nomnesia.adapters.engines.toxics.lost_reply import LostReply
from nomnesia.adapters.engines.toxics.refuse import Refuse
from nomnesia.adapters.engines.toxics.stall import Stall

from .base import Started

__all__ = ["WirePart"]


class WirePart:
    """Toxics on the proxies of ``proxies`` (engine name -> proxy)."""

    fs: tuple[str, ...] = (LostReply.name, Refuse.name, Stall.name, Latency.name)

    def __init__(self, proxies: Mapping[str, Proxy],
                 latencies: Sequence[float] = (20, 50, 100)) -> None:
        missing = set(self.fs) - set(TOXICS)
        if missing:
            raise ValueError(f"no toxic for {sorted(missing)}")
        self.proxies = dict(proxies)
        self.latencies = tuple(latencies)
        self._on: dict[str, Toxic] = {}
        self._hits: dict[tuple[str, str], int] = {}  # (fault, engine) -> hits of healed toxics

    def applies(self, f: str, target: str) -> bool:
        return f in self.fs and target in self.proxies

    async def start(self, f: str, target: str, rng: random.Random) -> Started:
        ms = float(rng.choice(self.latencies)) if f == Latency.name else 0.0
        toxic = make(f, ms=ms) if f == Latency.name else make(f)
        await self.heal(target)
        self.proxies[target].set_toxic(toxic)
        self._on[target] = toxic
        return Started(toxic.describe(), detail=f"{f}{int(ms)}ms" if ms else f)

    async def heal(self, target: str) -> None:
        toxic = self._on.pop(target, None)
        if toxic is None:
            return
        self.proxies[target].set_toxic(None)
        key = (toxic.name, target)
        self._hits[key] = self._hits.get(key, 0) + toxic.hits

    def hits(self, f: str, target: str) -> int | None:
        """What the toxic visibly did so far: replies swallowed (``lost-reply``: only then
        did a write land unheard), connections refused, request bytes held (``stall``),
        chunks delayed (``latency``)."""
        on = self._on.get(target)
        return self._hits.get((f, target), 0) + (on.hits if on is not None and on.name == f
                                                 else 0)
