"""Faults of replicated topologies: ``failover``, and ``lag`` / ``cut-primary`` on their links.

A failover is the provider's (``EmbeddedProvider.failover``: kill or freeze the primary,
promote a replica, rejoin the old primary), or the user's command on a deployment the suite
did not start; it blocks for seconds, so it runs in a thread while the load goes on, and is
over when it returns. The link faults act on the proxies between members
(``EmbeddedProvider.lag_links``, ``cut_primary``, ``heal_links``; docs/topologies.md).
"""

from __future__ import annotations

import asyncio
import functools
import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .base import Started

__all__ = ["LINK_LAGS_MS", "FailoverPart", "LinkPart"]

LINK_LAGS_MS: tuple[float, ...] = (50.0, 300.0, 1000.0)
"""The replication lags a ``lag`` fault draws from: below, near and above a store's round
trip and a second, as a busy network or a replica catching up shows them."""


class FailoverPart:
    """Fail a replicated engine over; with ``freeze_share`` of them freezing the primary.

    ``lag`` > 0 cuts the standby off first and keeps the load on the lone primary that many
    seconds (``detach``), so what it acknowledges meanwhile is on it alone (the positive
    control of an asynchronous pair); ``cascade`` fails every other replicated engine of
    ``engines`` over after the drawn one, as losing a zone takes every primary in it.
    """

    fs: tuple[str, ...] = ("failover",)

    def __init__(self, provider: Any, engines: Iterable[str], *, freeze_share: float,
                 lag: float = 0.0, cascade: Sequence[str] = (),
                 real: Mapping[str, str] | None = None,
                 detach: Any = None) -> None:
        self.provider = provider
        self.engines = list(engines)
        self.freeze_share = freeze_share
        self.lag = lag
        self.cascade = list(cascade)
        self.real = dict(real or {})
        self.detach = detach

    def applies(self, f: str, target: str) -> bool:
        return f in self.fs and target in self.engines

    async def start(self, f: str, target: str, rng: random.Random) -> Started:
        frozen = rng.random() < self.freeze_share
        details = ["freeze"] if frozen else []
        if self.lag > 0:
            await asyncio.to_thread(self.detach, self.real[target])
            await asyncio.sleep(self.lag)  # the fault itself: the primary alone takes writes
            details.append(f"lag{self.lag:g}s")
        figures = {name: float(value) for name, value in (await asyncio.to_thread(
            functools.partial(self.provider.failover, target, freeze=frozen))).items()}
        notes = [", ".join(f"{name} {value:g}" for name, value in figures.items())]
        for other in (engine for engine in self.cascade if engine != target):
            more = await asyncio.to_thread(self.provider.failover, other)
            notes.append(f"then {other}: " + ", ".join(f"{name} {value:g}"
                                                         for name, value in more.items()))
            details.append(other)
        return Started(self.fs[0], detail="+".join(details), note="; ".join(notes),
                       figures=figures, held=False)

    async def heal(self, target: str) -> None:
        """Nothing to undo: the provider's failover rejoined the old primary."""

    def hits(self, f: str, target: str) -> int | None:
        return None


class LinkPart:
    """Delay every replication link of an engine (``lag``), or cut its primary off from its
    replicas and Sentinels until they promote another (``cut-primary``: over when the
    provider's call returns); ``heal`` undoes both."""

    fs: tuple[str, ...] = ("lag", "cut-primary")

    def __init__(self, provider: Any, lags: Sequence[float] = LINK_LAGS_MS) -> None:
        self.provider = provider
        self.lags = tuple(lags)

    def applies(self, f: str, target: str) -> bool:
        return f in self.provider.link_faults(target)

    async def start(self, f: str, target: str, rng: random.Random) -> Started:
        if f == self.fs[0]:
            ms = rng.choice(self.lags)
            note = await asyncio.to_thread(self.provider.lag_links, target, ms)
            return Started(f"lag {ms:g}ms", detail=f"lag{int(ms)}ms", note=note)
        note = await asyncio.to_thread(self.provider.cut_primary, target)
        return Started(f, detail=f, note=note, held=False)

    async def heal(self, target: str) -> None:
        await asyncio.to_thread(self.provider.heal_links, target)

    def hits(self, f: str, target: str) -> int | None:
        return None
