"""``stall``: bytes are read and dropped, nothing is forwarded either way, nothing is closed.

A peer that accepts and then says nothing: the client waits until its own timeout. Taking
the toxic off resets (RST) every connection it held: their bytes are gone, so a link that
carried on after the heal would hand the client a stream with a hole in it.
"""

from __future__ import annotations

from .base import Link, Step, Toxic, register

__all__ = ["Stall"]


@register
class Stall(Toxic):
    """A black hole: accepted, read, dropped."""

    name = "stall"
    forwards = False

    async def step(self, link: Link, request: bool) -> Step:
        self.hits += 1
        return Step.DROP

    def removed(self, link: Link) -> None:
        link.abort()
