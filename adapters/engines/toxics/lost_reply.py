"""``lost-reply``: the next reply on each connection open when it is set is swallowed, and the
connection reset: the request reached the engine (the write landed), the client never hears so.

Only connections past their first exchange are doomed: a reply lost in a handshake only fails
a connect, which loses no write. Connections opened while the toxic is on pass.
"""

from __future__ import annotations

from .base import Link, Step, Toxic, register

__all__ = ["LostReply"]


@register
class LostReply(Toxic):
    """Swallow one reply per connection, after its request landed; ``hits`` counts them."""

    name = "lost-reply"

    def __init__(self) -> None:
        super().__init__()
        self._doomed: set[Link] = set()  # the links whose next reply is lost

    def armed(self, link: Link) -> None:
        if link.rounds > 0:
            self._doomed.add(link)

    async def step(self, link: Link, request: bool) -> Step:
        if not request and link.requested and link in self._doomed:
            self._doomed.discard(link)
            self.hits += 1
            return Step.CUT  # the request landed; its reply never reaches the client
        return Step.FORWARD

    def removed(self, link: Link) -> None:
        self._doomed.discard(link)
