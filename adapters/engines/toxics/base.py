"""The toxic interface and its registry: what the fault proxy may do to one connection.

After Toxiproxy's ``toxics/``: one small class per fault, each in a module of its own that
registers it by name, and a proxy (``proxy.py``) that calls the interface below and names no
toxic. A toxic is set on a proxy for every connection, or for the connections of some peers
(a replication link); setting, stepping and removing all run on the proxy's event loop.
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar, Protocol, TypeVar

__all__ = ["TOXICS", "Link", "Step", "Toxic", "make", "register"]


class Step(enum.Enum):
    """What a toxic does with one chunk of bytes."""

    FORWARD = "forward"
    DROP = "drop"
    """Read and thrown away: the peer waits for bytes that never come (a stall)."""
    CUT = "cut"
    """The connection is reset (RST) on both sides."""


class Link(Protocol):
    """One proxied connection, as a toxic sees it (the proxy's ``_Conn``)."""

    rounds: int
    """Request/reply exchanges completed on it (a reply went back after a request)."""
    requested: bool
    """A request went upstream since the last reply."""

    def abort(self) -> None:
        """Reset both sides (RST)."""
        ...


class Toxic:
    """A fault on the wire. Subclasses override what they change; the defaults forward.

    ``hits`` counts what the toxic visibly did (replies swallowed, connections refused,
    chunks delayed or dropped), so a fault that reached nothing can be told apart from one
    that did (a check counts only if it ran).
    """

    name: ClassVar[str] = ""
    forwards: ClassVar[bool] = True
    """Whether a connection accepted under this toxic gets an upstream at all."""

    def __init__(self) -> None:
        self.hits = 0

    def accepts(self) -> bool:
        """Whether a new connection is let in (False: it is reset at once)."""
        return True

    def armed(self, link: Link) -> None:
        """Called for each connection already open when the toxic is set on it."""

    async def step(self, link: Link, request: bool) -> Step:
        """What to do with the next chunk, ``request`` (client to engine) or reply."""
        return Step.FORWARD

    def removed(self, link: Link) -> None:
        """Called for each open connection when the toxic is taken off it."""

    def describe(self) -> str:
        """How the fault reads in a history note (``latency 50ms``)."""
        return self.name


TOXICS: dict[str, type[Toxic]] = {}
"""Every toxic, by name: the one vocabulary of wire faults."""

T = TypeVar("T", bound=type[Toxic])


def register(cls: T) -> T:
    """Class decorator: add ``cls`` to :data:`TOXICS` under its ``name`` (once)."""
    if not cls.name or cls.name in TOXICS:
        raise ValueError(f"toxic name {cls.name!r} is empty or registered twice")
    TOXICS[cls.name] = cls
    return cls


def make(name: str, **params: Any) -> Toxic:
    """A new toxic by name (``make("latency", ms=50)``); ValueError names the known ones."""
    try:
        cls = TOXICS[name]
    except KeyError:
        raise ValueError(f"unknown toxic {name!r}; known: {', '.join(sorted(TOXICS))}") from None
    return cls(**params)
