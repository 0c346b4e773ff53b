"""The suite's machinery: run async test bodies, open stores, log operations, report violations.

Every suite module builds on five names from here:

- ``suite_test``: turns ``async def test_x(self, store)`` into a plain sync test
  that runs on a fresh event loop under an overall timeout. The suite so never
  depends on the caller's asyncio plugin, mode or loop scope, and a store that
  hangs fails with a G12 message instead of hanging the run.
- ``StoreTests``: base class of every suite class. Its ``store`` fixture returns
  the factory (``--store``/``--adapter``); a project overrides that one fixture.
- ``recorded(factory)``: ``async with recorded(store) as s`` opens a fresh store
  and wraps it in a ``LoggedStore`` that records every call and its outcome in
  ``s.log``, a ``history.History`` (the suite's one recorder, which the
  workload and the checker use too).
- ``GuaranteeViolation`` / ``expect``: failures whose message starts with the
  guarantee (``G6 idempotent appends: ...``) and ends with the operations that
  led there, oldest first.
- ``capabilities_of(store)``: the declared ``Capabilities`` (defaults if absent).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import time
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Iterable,
    Iterator,
    Sequence,
)
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

from .contract import Capabilities, ConsistencyReport, EntryLike, Guarantee
from .fresh import Namespace
from .history import History, Op, call_text, describe, method, short_repr
from .profiles import ProfileError, Resolved, not_applicable, resolve, static_full
from .view import KeyedView, view_of

__all__ = [
    "Attempts",
    "GuaranteeViolation",
    "LoggedStore",
    "StoreFactory",
    "StoreTests",
    "capabilities_of",
    "describe",
    "expect",
    "in_flight",
    "opened",
    "recorded",
    "reframed",
    "replay_hint",
    "require",
    "resolved_of",
    "run_async",
    "settings",
    "store_error",
    "suite_test",
    "wait_until",
]

StoreFactory = Callable[[], AbstractAsyncContextManager[Any]]
"""A zero-argument callable returning an async context manager that yields a fresh, empty store."""

T = TypeVar("T")
S = TypeVar("S")
V = TypeVar("V")


@dataclass
class Settings:
    """Run-wide knobs, set by the plugin from the command line (defaults for subclass use)."""

    timeout: float = 120.0
    """Seconds a whole test may take before it fails with G12."""
    op_timeout: float = 30.0
    """Seconds one store operation may take where a test checks liveness (locks left held)."""
    seed: int = 0
    """The run's seed (``--nomnesia-seed``); randomised tests derive theirs from it."""
    anomalies: int | None = 3
    """Anomalies a concurrency failure prints (``--nomnesia-anomalies``); None: all of them."""
    profile: str | None = None
    """The profile the run holds every store to (``--nomnesia-profile``); None: detect it."""
    eventually: float = 2.0
    """Seconds the suite polls ``consistent_state`` of a store that declares no staleness
    bound (the seed profile), as the seed's ``assert_eventually`` does."""


settings = Settings()

# The histories recorded while a test body runs, so that a timeout can show what was in flight.
_active_logs: contextvars.ContextVar[list[History] | None] = contextvars.ContextVar(
    "nomnesia_active_logs", default=None)
# The kind of valid input an ``Attempts`` block is trying ("user id", "content" ...), so that
# an error it raises reads as that input refused rather than as a sick store (G12).
_trying: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "nomnesia_trying", default=None)


# --------------------------------------------------------------------------- reporting


def _watch(log: History) -> None:
    """Register ``log`` with the running test, whose timeout names what is in flight in it."""
    active = _active_logs.get()
    if active is not None and not any(known is log for known in active):
        active.append(log)


class GuaranteeViolation(AssertionError):
    """A broken guarantee. ``str`` starts with it, e.g. ``G7 atomic compaction: ...``.

    ``op`` is the kind of the last store call before the check failed (the
    call whose answer was wrong, as far as the suite can tell), ``parts`` the
    separate failures of a test that tried many inputs (``Attempts``), each as
    (input label, violation), and ``anomalies`` every ``checker.Anomaly`` of a
    concurrency failure (however many the message shows); reports group
    failures by cause from them. ``history`` is the history the failure was
    found in (a concurrency round's, else ``log``): the HTML report draws it.
    """

    def __init__(self, guarantee: Guarantee, detail: str, log: History | None = None, *,
                 user: object = None, evidence: str = "", op: str | None = None,
                 parts: Sequence[tuple[str, GuaranteeViolation]] = (),
                 anomalies: Sequence[Any] = (), history: History | None = None) -> None:
        self.guarantee = guarantee
        self.detail = detail
        if log is not None:
            evidence = f"operations, oldest first:\n{log.format(user=user)}"
            if op is None:
                last = log.last_call(user)
                op = method(last) if last is not None else None
        self.evidence = evidence
        self.op = op
        self.parts = list(parts)
        self.anomalies = list(anomalies)
        self.history = history if history is not None else log
        super().__init__(f"{guarantee}: {detail}" + (f"\n\n{evidence}" if evidence else ""))

    def again(self, detail: str, guarantee: Guarantee | None = None) -> GuaranteeViolation:
        """The same failure (evidence, op, parts) under another detail or guarantee."""
        return GuaranteeViolation(guarantee or self.guarantee, detail, evidence=self.evidence,
                                  op=self.op, parts=self.parts, anomalies=self.anomalies,
                                  history=self.history)


def expect(condition: object, guarantee: Guarantee, detail: str | Callable[[], str],
           log: History | None = None, *, user: object = None) -> None:
    """Raise ``GuaranteeViolation`` unless ``condition``; ``detail`` may be lazy.

    ``user`` narrows the printed log to that user's calls: the smallest story
    that shows the violation (leave it out when other users matter, as for G9).
    """
    __tracebackhide__ = True
    if not condition:
        raise GuaranteeViolation(guarantee, detail() if callable(detail) else detail, log,
                                 user=user)


def store_error(exc: BaseException, logs: Sequence[History] | None = None
                ) -> GuaranteeViolation | None:
    """A store call's unexpected exception as a violation (None if no store call raised it).

    Tests catch the errors they expect (invalid input, conflicting retries);
    anything else a store raises on a valid call of a healthy store fails the
    run. ``ValueError``/``TypeError`` refuse valid input (Inputs), and so does
    any error while an ``Attempts`` block tries an odd but valid input (a
    backend that cannot store NUL raises its own error type); a refused
    append of valid content also loses what was appended (G1). Anything else
    is an error the store should not have had (G12).
    """
    from .interfaces._base import InterfaceMismatch

    if isinstance(exc, InterfaceMismatch):
        return None  # the wrong option for the object: a usage error, never the store's
    for log in logs if logs is not None else (_active_logs.get() or []):
        op = log.raiser(exc)
        if op is not None:
            return _refusal(exc, op, log)
    return None


def _refusal(exc: BaseException, op: Op, log: History) -> GuaranteeViolation:
    trying = _trying.get()
    raised = f"{call_text(op)} raised {type(exc).__name__}: {exc}"
    kind = method(op)
    if isinstance(exc, (ValueError, TypeError)) or trying is not None:
        detail = f"valid input refused: {raised}"
        if kind == "append_message" and trying in (None, "content"):
            detail += (f"\n{Guarantee.DURABILITY}: the append of valid content was not "
                       "accepted")
        return GuaranteeViolation(Guarantee.INPUTS, detail, log, user=op.user_id, op=kind)
    return GuaranteeViolation(
        Guarantee.ERRORS, f"{raised} (a valid call on a healthy store must not fail)",
        log, user=op.user_id, op=kind)


class Attempts:
    """Try every input of a test on its own; report every one that breaks SPEC.md.

    One violation never hides another (SPEC.md): a store that refuses one odd
    user id must still be caught leaking another. Each ``with attempts(value):``
    block catches the violation (or store error) its input causes and moves
    on; ``check()`` then raises one failure that lists every failing input,
    each with its own operations, headed by the first in input order::

        attempts = Attempts("user id", len(users))
        for user in users:
            with attempts(user):
                await check_user(s, m, user)
        attempts.check()
    """

    def __init__(self, what: str, total: int | None = None, *,
                 name: Callable[[Any], str] | None = None, odd: bool = True) -> None:
        self.what = what
        self.total = total
        self.odd = odd
        """The inputs are odd but valid (hostile ids, NUL contents): any error a block
        raises is that input refused (Inputs), not a sick store (G12)."""
        self.name = name or (lambda value: short_repr(value, 60))
        """How an input reads in the report (default: a short repr)."""
        self.failures: list[tuple[str, GuaranteeViolation]] = []

    def label(self, value: object) -> str:
        return f"{self.what} {self.name(value)}"

    def failed(self, value: object) -> bool:
        """Whether ``value`` failed already (later phases leave it out)."""
        label = self.label(value)
        return any(known == label for known, _ in self.failures)

    def add(self, label: str, violation: GuaranteeViolation) -> None:
        self.failures.append((label, violation))

    @contextmanager
    def __call__(self, value: object, *, label: str | None = None) -> Iterator[None]:
        """Run the block for ``value``; a violation or store error is recorded, not raised.

        ``label`` replaces "<what> <value>" in the report, for a step that is
        about all inputs at once (its errors are no one input's refusal).
        """
        token = _trying.set(self.what if self.odd and label is None else None)
        try:
            yield
        except GuaranteeViolation as exc:
            self.add(label or self.label(value), exc)
        except Exception as exc:
            violation = store_error(exc)
            if violation is None:
                raise
            self.add(label or self.label(value), violation)
        finally:
            _trying.reset(token)

    def violation(self) -> GuaranteeViolation | None:
        """Every failure as one violation (None if none): the first heads, all are listed."""
        if not self.failures:
            return None
        parts = list(self.failures)
        first_label, first = parts[0]
        count = len(parts)
        among = f" among {self.total} {self.what}s" if self.total is not None else ""
        detail = f"{first_label}: {first.detail}"
        if count > 1:
            listed = ", ".join(f"{label.removeprefix(self.what + ' ')} ({_key(exc.guarantee)})"
                               for label, exc in parts)
            detail += (f"\n({count} failures{among}, "
                       f"each tried on its own and shown below with its own operations: "
                       f"{listed})")
        blocks = [first.evidence] if first.evidence else []
        for label, exc in parts[1:]:
            block = f"{exc.guarantee}: {label}: {exc.detail}"
            blocks.append(block + (f"\n\n{exc.evidence}" if exc.evidence else ""))
        return GuaranteeViolation(first.guarantee, detail, evidence="\n\n".join(blocks),
                                  op=first.op, parts=parts)

    async def each(self, factory: StoreFactory, values: Iterable[V],
                   setup: Callable[[LoggedStore], Awaitable[S]],
                   body: Callable[[LoggedStore, S, V], Awaitable[None]], *,
                   finish: Callable[[LoggedStore, S], Awaitable[None]] | None = None
                   ) -> None:
        """``body(s, state, value)`` for every value, on a store that ``setup`` prepared.

        After a failure the store may be poisoned (an accepted invalid value, a
        refused one that broke the connection), so the values after it get a
        fresh store, set up again: each failure is its input's own. ``finish``
        runs on the last store if its last value passed (a final full check).
        """
        todo = list(values)
        while todo:
            async with recorded(factory) as s:
                state = await setup(s)
                failed = False
                while todo and not failed:
                    value = todo.pop(0)
                    known = len(self.failures)
                    with self(value):
                        await body(s, state, value)
                    failed = len(self.failures) > known
                if finish is not None and not todo and not failed:
                    with self(None, label=f"every {self.what} in turn"):
                        await finish(s, state)

    def check(self) -> None:
        """Raise every failure so far (see ``violation``)."""
        __tracebackhide__ = True
        violation = self.violation()
        if violation is not None:
            raise violation


def _key(guarantee: Guarantee) -> str:
    return f"G{guarantee.number}" if guarantee.number else "Inputs"


def _keys(names: Iterable[str]) -> list[str]:
    """``["G4 search", "Inputs"]`` -> ``["G4", "Inputs"]``, each once."""
    return list(dict.fromkeys(n.split()[0] for n in names))


def require(s: LoggedStore, *features: str) -> None:
    """Inside a test body: not applicable unless the profile has every feature.

    For needs that depend on a parameter (the interrupted operation); fixed
    needs are declared with ``@pytest.mark.needs`` and never reach the body.
    """
    lacking = s.resolved.lacking(features)
    if lacking:
        pytest.skip(not_applicable(s.resolved, lacking))


@contextmanager
def replay_hint(seed: int) -> Iterator[None]:
    """Add "replay with --nomnesia-seed N" to any violation raised inside the block."""
    try:
        yield
    except GuaranteeViolation as exc:
        hint = f"(seed {seed}: replay with --nomnesia-seed {seed})"
        raise exc.again(f"{exc.detail} {hint}") from exc


@contextmanager
def reframed(guarantee: Guarantee, context: str) -> Iterator[None]:
    """Report any violation inside the block as part of ``guarantee``, after ``context``.

    An interruption test that finds a lost entry broke G10 first, G1 second:
    the message reads ``G10 interruption: after <context>: G1 durability: ...``.
    """
    try:
        yield
    except GuaranteeViolation as exc:
        if exc.guarantee is guarantee:
            raise
        raise exc.again(f"after {context}: {exc.guarantee}: {exc.detail}", guarantee) from exc
    except Exception as exc:
        violation = store_error(exc)
        if violation is None:
            raise
        raise violation.again(f"after {context}: {violation.detail}", guarantee) from exc


# --------------------------------------------------------------------------- stores


def capabilities_of(store: object) -> Capabilities:
    """What the store declares; a store without ``capabilities`` gets the defaults."""
    caps = getattr(store, "capabilities", None)
    return caps if isinstance(caps, Capabilities) else Capabilities()


def resolved_of(store: object) -> Resolved:
    """The profile the suite judges ``store`` by (a ``KeyedView`` knows its own).

    A store that resolves to no profile is judged as full: its missing methods then
    fail where they are called, which is what a hand-built ``LoggedStore`` expects.
    """
    if isinstance(store, KeyedView):
        return store.resolved
    try:
        return resolve(store, settings.profile)
    except ProfileError:
        return static_full()


class LoggedStore:
    """A store wrapper that records every call and its outcome in ``log`` (a ``History``).

    Tests talk to the store only through this wrapper, so that any failure can
    print the exact operations that led to it. ``inner`` is the real store.
    Each call is one Jepsen process's invoke and completion: ``process`` fixes
    the process (``client`` makes such a view, one per workload client);
    without it a call takes the lowest process with nothing in flight, so
    concurrent calls of one test stay apart. ``show`` keeps how each result
    read (``Op.shown``, for the numbered log of a failure).

    ``ids`` makes every user and message id fresh (``fresh.Namespace``): the store and
    the log get the fresh ids, the test gets back its own (SPEC.md, "What the suite may
    assume"). Without it the ids go to the store as the test wrote them.
    """

    def __init__(self, inner: Any, log: History | None = None, *,
                 process: int | None = None, show: bool = True,
                 ids: Namespace | None = None) -> None:
        self.inner = inner
        self.ids = ids
        self.log = log if log is not None else History()
        self.process = process
        self.show = show
        self.resolved = resolved_of(inner)
        """The profile the store is judged by; a ``KeyedView`` inner means the keyed reading."""
        _watch(self.log)

    @property
    def log(self) -> History:
        """The store calls, in the store's ids; a test that swaps it keeps the namespace."""
        return self._log

    @log.setter
    def log(self, log: History) -> None:
        self._log = log
        if self.ids is not None:
            log.rename = self.ids.user

    @property
    def keyed(self) -> bool:
        """Entries are known by role and content (every profile but full, SPEC "Profiles")."""
        return self.resolved.keyed

    def can(self, feature: str) -> bool:
        """Whether the store's profile has ``feature`` (``search``, ``compact`` ...)."""
        return self.resolved.has(feature)

    def client(self, process: int) -> LoggedStore:
        """The same store and history, every call recorded as ``process``.

        A workload client's failures are the checker's anomalies, printed from
        the ops themselves: rendering each result as well would double the
        recorder's cost on a fast store, so a client does not.
        """
        return LoggedStore(self.inner, self.log, process=process, show=False, ids=self.ids)

    @property
    def keep_last(self) -> int:
        return int(self.inner.keep_last)

    @property
    def search_staleness(self) -> float:
        return float(self.inner.search_staleness)

    @property
    def capabilities(self) -> Capabilities:
        return capabilities_of(self.inner)

    async def _call(self, f: str, user: object, value: object, awaitable: Awaitable[T]) -> T:
        log = self.log
        process = self.process if self.process is not None else log.idle_process()
        async with log.record(process, f, user, value) as call:
            result = await awaitable
            call.set(result, shown=describe(result) if self.show else None)
        return result

    def store_user(self, user_id: Any) -> Any:
        """The id the store gets for the test's ``user_id``."""
        return user_id if self.ids is None else self.ids.user(user_id)

    def _back(self, result: EntryLike) -> EntryLike:
        """An entry with the test's own ids (``fresh.Namespace``)."""
        return result if self.ids is None or result is None else self.ids.entry(result)

    def _back_all(self, found: list[EntryLike]) -> list[EntryLike]:
        return found if self.ids is None else self.ids.entries(found)

    async def append_message(self, user_id: Any, role: Any, content: Any,
                             *, message_id: Any = None) -> EntryLike:
        user_id = self.store_user(user_id)
        if self.ids is not None:
            message_id = self.ids.message(message_id)
            self.ids.wrote(user_id)
        return self._back(await self._call("append", user_id, (role, content, message_id),
                                           self.inner.append_message(user_id, role, content,
                                                                     message_id=message_id)))

    async def get_history(self, user_id: Any, limit: Any = 10) -> list[EntryLike]:
        user_id = self.store_user(user_id)
        return self._back_all(list(await self._call("read", user_id, limit,
                                                    self.inner.get_history(user_id, limit))))

    async def search(self, user_id: Any, query: Any, k: Any = 5) -> list[EntryLike]:
        user_id = self.store_user(user_id)
        return self._back_all(list(await self._call("search", user_id, (query, k),
                                                    self.inner.search(user_id, query, k))))

    async def compact(self, user_id: Any) -> EntryLike | None:
        user_id = self.store_user(user_id)
        result: EntryLike | None = await self._call("compact", user_id, None,
                                                    self.inner.compact(user_id))
        return None if result is None else self._back(result)

    async def forget(self, user_id: Any) -> None:
        user_id = self.store_user(user_id)
        await self._call("forget", user_id, None, self.inner.forget(user_id))

    async def consistent_state(self, user_id: Any) -> ConsistencyReport:
        user_id = self.store_user(user_id)
        report: ConsistencyReport = await self._call(
            "consistent", user_id, None, self.inner.consistent_state(user_id))
        return report

    async def clean_up(self) -> None:
        """Forget what this store's tests wrote (``fresh.Namespace.clean``): best effort,
        unrecorded, never a finding; only where the profile has ``forget`` (or ``clear``)."""
        if self.ids is not None and self.can("forget"):
            await self.ids.clean(self.inner, CLEAN_UP_SECONDS)

    async def recover(self) -> None:
        """``recover()``, if the profile has one; a store without it restores on its own."""
        if self.can("recover"):
            await self._call("recover", None, None, self.inner.recover())


@asynccontextmanager
async def _as_manager(made: Any) -> AsyncIterator[Any]:
    """What a factory made, as an async context manager.

    The protocol's factories return one; a seed-style store is often just an
    object (or a coroutine that makes one), closed with its ``aclose`` if it has one.
    """
    if inspect.isawaitable(made):
        made = await made
    if hasattr(made, "__aenter__") and hasattr(made, "__aexit__"):
        async with made as store:
            yield store
        return
    try:
        yield made
    finally:
        close = getattr(made, "aclose", None)
        if callable(close):
            done = close()
            if inspect.isawaitable(done):
                await done


@asynccontextmanager
async def opened(factory: StoreFactory, *, raw: bool = False) -> AsyncIterator[Any]:
    """Open a fresh store from ``factory``; failing to open is a G12 failure, not a crash.

    Yields the store as the suite calls it: itself for the full profile, a
    ``view.KeyedView`` for the smaller ones (``raw``: the store itself).
    Opening and closing are recorded like store calls, so a factory whose
    ``__aenter__`` or ``__aexit__`` hangs is what a timeout names as in flight.
    """
    try:
        manager = _as_manager(factory())
    except Exception as exc:
        raise GuaranteeViolation(Guarantee.ERRORS, f"the store factory {factory!r} raised "
                                 f"{type(exc).__name__}: {exc}") from exc
    log = History()
    _watch(log)
    name = short_repr(factory, 60)
    opening = log.invoke(0, "open", None, name)
    closing: Op | None = None
    try:
        async with manager as store:
            log.complete(opening, "ok")
            try:
                yield store if raw else view_of(store, resolve(store, settings.profile))
            finally:
                closing = log.invoke(0, "close", None, name)
    except BaseException as exc:
        for op in (opening, closing):
            if op is not None and op in log.in_flight():
                log.complete(op, "info", error=f"ended by {type(exc).__name__}")
        raise
    if closing is not None:
        log.complete(closing, "ok")


CLEAN_UP_SECONDS = 10.0
"""How long the suite spends, per store it opened, forgetting what the test wrote."""


@asynccontextmanager
async def recorded(factory: StoreFactory) -> AsyncIterator[LoggedStore]:
    """``async with recorded(store) as s``: a fresh store whose every call is recorded.

    Its ids are fresh (``fresh.Namespace``: new to this store of this test of this run),
    and what the test wrote is forgotten when the block ends, unless the test was
    cancelled (its timeout: the store may not answer).
    """
    async with opened(factory) as store:
        s = LoggedStore(store, ids=Namespace.new())
        try:
            yield s
        except (asyncio.CancelledError, GeneratorExit):
            raise
        except BaseException:
            await s.clean_up()
            raise
        await s.clean_up()


async def wait_until(probe: Callable[[], Awaitable[T]], done: Callable[[T], bool], *,
                     within: float, interval: float = 0.005) -> tuple[T, float]:
    """Poll ``probe`` until ``done(result)`` or ``within`` seconds pass; never a fixed sleep.

    Returns the last result and the seconds it took, so tests can report how
    long an eventually-consistent read took to converge. Always probes at least
    once, and once more after the deadline, so ``within=0`` means "now".
    """
    start = time.monotonic()
    deadline = start + within
    while True:
        result = await probe()
        if done(result) or time.monotonic() >= deadline:
            return result, time.monotonic() - start
        await asyncio.sleep(min(interval, max(0.0, deadline - time.monotonic())))
        interval = min(interval * 2, 0.1)


# --------------------------------------------------------------------------- running


_GRACE = 2.0  # seconds a cancelled test body gets to unwind


def in_flight(logs: Sequence[History]) -> str:
    """The calls still running in ``logs``, with how long each has run ("" if none)."""
    now = time.monotonic_ns()
    pending = sorted((op for log in logs for op in log.in_flight()), key=lambda op: op.time)
    return "; ".join(f"{call_text(op)} (for {(now - op.time) / 1e9:.1f}s)" for op in pending)


def run_async(coro: Coroutine[Any, Any, T], *, timeout: float | None = None,
              what: str = "the test") -> T:
    """Run ``coro`` on a fresh event loop; past ``timeout`` fail with G12 (never hang).

    A fresh loop per test means no state (locks, pools, tasks) leaks between
    tests through the loop, whatever the caller's asyncio configuration is.
    """
    limit = settings.timeout if timeout is None else timeout
    logs: list[History] = []
    loop = asyncio.new_event_loop()
    context = contextvars.copy_context()
    context.run(_active_logs.set, logs)
    try:
        asyncio.set_event_loop(loop)
        # Created inside ``context`` so that every History the body records registers in ``logs``.
        task = context.run(loop.create_task, coro)
        loop.run_until_complete(asyncio.wait({task}, timeout=limit))
        if not task.done():
            pending = in_flight(logs)
            where = f"in flight: {pending}" if pending else "no store operation was in flight"
            task.cancel()
            loop.run_until_complete(asyncio.wait({task}, timeout=_GRACE))
            stuck = "" if task.done() else f"; it ignored cancellation for {_GRACE:g}s"
            log = logs[-1] if logs else None
            raise GuaranteeViolation(
                Guarantee.ERRORS, f"{what} did not finish within {limit:g}s: {where}{stuck}. "
                "A store must raise within a bounded time, never hang", log)
        error = None if task.cancelled() else task.exception()
        if isinstance(error, Exception) and not isinstance(error, GuaranteeViolation):
            violation = store_error(error, logs)
            if violation is not None:
                raise violation from error
        return task.result()
    finally:
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
               timeout: float | None = None) -> Any:
    """Make ``async def test_x(self, store, ...)`` a sync test run on a fresh loop.

    The signature is kept (pytest reads fixtures through ``__wrapped__``) and
    the wrapper is not a coroutine function, so no asyncio plugin touches it.
    ``timeout`` overrides ``--nomnesia-timeout`` for this test.
    """

    def wrap(body: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
        if not inspect.iscoroutinefunction(body):
            raise TypeError(f"suite_test needs an async def, got {body!r}")

        @functools.wraps(body)
        def test(*args: Any, **kwargs: Any) -> None:
            __tracebackhide__ = True
            run_async(body(*args, **kwargs), timeout=timeout, what=body.__name__)

        return test

    return wrap if fn is None else wrap(fn)


# --------------------------------------------------------------------------- base class


SESSION_PROFILE = pytest.StashKey[Resolved]()
"""The profile of the run's store (``--store``, ``--adapter``, an interface option), found
once by the plugin; a subclass that overrides ``store`` is probed on its own."""
ITEM_PROFILE = pytest.StashKey[Resolved]()
"""The profile a suite test ran under: the JSON report credits it only with what that
profile judges."""
_PROBED = pytest.StashKey["dict[object, Resolved]"]()
NEEDS = "needs"
"""``@pytest.mark.needs("search", ...)``: the features (``profiles.FEATURES``) a test needs."""


async def _probe(factory: StoreFactory) -> Resolved:
    async with opened(factory, raw=True) as store:
        return resolve(store, settings.profile)


def probe(factory: StoreFactory) -> Resolved:
    """Open one store from ``factory`` and read its profile (``ProfileError`` if it has none)."""
    return run_async(_probe(factory), what="opening a store to read its profile")


def _profile_for(request: pytest.FixtureRequest) -> Resolved:
    config = request.config
    session = config.stash.get(SESSION_PROFILE, None)
    # Accessed through a class, a fixture function is a new object each time: find the
    # class that defines it.
    owner = next((c for c in getattr(request.cls, "__mro__", ()) if "store" in vars(c)), None)
    overridden = owner is not None and owner is not StoreTests
    if session is not None and not overridden:
        return session
    factory = request.getfixturevalue("store")
    cache = config.stash.setdefault(_PROBED, {})
    key = request.cls if overridden else factory  # one kind of store per overriding class
    found = cache.get(key)
    if found is None:
        try:
            found = cache[key] = probe(factory)
        except ProfileError as exc:
            pytest.fail(f"nomnesia: {exc}", pytrace=False)
    return found


class StoreTests:
    """Base of every suite class: provides the ``store`` fixture and the override guard.

    ``store`` returns a *factory*, not a store: every test opens its own fresh
    store through it (``async with recorded(store) as s``). Override it in a
    subclass to test your store without command-line options::

        class TestMyStore(MemoryStoreSuite):
            @pytest.fixture
            def store(self):
                return MyStore          # zero-arg, async context manager
    """

    @pytest.fixture
    def store(self, nomnesia_store: StoreFactory) -> StoreFactory:
        return nomnesia_store

    @pytest.fixture(autouse=True)
    def _nomnesia_profile(self, request: pytest.FixtureRequest) -> None:
        """Not applicable, before anything runs, when the store's profile lacks a need.

        SPEC.md: a missing method is never a failure, and a guarantee that cannot
        be judged is never a pass: the skip's reason says what the profile lacks
        and which guarantees the test would have judged.
        """
        if "store" not in request.fixturenames:
            return
        resolved = _profile_for(request)
        request.node.stash[ITEM_PROFILE] = resolved
        needs = [n for mark in request.node.iter_markers(NEEDS) for n in mark.args]
        lacking = resolved.lacking(needs)
        if lacking:
            would = [str(g) for mark in request.node.iter_markers("guarantee")
                     for g in mark.args]
            pytest.skip(not_applicable(resolved, lacking, _keys(would)))

    @pytest.mark.guarantee(none="that a subclass hid no suite test, not a store's behaviour")
    def test_no_overrides_DO_NOT_OVERRIDE(self) -> None:
        """Suite tests may be overridden only to mark them xfail, so a red test can't be hidden.

        Troubleshooting: if this fails, a subclass replaced a suite test with
        its own version. Delete the override, or decorate it with
        ``@pytest.mark.xfail(reason="why this store does not meet it")`` so the
        gap stays visible in every run.
        """
        hidden = []
        cls = type(self)
        for base in cls.__mro__:
            if not base.__module__.startswith("nomnesia.suite."):
                continue
            for name in vars(base):
                if not name.startswith("test_"):
                    continue
                owner = next(c for c in cls.__mro__ if name in vars(c))
                if owner.__module__.startswith("nomnesia.suite."):
                    continue
                current = vars(owner)[name]
                marks = getattr(current, "pytestmark", [])
                if not any(getattr(m, "name", None) == "xfail" for m in marks):
                    hidden.append(f"{name} (from {base.__qualname__})")
        if hidden:
            pytest.fail("suite tests overridden without @pytest.mark.xfail(reason=...): "
                        + ", ".join(sorted(set(hidden))), pytrace=False)
