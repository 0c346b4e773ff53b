"""Failpoints: named places in store code where a test can inject a fault.

In the manner of fail-rs: store code calls ``await failpoint("tiered.append.after_archive")``
between two backend writes; normally that returns at once. A test arms a name
to raise, delay or cancel there, and so reproduces a crash between any two
writes deterministically instead of hoping a timing window opens. Third-party
stores can call the same function; the suite arms the names a store declares
in ``Capabilities.failpoint_names``.

The registry is process-wide on purpose: the failpoint fires in whatever task
reaches it, which is what a real crash does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from .errors import BackendUnavailable

__all__ = ["Action", "armed", "failpoint", "recording"]


@dataclass
class Action:
    """What an armed failpoint does when reached: raise, cancel, or delay."""

    kind: str  # "raise" | "cancel" | "delay"
    exception: BaseException | None = None
    seconds: float = 0.0

    @classmethod
    def raise_(cls, exception: BaseException | None = None) -> Action:
        """Raise ``exception`` (default: a ``BackendUnavailable`` naming the failpoint)."""
        return cls("raise", exception=exception)

    @classmethod
    def cancel(cls) -> Action:
        """Raise ``CancelledError`` there, as if the caller's task was cancelled at that await."""
        return cls("cancel")

    @classmethod
    def delay(cls, seconds: float) -> Action:
        return cls("delay", seconds=seconds)


@dataclass
class _Arming:
    action: Action
    remaining: int | None  # None: every time
    skip: int  # passes to let through first
    fired: int = 0


@dataclass
class _Registry:
    armed: dict[str, _Arming] = field(default_factory=dict)
    recorders: list[list[str]] = field(default_factory=list)


_registry = _Registry()


async def failpoint(name: str) -> None:
    """A named fault-injection point; a no-op unless a test armed ``name``."""
    for seen in _registry.recorders:
        seen.append(name)
    arming = _registry.armed.get(name)
    if arming is None:
        return
    if arming.skip > 0:
        arming.skip -= 1
        return
    if arming.remaining is not None:
        if arming.remaining <= 0:
            return
        arming.remaining -= 1
    arming.fired += 1
    action = arming.action
    if action.kind == "delay":
        await asyncio.sleep(action.seconds)
    elif action.kind == "cancel":
        raise asyncio.CancelledError(f"failpoint {name}")
    else:
        raise action.exception or BackendUnavailable("failpoint", f"injected fault at {name}")


@contextmanager
def armed(name: str, action: Action, *, times: int | None = 1, skip: int = 0) -> Iterator[_Arming]:
    """Arm ``name`` for the duration of the block; yields a handle whose ``fired`` counts hits.

    ``times`` bounds how often it fires (None: every pass); ``skip`` lets that
    many passes through first, to hit the n-th append rather than the first.
    """
    if name in _registry.armed:
        raise RuntimeError(f"failpoint {name!r} is already armed")
    arming = _Arming(action, times, skip)
    _registry.armed[name] = arming
    try:
        yield arming
    finally:
        _registry.armed.pop(name, None)


@contextmanager
def recording() -> Iterator[list[str]]:
    """Collect the names of the failpoints passed inside the block, in order."""
    seen: list[str] = []
    _registry.recorders.append(seen)
    try:
        yield seen
    finally:
        _registry.recorders.remove(seen)
