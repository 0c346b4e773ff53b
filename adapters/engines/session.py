"""Engines for your own store: one set per pytest session (or xdist worker), started on first use.

A ``--store`` factory takes no arguments, yet a store on PostgreSQL or Redis
needs a server. Rather than starting one per store, or keeping a module global
and an ``atexit`` hook, ask the suite for the engine's URL::

    from contextlib import asynccontextmanager
    from nomnesia.suite.engines import engine_url

    @asynccontextmanager
    async def factory():
        store = MyStore(dsn=engine_url("postgres"), redis_url=engine_url("redis"))
        try:
            yield store
        finally:
            await store.aclose()

The URLs come from the same providers the built-in stacks use (embedded
engines from wheels, Docker containers, or the ``NOMNESIA_*_URL`` servers of
``--backends external``), chosen by ``--backends`` / ``NOMNESIA_BACKENDS``.
An engine starts the first time its URL is asked for and stops when the
session ends; under pytest-xdist every worker has its own. Every store of the
session shares the engines, so give each store its own schema, key prefix or
collection, and drop it on close.

Tests can take the same session as the ``nomnesia_engines`` fixture. Outside
pytest, open one yourself: ``with engine_session() as engines: engines.url("redis")``.

A store's namespace (key prefix, schema, collection) comes from
:func:`store_namespace`, and whether to drop it on close from :func:`keep_data`:
each store of a pytest run gets a fresh namespace and drops it, while the
nemesis's worker processes share one and keep it until the final read, so a
worker that replaces a crashed one reopens what it wrote.

Faults (docs/faults.md): while a partial-failure test runs, the session hands out
each engine behind the suite's fault proxy (``EngineSession.faulted``) and records
which engines the store asked for, so the test can refuse, reset, stall, delay or
pause each of them while the store is under load. Every other test gets the engine
itself. A store on its own deployment passes its URL through :func:`fault_url`,
which returns it unchanged outside such a test.

Layering: this is the engine seam, on the engines' floor beside the fault proxy it uses
(``proxied.py``, ``proxy.py``); the suite's core never imports it, and the plugin (an entry
point) hands a session the function that makes its provider. After every test the plugin
calls :meth:`EngineSession.heal`, so a fault a test could not heal (its loop blocked, its
timeout fired) never outlives it.
"""

from __future__ import annotations

import os
import secrets
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from . import get_provider
from .control import continue_stopped
from .proxied import PROXIED_ENGINES, ProxiedProvider
from .proxy import Proxy

__all__ = [
    "KEEP_ENV",
    "NAMESPACE_ENV",
    "EngineProvider",
    "EngineSession",
    "FaultScope",
    "active_session",
    "current_session",
    "engine_session",
    "engine_url",
    "fault_url",
    "install",
    "keep_data",
    "store_namespace",
]

NAMESPACE_ENV = "NOMNESIA_NAMESPACE"
"""Set by the nemesis in its worker processes: the namespace every store of the run shares."""
KEEP_ENV = "NOMNESIA_KEEP_DATA"
"""Set to 1 by the nemesis in its load workers: stores keep their data when they close."""


class EngineProvider(Protocol):
    """What a session needs of a provider (``nomnesia.adapters.engines.Provider``)."""

    def url(self, engine: str) -> str: ...

    def close(self) -> None: ...


@dataclass
class FaultScope:
    """What a store reached through the suite while faults were armed: one proxy per engine.

    ``engines`` maps each engine name the store asked for to its proxy; ``unproxied``
    lists what could not be put behind one (an in-process engine such as Qdrant local
    or Milvus Lite, a multi-host topology URL), so a test can say why it faulted less.
    ``provided`` names the engines this session's provider started (those it can also
    pause); the others came through :func:`fault_url`.
    """

    proxied: ProxiedProvider
    engines: dict[str, Proxy] = field(default_factory=dict)
    unproxied: dict[str, str] = field(default_factory=dict)
    provided: set[str] = field(default_factory=set)

    def route(self, name: str, real: str, *, provided: bool) -> str:
        if provided and name not in PROXIED_ENGINES:
            several = "," in real.partition("://")[2].partition("/")[0]
            self.unproxied[name] = ("a topology of several hosts: one proxy cannot stand in "
                                    "for its members" if several else
                                    "runs in the store's own process: no wire to fault")
            return real
        try:
            url = self.proxied.proxy_url(name, real)
        except ValueError as exc:
            self.unproxied[name] = str(exc)
            return real
        self.engines[name] = self.proxied.proxies[name]
        if provided:
            self.provided.add(name)
        return url


class EngineSession:
    """Engine URLs for one session, from one provider made on first use and closed once."""

    def __init__(self, make: Callable[[], EngineProvider]) -> None:
        self._make = make
        self._provider: EngineProvider | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._proxied: ProxiedProvider | None = None
        self._scope: FaultScope | None = None
        self._routed: _RoutedProvider | None = None
        self._armed = False  # faults were armed since the last heal
        self.handed: dict[str, str] = {}
        """Every engine this session handed out (kind -> its real URL, never a proxy's):
        where the suite may look inside after a forget (``engines/residue``)."""

    @property
    def provider(self) -> EngineProvider:
        """The provider, made now if this is the first use (engines still start lazily)."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the nomnesia engine session is closed (the pytest session "
                                   "that owned it has ended)")
            if self._provider is None:
                self._provider = self._make()
            return self._provider

    @property
    def started(self) -> bool:
        """Whether a provider was made (and so something may need stopping)."""
        return self._provider is not None

    @property
    def scope(self) -> FaultScope | None:
        """The fault scope armed now (None: URLs are handed out unproxied); what
        ``nomnesia.testing``'s fault context managers put their toxics on."""
        return self._scope

    def url(self, engine: str) -> str:
        """The URL of ``engine`` (``postgres``, ``redis``, ``valkey``, ``milvus``, ``qdrant``,
        ``redis-search``, ``qdrant-edge``), starting it the first time; behind the fault
        proxy while a :meth:`faulted` scope is open."""
        real = self.provider.url(engine)
        self.handed[engine] = real
        scope = self._scope
        return real if scope is None else scope.route(engine, real, provided=True)

    def urls(self, *engines: str) -> dict[str, str]:
        """``url`` of each engine (the provider interface the built-in stacks call)."""
        return {engine: self.url(engine) for engine in engines}

    def fault_url(self, url: str, name: str) -> str:
        """``url`` behind the fault proxy ``name`` inside a :meth:`faulted` scope, else itself."""
        scope = self._scope
        return url if scope is None else scope.route(name, url, provided=False)

    def routed(self) -> Any:
        """The provider as the built-in stacks should see it: its URLs routed like
        ``url`` (through the fault proxy while faults are armed), all else its own."""
        with self._lock:
            if self._routed is None:  # one object: indexes key shared pools on the provider
                self._routed = _RoutedProvider(self)
            return self._routed

    @contextmanager
    def faulted(self) -> Iterator[FaultScope]:
        """Arm the fault proxy: every URL handed out until exit goes through it, recorded.

        The proxies outlive the scope (one per engine per session, started on first
        use, stopped by ``close``), so a connection a store keeps after the test is
        never cut by the suite tidying up.
        """
        provider = self.provider
        with self._lock:
            if self._scope is not None:
                raise RuntimeError("faults are already armed in this engine session")
            if self._proxied is None:
                self._proxied = ProxiedProvider(provider)
            scope = self._scope = FaultScope(self._proxied)
            self._armed = True
        try:
            yield scope
        finally:
            for proxy in scope.engines.values():
                proxy.set_toxic(None)
            self._scope = None

    def heal(self) -> list[str]:
        """Undo whatever fault a test may have left, whatever happened to the test: every
        toxic off every proxy, the fault scope disarmed, every stopped engine process
        continued. What it had to undo, as sentences (empty: the test healed its own).

        Runs outside the test's event loop (the plugin calls it after each test), so a
        store that blocked that loop, or filled its executor, cannot keep it from running.
        """
        undone: list[str] = []
        with self._lock:
            if not self._armed:
                return undone  # no fault since the last heal: nothing to look for
            scope, self._scope, self._armed = self._scope, None, False
            proxied, provider = self._proxied, self._provider
        if scope is not None:
            undone.append("a fault scope was still armed")
        for name, proxy in (proxied.proxies if proxied is not None else {}).items():
            if proxy.toxic is not None:
                undone.append(f"{proxy.toxic.describe()} was still on {name}")
                proxy.set_toxic(None)
        if provider is not None:
            woke = continue_stopped(provider)
            if woke:
                undone.append(f"{len(woke)} engine processes were stopped (pids "
                              f"{', '.join(map(str, woke))})")
        return undone

    def close(self) -> None:
        """Stop every engine this session started, then the fault proxies; safe to call twice.

        The provider first: its ``at_close`` work (the Milvus index's pool dropping its
        collections) reaches the engines by the URLs its stores were given, proxied ones
        included. With the proxies stopped first, every such call met a refused
        connection, and pymilvus printed its tracebacks after the run's summary.
        """
        with self._lock:
            provider, self._provider, self._closed = self._provider, None, True
            proxied, self._proxied = self._proxied, None
        try:
            if provider is not None:
                provider.close()
        finally:
            if proxied is not None:
                proxied.close()


class _RoutedProvider:
    """An engine provider whose URLs come from an ``EngineSession`` (so they can be faulted)."""

    def __init__(self, session: EngineSession) -> None:
        self._session = session

    def url(self, engine: str) -> str:
        return self._session.url(engine)

    def urls(self, *engines: str) -> dict[str, str]:
        return self._session.urls(*engines)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session.provider, name)


_current: list[EngineSession] = []
_current_lock = threading.Lock()


def install(session: EngineSession) -> Callable[[], None]:
    """Make ``session`` the one ``engine_url`` uses; returns the function that undoes it.

    Sessions nest (pytest's pytester runs a session inside a session): the
    undo restores whichever was current before.
    """
    with _current_lock:
        _current.append(session)

    def uninstall() -> None:
        with _current_lock:
            if session in _current:
                _current.remove(session)

    return uninstall


def current_session() -> EngineSession:
    """The session of the running pytest run (or of an open ``engine_session()``)."""
    with _current_lock:
        if _current:
            return _current[-1]
    raise RuntimeError(
        "no nomnesia engine session: engine_url() works inside a pytest run with the nomnesia "
        "plugin (python -m pytest --pyargs nomnesia.suite --store mod:factory), or inside "
        "`with nomnesia.suite.engines.engine_session(): ...`")


def active_session() -> EngineSession | None:
    """The current session, or None outside a pytest run with the plugin (or an open
    ``engine_session()``): where faults are optional, not an error."""
    with _current_lock:
        return _current[-1] if _current else None


def engine_url(engine: str) -> str:
    """The URL of one engine for this session or xdist worker, started on first use."""
    return current_session().url(engine)


_namespaces_given = [0]  # how many times store_namespace() answered, in this process


def store_namespace() -> str:
    """The namespace for the store being opened: fresh each call (``nm`` and 12 hex
    digits), except in a nemesis run, where every worker process gets the run's own."""
    _namespaces_given[0] += 1
    return os.environ.get(NAMESPACE_ENV, "").strip() or f"nm{secrets.token_hex(6)}"


def namespaces_given() -> int:
    """How many times :func:`store_namespace` has answered in this process: a store whose
    factory never asks keeps its data somewhere the suite cannot name again, so a reopen
    cannot find it (the nemesis and the reopen test read the difference across an open)."""
    return _namespaces_given[0]


def keep_data() -> bool:
    """Whether the store being closed must keep its data: only in a nemesis load worker,
    whose successor reopens the namespace after a crash (the final reader drops it)."""
    return os.environ.get(KEEP_ENV, "").strip() == "1"


def fault_url(url: str, name: str) -> str:
    """Your own engine's ``url``, through the suite's fault proxy while a partial-failure
    test runs (so it can refuse, reset, stall and delay it), else unchanged.

    For a store on its own deployment (``NOMNESIA_BACKENDS=external`` or a URL of its
    own): call it where the factory builds its client, once per store, with a name per
    engine (``fault_url(os.environ["MY_REDIS"], "redis")``). Outside a pytest run with
    the nomnesia plugin it returns ``url``. Single-host URLs only.
    """
    session = active_session()
    return url if session is None else session.fault_url(url, name)


@contextmanager
def engine_session(backends: str | None = None) -> Iterator[EngineSession]:
    """A session of your own outside pytest; everything it started stops on exit.

    ``backends`` is ``embedded``, ``docker``, ``external`` or ``auto`` (default:
    ``$NOMNESIA_BACKENDS``, else ``auto``).
    """

    def make() -> EngineProvider:
        return get_provider(backends)

    session = EngineSession(make)
    uninstall = install(session)
    try:
        yield session
    finally:
        uninstall()
        session.close()
