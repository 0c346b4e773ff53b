"""``latency``: every chunk, both ways, is held back ``ms`` milliseconds first."""

from __future__ import annotations

import asyncio

from .base import Link, Step, Toxic, register

__all__ = ["Latency"]


@register
class Latency(Toxic):
    """A slow network: each chunk waits ``ms`` before it is forwarded."""

    name = "latency"

    def __init__(self, ms: float = 100.0) -> None:
        super().__init__()
        self.ms = float(ms)

    async def step(self, link: Link, request: bool) -> Step:
        if self.ms > 0:
            self.hits += 1
            await asyncio.sleep(self.ms / 1000)  # the injected delay itself
        return Step.FORWARD

    def describe(self) -> str:
        return f"latency {self.ms:g}ms"
