"""One embedded engine provider per process, for the ecosystem audits' ``--store`` factories.

A ``--store`` factory is a zero-argument callable, so it cannot be handed the
suite's provider; every audit factory asks this module instead. The provider
starts PostgreSQL or Redis on first use and is closed when the process exits
(each xdist worker is a process, so each gets its own engines). This is the
module global plus ``atexit`` that issue 13 calls out: it is kept small and in
one place so that the suite's supported engine helper can replace it: inside a
suite run, ``url`` now takes the suite's engines (see there).
"""

from __future__ import annotations

import atexit
import tempfile
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from nomnesia.adapters.engines import Provider, get_provider
from nomnesia.adapters.engines.session import active_session

__all__ = ["Generation", "Open", "asyncpg_engine", "asyncpg_url", "drop_tables", "namespace",
           "remove_sqlite", "sqlite_path", "url"]

_lock = threading.Lock()
_provider: Provider | None = None


def _close() -> None:
    global _provider
    with _lock:
        provider, _provider = _provider, None
    if provider is not None:
        provider.close()


def provider() -> Provider:
    """The process's embedded provider, started on first call and closed at exit."""
    global _provider
    with _lock:
        if _provider is None:
            _provider = get_provider("embedded")
            atexit.register(_close)
        return _provider


def url(engine: str) -> str:
    """The URL or DSN of ``engine`` (``postgres``, ``redis``): the running suite's, else this
    process's provider.

    Inside a pytest run with the nomnesia plugin, the audits take their engines from the
    suite's engine session, as any user's factory does (``nomnesia.suite.engine_url``), so
    the suite's partial-failure tests can fault them (docs/faults.md). The session is asked
    for where it lives, ``nomnesia.adapters.engines.session`` (this layer's own): the
    plugin installs it there without importing ``nomnesia.suite.engines``, so looking that
    module up in ``sys.modules`` found nothing and every audit's engines went unfaulted
    (the partial-failure test said "not applicable: the store got no engine from the
    suite"). Outside such a run this module's own provider serves.
    """
    session = active_session()
    if session is not None:
        return session.url(engine)
    return provider().url(engine)


def asyncpg_url() -> str:
    """The PostgreSQL URL for SQLAlchemy's asyncpg dialect (the libraries' async path)."""
    return "postgresql+asyncpg://" + url("postgres").split("://", 1)[1]


async def asyncpg_engine(name: str) -> Any:
    """A SQLAlchemy async engine on the process's PostgreSQL: a ``Generation``'s start
    for the libraries that take an engine and make their own tables in it."""
    from sqlalchemy.ext.asyncio import create_async_engine

    return create_async_engine(asyncpg_url())


async def drop_tables(engine: Any, *tables: str) -> None:
    """Drop a store's tables (the library made them), then dispose of the engine."""
    from sqlalchemy import text

    try:
        async with engine.begin() as conn:
            listed = ", ".join(f'"{table}"' for table in tables)
            await conn.execute(text(f"DROP TABLE IF EXISTS {listed} CASCADE"))
    finally:
        await engine.dispose()


_scratch: tempfile.TemporaryDirectory[str] | None = None


def sqlite_path(name: str) -> Path:
    """``<name>.db`` in this process's scratch directory, which is removed at exit with
    anything a store left in it (a killed run's is the OS's temp cleanup's)."""
    global _scratch
    with _lock:
        if _scratch is None:
            _scratch = tempfile.TemporaryDirectory(prefix="nomnesia-sqlite-")
            atexit.register(_scratch.cleanup)
        return Path(_scratch.name) / f"{name}.db"


def remove_sqlite(path: Path) -> None:
    """Remove a SQLite database and its companion files (a fast local unlink)."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def namespace(prefix: str) -> str:
    """A fresh name for one store's tables, keys or collections: every store starts empty."""
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


R = TypeVar("R")


@dataclass
class Open(Generic[R]):
    """One store's backend namespace while any of its sessions is open."""

    name: str
    resource: R
    users: int = 0


class Generation(Generic[R]):
    """One store's backend namespace for per-user factories (a session, a chat history):
    made by ``start(name)`` when the first object of a store opens, handed to every object
    opened while any is open, and given to ``stop`` (which drops what it made) when the
    last one closes. A per-user factory cannot tell one suite store from the next
    otherwise."""

    def __init__(self, prefix: str, start: Callable[[str], Awaitable[R]],
                 stop: Callable[[str, R], Awaitable[None]]) -> None:
        self.prefix, self.start, self.stop = prefix, start, stop
        self.current: Open[R] | None = None

    @asynccontextmanager
    async def open(self) -> AsyncIterator[Open[R]]:
        if self.current is None:
            name = namespace(self.prefix)
            self.current = Open(name, await self.start(name))
        now = self.current
        now.users += 1
        try:
            yield now
        finally:
            now.users -= 1
            if now.users == 0 and self.current is now:
                self.current = None
                await self.stop(now.name, now.resource)
