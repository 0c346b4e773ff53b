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

Layering: the suite core never imports ``nomnesia.adapters``. The plugin (an
entry point) hands this module a function that makes the provider, and
``engine_session`` imports the adapters' ``get_provider`` only when called.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

__all__ = ["EngineProvider", "EngineSession", "current_session", "engine_session", "engine_url"]


class EngineProvider(Protocol):
    """What a session needs of a provider (``nomnesia.adapters.engines.Provider``)."""

    def url(self, engine: str) -> str: ...

    def close(self) -> None: ...


class EngineSession:
    """Engine URLs for one session, from one provider made on first use and closed once."""

    def __init__(self, make: Callable[[], EngineProvider]) -> None:
        self._make = make
        self._provider: EngineProvider | None = None
        self._lock = threading.Lock()
        self._closed = False

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

    def url(self, engine: str) -> str:
        """The URL of ``engine`` (``postgres``, ``redis``, ``valkey``, ``milvus``, ``qdrant``,
        ``redis-search``, ``qdrant-edge``), starting it the first time."""
        return self.provider.url(engine)

    def close(self) -> None:
        """Stop every engine this session started; safe to call twice."""
        with self._lock:
            provider, self._provider, self._closed = self._provider, None, True
        if provider is not None:
            provider.close()


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


def engine_url(engine: str) -> str:
    """The URL of one engine for this session or xdist worker, started on first use."""
    return current_session().url(engine)


@contextmanager
def engine_session(backends: str | None = None) -> Iterator[EngineSession]:
    """A session of your own outside pytest; everything it started stops on exit.

    ``backends`` is ``embedded``, ``docker``, ``external`` or ``auto`` (default:
    ``$NOMNESIA_BACKENDS``, else ``auto``).
    """

    def make() -> EngineProvider:
        from nomnesia.adapters.engines import get_provider  # only here: the core stays light

        return get_provider(backends)

    session = EngineSession(make)
    uninstall = install(session)
    try:
        yield session
    finally:
        uninstall()
        session.close()
