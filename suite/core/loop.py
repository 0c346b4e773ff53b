"""The runner: a test body on a fresh event loop under an overall timeout, and bounded polls.

A fresh loop per test means no state (locks, pools, tasks) leaks between tests through
the loop, whatever the caller's asyncio plugin, mode or loop scope; a store that hangs
fails with a G12 message naming what was in flight instead of hanging the run.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar

import pytest

from nomnesia.suite.contract import Guarantee

from .eventually import poll
from .heartbeat import Heartbeat
from .history import History, call_text
from .history_format import write_test_histories
from .profiles import NOT_APPLICABLE
from .settings import OPTION_OF, settings
from .violations import GuaranteeViolation, UsageMistake, active_logs, store_error

__all__ = ["LOOPS", "in_flight", "new_loop", "run_async", "suite_test", "wait_until"]

T = TypeVar("T")


async def wait_until(probe: Callable[[], Awaitable[T]], done: Callable[[T], bool], *,
                     within: float, interval: float = 0.005) -> tuple[T, float]:
    """Poll ``probe`` until ``done(result)`` or ``within`` seconds pass; never a fixed sleep.

    Returns the last result and the seconds it took, so tests can report how
    long an eventually-consistent read took to converge. Always probes at least
    once, and once more at the deadline, so ``within=0`` means "now". The polling is
    ``eventually.poll`` (tenacity), the same policy ``nomnesia.testing.eventually`` uses;
    an exception of ``probe`` propagates.
    """
    polled = await poll(probe, done, timeout=within, interval=interval, max_interval=0.1)
    result: T = polled.value
    return result, polled.waited


async def within_op_timeout(awaitable: Awaitable[Any]) -> tuple[str, Any]:
    """("ok", result), ("raised", exception) or ("hung", None) after ``settings.op_timeout``:
    a store call whose every ending is an outcome to judge, never one that stops the test."""
    try:
        return "ok", await asyncio.wait_for(awaitable, settings.op_timeout)
    except asyncio.TimeoutError:
        return "hung", None
    except Exception as exc:
        return "raised", exc


# --------------------------------------------------------------------------- running


_GRACE = 2.0  # seconds a cancelled test body gets to unwind


def in_flight(logs: Sequence[History]) -> str:
    """The calls still running in ``logs``, with how long each has run ("" if none)."""
    now = time.monotonic_ns()
    pending = sorted((op for log in logs for op in log.in_flight()), key=lambda op: op.time)
    return "; ".join(f"{call_text(op)} (for {(now - op.time) / 1e9:.1f}s)" for op in pending)


LOOPS = ("asyncio", "uvloop")
"""The event loops the suite can run a test on (``settings.event_loop``)."""


def new_loop() -> asyncio.AbstractEventLoop:
    """A fresh event loop of the kind ``settings.event_loop`` names.

    uvloop (libuv, in C) runs the same asyncio code as CPython's loop, and the checks are
    the same on both: what it saves is the loop's own CPU (a ``redis`` suite run: about a
    tenth, docs/bench.md). A store whose library needs CPython's loop itself keeps it:
    the plugin picks uvloop only for the project's own stacks that measured faster on
    it, or when asked.
    """
    if settings.event_loop == "uvloop":
        import uvloop  # optional (not on Windows): imported only when a run asks for it

        loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
        return loop
    return asyncio.new_event_loop()


def run_async(coro: Coroutine[Any, Any, T], *, timeout: float | str | None = None,
              what: str = "the test") -> T:
    """Run ``coro`` on a fresh event loop; past ``timeout`` fail with G12 (never hang).

    A fresh loop per test means no state (locks, pools, tasks) leaks between
    tests through the loop, whatever the caller's asyncio configuration is.
    ``timeout`` is seconds, or the name of a ``settings`` bound (``"fault_timeout"``;
    default ``"timeout"``): a bound read from the command line names its option when it
    fires, so no bound is one the user cannot find or raise.
    """
    bound = "timeout" if timeout is None else timeout
    limit = float(getattr(settings, bound)) if isinstance(bound, str) else bound
    option = f" ({OPTION_OF[bound]})" if isinstance(bound, str) and bound in OPTION_OF else ""
    logs: list[History] = []
    loop = new_loop()
    context = contextvars.copy_context()
    context.run(active_logs.set, logs)
    try:
        asyncio.set_event_loop(loop)
        # Created inside ``context`` so that every History the body records registers in ``logs``.
        task = context.run(loop.create_task, coro)
        with Heartbeat(loop, logs, settings.loop_block) as beat:
            loop.run_until_complete(asyncio.wait({task}, timeout=limit))
        blocked = "; ".join(block.describe() for block in beat.blocks)
        log = logs[-1] if logs else None
        if not task.done():
            pending = in_flight(logs)
            where = f"in flight: {pending}" if pending else "no store operation was in flight"
            task.cancel()
            loop.run_until_complete(asyncio.wait({task}, timeout=_GRACE))
            stuck = "" if task.done() else f"; it ignored cancellation for {_GRACE:g}s"
            where += f"; before that, {blocked}" if blocked else ""
            raise GuaranteeViolation(
                Guarantee.ERRORS, f"{what} did not finish within {limit:g}s{option}: {where}"
                f"{stuck}. A store must raise within a bounded time, never hang", log)
        error = None if task.cancelled() else task.exception()
        if isinstance(error, GuaranteeViolation) and blocked:
            # A block is a G12 failure of its own, whatever else failed: its own line, so
            # the verdicts (which read the lines that start a message) count it too.
            raise error.again(f"{error.detail}\n{Guarantee.ERRORS}: meanwhile, {blocked}"
                              ) from error
        if isinstance(error, Exception) and not isinstance(error, GuaranteeViolation):
            violation = store_error(error, logs)
            if violation is not None:
                raise violation from error
        if blocked and error is None:
            raise GuaranteeViolation(Guarantee.ERRORS, blocked, log)
        return task.result()
    finally:
        if settings.history_dir:  # --nomnesia-history: every history, passed or failed
            write_test_histories(settings.history_dir, settings.history_test or what, logs)
        try:
            _cancel_leftovers(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            asyncio.set_event_loop(None)
            loop.close()


def _cancel_leftovers(loop: asyncio.AbstractEventLoop) -> None:
    leftovers = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for t in leftovers:
        t.cancel()
    if leftovers:
        loop.run_until_complete(asyncio.wait(leftovers, timeout=_GRACE))
    for t in leftovers:
        if t.done() and not t.cancelled():
            t.exception()  # consumed: a store's background error is not this test's failure


def suite_test(fn: Callable[..., Coroutine[Any, Any, None]] | None = None, *,
               timeout: float | str | None = None) -> Any:
    """Make ``async def test_x(self, store, ...)`` a sync test run on a fresh loop.

    The signature is kept (pytest reads fixtures through ``__wrapped__``) and
    the wrapper is not a coroutine function, so no asyncio plugin touches it.
    ``timeout`` overrides ``--nomnesia-timeout`` for this test: the name of another
    ``settings`` bound (``"fault_timeout"``), read when the test runs.
    """

    def wrap(body: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
        if not inspect.iscoroutinefunction(body):
            raise TypeError(f"suite_test needs an async def, got {body!r}")

        @functools.wraps(body)
        def test(*args: Any, **kwargs: Any) -> None:
            __tracebackhide__ = True
            try:
                run_async(body(*args, **kwargs), timeout=timeout, what=body.__name__)
            except UsageMistake as exc:
                if exc.needs is None:
                    raise
                pytest.skip(f"{NOT_APPLICABLE} to this store: needs {exc.needs} "
                            f"({type(exc).__name__}: {exc})")

        return test

    return wrap if fn is None else wrap(fn)
