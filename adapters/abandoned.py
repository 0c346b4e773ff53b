"""Backend calls a caller gave up on, which may still land: tracked in one place.

A bounded call that times out, or whose caller is cancelled, may already be on
its way, and the engine can still apply it later (a put after the forget that
followed it). Whoever reads a tier to repair it must first wait until such a
call is over, or the late write changes what the repair just read. The store
(``TieredMemoryStore._call``) and every index (``indexes._common.Calls``) keep
their given-up calls in an ``Abandoned``; a call nobody waits for any more
(PostgreSQL's ``_abort``) still gets ``retrieve`` so that its failure, which is
expected, is not logged as "exception never retrieved".
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["Abandoned", "retrieve"]


def retrieve(task: asyncio.Future[Any]) -> None:
    """A done-callback: take the outcome of a call whose caller already got an error."""
    if not task.cancelled():
        task.exception()


class Abandoned:
    """Given-up backend calls still running, each with the backend it was sent to."""

    def __init__(self) -> None:
        self._tasks: dict[asyncio.Future[Any], str] = {}

    def __bool__(self) -> bool:
        return bool(self._tasks)

    def add(self, task: asyncio.Future[Any], backend: str, *, cancel: bool = False) -> None:
        """Track ``task`` until it is done; ``cancel`` asks it to stop first (a timeout)."""
        if cancel:
            task.cancel()
        self._tasks[task] = backend
        task.add_done_callback(self._reap)

    def _reap(self, task: asyncio.Future[Any]) -> None:
        self._tasks.pop(task, None)
        retrieve(task)

    async def wait(self, timeout: float, *, cancel_stuck: bool = False) -> str | None:
        """Wait up to ``timeout`` until every tracked call is over.

        Returns None if they all ended, else the backend of one still running;
        ``cancel_stuck`` then cancels those (a black-holed connection may never
        answer, and the caller must be able to answer again once the engine does).
        """
        if not self._tasks:
            return None
        _, pending = await asyncio.wait(set(self._tasks), timeout=timeout)
        if not pending:
            return None
        backend = self._tasks.get(next(iter(pending)), "backend")
        if cancel_stuck:
            for task in pending:
                task.cancel()
        return backend
