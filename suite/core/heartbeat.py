"""A heartbeat on the test's event loop, from another thread: which store call blocked it.

An ``async`` method that calls a synchronous client (a blocking socket, ``time.sleep``, a
sync database driver) stops the whole event loop while it waits: no other call runs, and
no timeout fires, the store's own included, so nothing can bound that call (SPEC G12).
From inside the loop this looks like nothing at all (a one-second ``wait_for`` returns after
five), and a test that then runs out of time can only say that nothing was in flight.

So while a test body runs, a thread posts a beat to the loop every ``interval`` and waits
for it. A beat that waits ``bound`` seconds or more is a block; a store call in flight then,
running for half the bound at least, is the suspect (the loop stood still all that time,
so it held it), and once the loop answers again the block's length is known. A block with no
such call (the suite's own work, or many quick calls that never suspend) is not reported.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType

from .history import History, Op, call_text

__all__ = ["Block", "Heartbeat"]


@dataclass(frozen=True)
class Block:
    """The loop stopped ``seconds`` long while ``calls`` were in flight."""

    seconds: float
    calls: tuple[Op, ...]

    def describe(self) -> str:
        first = call_text(self.calls[0])
        more = f" (and {len(self.calls) - 1} more calls in flight)" if len(self.calls) > 1 else ""
        return (f"{first} blocked the event loop for {self.seconds:.1f} s{more}: a "
                "synchronous call inside an async method (nothing else runs meanwhile, no "
                "timeout fires: a call that blocks the loop cannot be bounded by its timeout)")


class Heartbeat:
    """``with Heartbeat(loop, logs, bound):`` around running a test body on ``loop``."""

    def __init__(self, loop: asyncio.AbstractEventLoop, logs: Sequence[History], bound: float,
                 interval: float = 0.1) -> None:
        self.loop = loop
        self.logs = logs
        self.bound = bound
        self.interval = interval
        self.blocks: list[Block] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="nomnesia-heartbeat",
                                        daemon=True)

    def __enter__(self) -> Heartbeat:
        if self.bound > 0:
            self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(self.bound + 1)

    def _in_flight(self) -> tuple[Op, ...]:
        """The store calls in flight now (read while the loop is stopped: nothing writes)."""
        for _ in range(3):
            try:
                return tuple(op for log in list(self.logs) for op in log.in_flight()
                             if op.f not in ("note", "open", "close"))
            except RuntimeError:  # a history changed under us: the loop moved after all
                continue
        return ()

    def _beat(self) -> None:
        while not self._stop.is_set():
            answered = threading.Event()
            sent = time.monotonic()
            try:
                self.loop.call_soon_threadsafe(answered.set)
            except RuntimeError:  # the loop is closed: the test is over
                return
            if answered.wait(self.bound):
                self._stop.wait(self.interval)
                continue
            # Blocked ``bound`` seconds: the suspects are the calls in flight now that have
            # been running for half of it at least (the loop stood still all that time, so
            # they held it). A loop kept busy by many quick calls that never suspend (an
            # in-memory store in a tight loop) has none: its call of the moment began
            # microseconds ago.
            held_since_ns = time.monotonic_ns() - round(self.bound / 2 * 1e9)
            calls = tuple(op for op in self._in_flight() if op.time <= held_since_ns)
            while not answered.wait(0.05) and not self._stop.is_set():
                pass  # bounded by the test's own timeout, which stops this thread
            if calls:
                began = min(op.time for op in calls) / 1e9
                self.blocks.append(Block(time.monotonic() - max(began, sent), calls))
