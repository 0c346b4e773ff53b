"""The recorder: open a store from its factory and log every call and its outcome.

Tests talk to a store only through a ``LoggedStore``, so any failure can print the exact
operations that led to it, and the checker can judge a concurrent history. Opening and
closing are recorded too, so a factory whose ``__aenter__`` hangs is what a timeout names.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, TypeVar

from nomnesia.suite.contract import Capabilities, ConsistencyReport, EntryLike, Guarantee

from .fresh import Namespace
from .history import History, Op, describe, short_repr
from .profiles import ProfileError, Resolved, resolve, static_full
from .settings import settings
from .view import KeyedView, view_of
from .violations import GuaranteeViolation, watch

__all__ = ["CLEAN_UP_SECONDS", "LoggedStore", "StoreFactory", "capabilities_of",
           "declared_of", "opened", "recorded", "resolved_of"]

StoreFactory = Callable[[], AbstractAsyncContextManager[Any]]
"""A zero-argument callable returning an async context manager that yields a fresh, empty store."""

T = TypeVar("T")


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


def declared_of(store: object, resolved: Resolved) -> dict[str, Any]:
    """A history file's header for ``store``: its ``keep_last`` and ``search_staleness``
    where it declares them, and the profile it is judged by (``history_format``)."""
    keep_last = getattr(store, "keep_last", None)
    staleness = getattr(store, "search_staleness", None)
    return {"keep_last": keep_last if isinstance(keep_last, int) else None,
            "search_staleness": float(staleness) if isinstance(staleness, (int, float))
            else None,
            "profile": "keyed" if resolved.keyed else "full",
            "compact": resolved.has("compact"), "recover": resolved.has("recover")}


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
        self.log.declared = declared_of(inner, self.resolved)
        watch(self.log)

    @property
    def log(self) -> History:
        """The store calls, in the store's ids; a test that swaps it keeps the namespace."""
        return self._log

    @log.setter
    def log(self, log: History) -> None:
        self._log = log
        if self.ids is not None:
            log.rename = self.ids.user
        resolved = getattr(self, "resolved", None)  # None while __init__ runs: set below
        if resolved is not None:
            log.declared = declared_of(self.inner, resolved)

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
    watch(log)
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
