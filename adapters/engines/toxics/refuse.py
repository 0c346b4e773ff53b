"""``refuse``: every connection is reset (RST), the open ones at once and each new one on accept."""

from __future__ import annotations

from .base import Link, Step, Toxic, register

__all__ = ["Refuse"]


@register
class Refuse(Toxic):
    """An engine that is down or unreachable: nothing gets through, and the client knows."""

    name = "refuse"

    def accepts(self) -> bool:
        self.hits += 1
        return False

    def armed(self, link: Link) -> None:
        if link.requested:  # a call in flight on it fails; an idle pooled one is not a hit
            self.hits += 1
        link.abort()

    async def step(self, link: Link, request: bool) -> Step:
        return Step.CUT
