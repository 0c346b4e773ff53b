"""The one event loop a model-based run owns, and the failure it raises.

Its own module because it is the bridge between two worlds: Hypothesis's state
machine is synchronous, stores are async. Every call runs on this loop, bounded by
the suite's timeout; a hang becomes G12, and too many hangs stop the search
(``Hung``, a ``BaseException`` Hypothesis does not catch).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Coroutine, Sequence
from contextlib import AsyncExitStack
from typing import Any, TypeVar

from ..contract import (
    G12,
    Guarantee,
)
from .history import History
from .loop import in_flight, new_loop
from .settings import settings
from .violations import GuaranteeViolation

T = TypeVar("T")


class ModelViolation(GuaranteeViolation):
    """A broken guarantee found by the state machine; ``calls`` is the (shrunk) call sequence."""

    def __init__(self, guarantee: Guarantee, detail: str, *, calls: Sequence[str], seed: int,
                 evidence: str) -> None:
        self.calls = list(calls)
        self.seed = seed
        super().__init__(guarantee, detail, evidence=evidence)


class Hung(BaseException):
    """Too many hangs to keep shrinking. Not an ``Exception``, so Hypothesis stops at once."""

    def __init__(self, violation: GuaranteeViolation) -> None:
        super().__init__(str(violation))
        self.violation = violation


class MachineLoop:
    """The one event loop of a model test: every store call of every example runs on it.

    A step that does not finish within ``--nomnesia-op-timeout`` is a G12 hang.
    Hypothesis then shrinks it like any failure, but replays that hang again
    would each wait out the full timeout; after the first hang the bound drops
    to twenty times the median step (at least half a second), and
    after ``MAX_HANGS`` hangs the run stops with the sequence it has.
    """

    MAX_HANGS = 40

    def __init__(self) -> None:
        self.loop = new_loop()
        self.durations: list[float] = []
        self.hangs = 0
        self.kept: tuple[AsyncExitStack, Any] | None = None
        """The store the last sequence passed on, and the stack that closes it."""
        self.failed = False
        """Whether any sequence failed: from then on every sequence gets a fresh store."""

    def take(self) -> tuple[AsyncExitStack, Any] | None:
        """The store a passing sequence left, for the next sequence; None for a fresh one.

        Opening a store costs more than a sequence's calls on most engines (a schema
        and its functions created, then dropped: 58 of the 122 stores a redis suite run
        opened were the model test's, at about 68 ms of CPU each). Every sequence has fresh
        ids, so what an earlier one wrote is another user's, as in any store in use.
        Once a sequence fails, the store may be poisoned, so shrinking and the replay
        that Hypothesis reports run on fresh stores only, as before.
        """
        kept, self.kept = self.kept, None
        return None if self.failed else kept

    def close_kept(self) -> None:
        """Close the store the last passing sequence left (bounded like a teardown)."""
        if self.kept is not None:
            stack, self.kept = self.kept[0], None
            self.run(stack.aclose(), History(), "closing the store", settings.timeout)

    def run(self, coro: Coroutine[Any, Any, T], log: History, what: str,
            limit: float | None = None) -> T:
        """Run ``coro`` to completion on the loop, bounded as above (or by ``limit``)."""
        if limit is None:
            limit = settings.op_timeout
            if self.hangs:
                limit = min(limit, max(0.5, 20 * statistics.median(self.durations or [0.0])))
        task = self.loop.create_task(coro)
        start = time.monotonic()
        self.loop.run_until_complete(asyncio.wait({task}, timeout=limit))
        if task.done():
            self.durations.append(time.monotonic() - start)
            return task.result()
        pending = in_flight([log])
        task.cancel()
        self.loop.run_until_complete(asyncio.wait({task}, timeout=2.0))
        shrinking = (f" (while shrinking; the first hang waited the full "
                     f"--nomnesia-op-timeout of {settings.op_timeout:g}s)" if self.hangs else "")
        self.hangs += 1
        raise GuaranteeViolation(
            G12, f"{what} did not finish within {limit:g}s{shrinking} (in flight: "
                 f"{pending or 'nothing'}). A store must raise within a bounded time, never hang",
            log)

    def close(self) -> None:
        loop = self.loop
        try:
            leftovers = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for t in leftovers:
                t.cancel()
            if leftovers:
                loop.run_until_complete(asyncio.wait(leftovers, timeout=2.0))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()
