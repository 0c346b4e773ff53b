"""Bounded polls on tenacity: wait for a condition, never for a guessed number of seconds.

An eventually-consistent store (a search index that lags, ``consistent_state`` after a
fault) is judged by polling what can be observed until it holds or a deadline passes
(SPEC.md, "Waiting is bounded and conditional"). Two shapes share one retry policy here:

- :func:`poll` (async) and :func:`poll_sync` return the last result and how long they
  waited whether or not it held: the suite's own checks (``loop.wait_until``) report how
  long a store took to converge, and judge the last result themselves.
- :func:`eventually` (sync, or awaited when ``check`` is a coroutine function) returns the
  first truthy result of ``check`` and raises :class:`EventuallyTimeout` past the deadline,
  naming the last value or exception and how long it waited, never tenacity's bare
  ``RetryError`` (which says neither). ``nomnesia.testing`` re-exports it for users.

The policy: probe at once, then after ``interval`` seconds, doubling to at most
``max_interval``; the last wait is cut to end at the deadline, and the last probe is the
first one that *began* at or after the deadline (a probe that began before it and ran past
it is followed by one more), so ``timeout=0`` means "now".
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    Retrying,
    retry_if_exception,
    retry_if_result,
)
from tenacity.retry import retry_base

__all__ = ["EventuallyTimeout", "Misuse", "Polled", "eventually", "eventually_async", "poll",
           "poll_sync"]

T = TypeVar("T")


class Misuse(TypeError):
    """The check cannot be polled as given (a sync ``eventually`` got an awaitable): raised
    at the first probe, never retried."""


class EventuallyTimeout(AssertionError):
    """``eventually``'s check never held within its timeout.

    An ``AssertionError``, so pytest shows it as a failed expectation. ``last_value`` is
    what the last probe returned (``None`` when it raised), ``last_error`` what it raised,
    ``waited`` the seconds from the first probe to the last, ``attempts`` how many probes.
    """

    def __init__(self, what: str, *, timeout: float, waited: float, attempts: int,
                 last_value: Any = None, last_error: BaseException | None = None) -> None:
        self.what = what
        self.timeout = timeout
        self.waited = waited
        self.attempts = attempts
        self.last_value = last_value
        self.last_error = last_error
        last = (f"its last probe raised {type(last_error).__name__}: {last_error}"
                if last_error is not None else f"its last probe returned {last_value!r}")
        super().__init__(f"{what} did not hold within {timeout:g} s: waited {waited:.3f} s "
                         f"over {attempts} probes, and {last}")


@dataclass(frozen=True)
class Polled:
    """What a poll ended with (for callers that judge the last result themselves)."""

    value: Any
    error: BaseException | None
    waited: float
    attempts: int
    held: bool


def _wait(interval: float, max_interval: float, deadline: list[float]
          ) -> Callable[[RetryCallState], float]:
    """Seconds before the next probe: ``interval`` doubling to ``max_interval``, cut so the
    last probe lands on the deadline (tenacity's own waits do not know the deadline)."""

    def wait(state: RetryCallState) -> float:
        step: float = min(max_interval, interval * 2.0 ** (state.attempt_number - 1))
        return max(0.0, min(step, deadline[0] - time.monotonic()))

    return wait


def _stop(deadline: list[float], began: list[float]) -> Callable[[RetryCallState], bool]:
    """Stop once a probe that *began* at or after the deadline has failed: a probe that began
    before it and ran past it (a slow call, a busy machine) proves nothing about the
    deadline, so one more is made."""
    def stop(state: RetryCallState) -> bool:
        return began[0] >= deadline[0]

    return stop


def _timed(probe: Callable[[], T], began: list[float]) -> Callable[[], T]:
    def timed() -> T:
        began[0] = time.monotonic()
        return probe()

    return timed


class _Stopped:
    """What ``retry_error_callback`` returns at the deadline: tenacity's last attempt."""

    def __init__(self, state: RetryCallState) -> None:
        self.state = state


def _ended(result: Any, retrying: Retrying | AsyncRetrying, start: float) -> Polled:
    waited = time.monotonic() - start
    if not isinstance(result, _Stopped):
        return Polled(result, None, waited, int(retrying.statistics.get("attempt_number", 1)),
                      True)
    outcome, attempts = result.state.outcome, result.state.attempt_number
    if outcome is not None and outcome.failed:
        return Polled(None, outcome.exception(), waited, attempts, False)
    return Polled(None if outcome is None else outcome.result(), None, waited, attempts, False)


def _policy(done: Callable[[Any], bool], catch: tuple[type[BaseException], ...],
            timeout: float, interval: float, max_interval: float, began: list[float]
            ) -> dict[str, Any]:
    deadline = [time.monotonic() + timeout]
    retry: retry_base = retry_if_result(lambda value: not done(value))
    if catch:
        retry = retry | retry_if_exception(
            lambda exc: isinstance(exc, catch) and not isinstance(exc, Misuse))
    return {"stop": _stop(deadline, began), "wait": _wait(interval, max_interval, deadline),
            "retry": retry, "retry_error_callback": _Stopped}


async def poll(probe: Callable[[], Awaitable[T]], done: Callable[[T], bool], *, timeout: float,
               interval: float = 0.005, max_interval: float = 0.1,
               catch: tuple[type[BaseException], ...] = ()) -> Polled:
    """Await ``probe()`` until ``done(result)`` or ``timeout`` seconds pass.

    An exception of a type in ``catch`` counts as "not yet"; any other propagates.
    """
    began = [0.0]

    async def call() -> T:  # tenacity awaits only coroutine functions; ``probe`` may be a
        began[0] = time.monotonic()  # plain function that returns an awaitable (a lambda)
        return await probe()

    start = time.monotonic()
    retrying = AsyncRetrying(**_policy(done, catch, timeout, interval, max_interval, began))
    return _ended(await retrying(call), retrying, start)


def poll_sync(probe: Callable[[], T], done: Callable[[T], bool], *, timeout: float,
              interval: float = 0.005, max_interval: float = 0.1,
              catch: tuple[type[BaseException], ...] = ()) -> Polled:
    """:func:`poll` for a synchronous ``probe`` (it blocks this thread between probes)."""
    start = time.monotonic()
    began = [0.0]
    retrying = Retrying(**_policy(done, catch, timeout, interval, max_interval, began))
    return _ended(retrying(_timed(probe, began)), retrying, start)


def _name(check: Callable[..., Any]) -> str:
    name = getattr(check, "__qualname__", None) or repr(check)
    return "the check" if name == "<lambda>" else f"{name}()"


_NOT_YET: tuple[type[BaseException], ...] = (Exception,)
"""What a check may raise meaning "not yet": any ``Exception`` (an ``assert`` that fails,
a backend still refusing). ``KeyboardInterrupt`` and cancellation are never swallowed."""


async def eventually_async(check: Callable[[], Awaitable[T]], *, timeout: float = 5.0,
                           interval: float = 0.01, max_interval: float = 0.25,
                           what: str | None = None) -> T:
    """Await ``check()`` until it returns a truthy value without raising; return that value.

    Past ``timeout`` seconds raise :class:`EventuallyTimeout` with the last value or
    exception and how long it waited; ``what`` names the condition in that message (the
    guarantee it stands for: ``"G11 quiescent consistency"``).
    """
    polled = await poll(check, bool, timeout=timeout, interval=interval,
                        max_interval=max_interval, catch=_NOT_YET)
    value: T = _verdict(polled, what or _name(check), timeout)
    return value


async def _continued(first: Awaitable[Any], check: Callable[[], Awaitable[Any]], *,
                     timeout: float, interval: float, max_interval: float,
                     what: str | None) -> Any:
    """A lambda that returned an awaitable: its first probe is ``first``, then the rest."""
    pending: list[Awaitable[Any]] = [first]

    async def probe() -> Any:
        return await (pending.pop() if pending else check())

    return await eventually_async(probe, timeout=timeout, interval=interval,
                                  max_interval=max_interval, what=what or _name(check))


def _verdict(polled: Polled, what: str, timeout: float) -> Any:
    if polled.held:
        return polled.value
    raise EventuallyTimeout(what, timeout=timeout, waited=polled.waited,
                            attempts=polled.attempts, last_value=polled.value,
                            last_error=polled.error) from polled.error


@overload
def eventually(check: Callable[[], Awaitable[T]], *, timeout: float = ...,
               interval: float = ..., max_interval: float = ...,
               what: str | None = ...) -> Awaitable[T]: ...


@overload
def eventually(check: Callable[[], T], *, timeout: float = ..., interval: float = ...,
               max_interval: float = ..., what: str | None = ...) -> T: ...


def eventually(check: Callable[[], Any], *, timeout: float = 5.0, interval: float = 0.01,
               max_interval: float = 0.25, what: str | None = None) -> Any:
    """Call ``check()`` until it returns a truthy value without raising, and return that value.

    ``check`` is a plain function (``eventually`` blocks between probes) or a coroutine
    function, or a lambda returning an awaitable, inside a running event loop: then
    ``await eventually(lambda: store.consistent_state(u))``. A probe that raises an
    ``Exception`` (a failed ``assert`` included) counts as "not yet". Past ``timeout``
    seconds it raises :class:`EventuallyTimeout`, naming ``what`` (default: the check),
    the last value or exception, and how long it waited.
    """
    if inspect.iscoroutinefunction(check) or inspect.iscoroutinefunction(
            getattr(check, "__call__", None)):  # noqa: B004 (an async __call__ counts too)
        return eventually_async(check, timeout=timeout, interval=interval,
                                max_interval=max_interval, what=what)
    try:
        asyncio.get_running_loop()
        in_loop = True
    except RuntimeError:
        in_loop = False
    if in_loop:
        first = check()
        if inspect.isawaitable(first):
            return _continued(first, check, timeout=timeout, interval=interval,
                              max_interval=max_interval, what=what)
        raise Misuse("eventually() would block the running event loop between probes: give "
                     "it a coroutine function (or a lambda returning an awaitable) and await "
                     "it, or poll from a thread")

    def probe() -> Any:
        value = check()
        if inspect.isawaitable(value):
            close = getattr(value, "close", None)
            if callable(close):
                close()  # never awaited: say so instead of warning later
            raise Misuse("check returned an awaitable outside an event loop: await it inside "
                         "one (`await eventually(check)`)")
        return value

    polled = poll_sync(probe, bool, timeout=timeout, interval=interval,
                       max_interval=max_interval, catch=_NOT_YET)
    return _verdict(polled, what or _name(check), timeout)
