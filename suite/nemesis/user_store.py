"""The nemesis on a store it did not write: ``--store MODULE:FACTORY`` or an interface option.

A built-in stack says which engines it uses (the registry); a user's store says
so only by asking: it calls ``engine_url(kind)`` when it is opened. So the
runner opens the factory once, as a probe, under an engine session that records
each kind asked for (:func:`probe_engines`). Its workers then open the store
under an engine session whose URLs are the runner's proxies
(:func:`open_store`), with the run's namespace and "keep your data" in the
environment (``engines.store_namespace`` / ``engines.keep_data``), so that a
worker replacing a crashed one reopens what it wrote. The final reader runs
without "keep", so the store drops its data when it closes.

A store that asked for no engine keeps its data in the process the nemesis
kills: the run refuses it with one sentence rather than report what a crash
must do to such a store. Likewise a store whose data dies with its object (a fresh
key prefix per object, dropped on close, never ``store_namespace()``): the workers and
the final reader each open their own store object, so the run would report every append
lost. :func:`keeps_data` opens, appends, closes and reopens it first, as a worker and the
final reader would, and the run refuses it with the sentence that says what to change.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from nomnesia.adapters.engines import ENV_VARS, ExternalProvider
from nomnesia.adapters.engines import session as engines

from ..core.factories import resolve_factory
from ..core.recorder import opened
from ..interfaces import MissingLibrary, by_option, store_factory

__all__ = ["describe", "keeps_data", "open_store", "probe_engines", "suite_factory"]

StoreFactory = Callable[[], AbstractAsyncContextManager[Any]]


def suite_factory(store: str = "", interface: str = "") -> StoreFactory:
    """The suite's factory for ``--store MODULE:FACTORY`` or ``OPTION=MODULE:FACTORY``."""
    from pathlib import Path

    import pytest


    try:
        if store:
            made: StoreFactory = resolve_factory(store, Path.cwd())
            return made
        option, _, value = interface.partition("=")
        chosen = by_option(option)
        return store_factory(chosen, resolve_factory(value, Path.cwd(), option))
    except (pytest.UsageError, MissingLibrary) as exc:  # one sentence, not a traceback
        raise ValueError(str(exc)) from None


def describe(store: str = "", interface: str = "") -> str:
    """How the report names the store: ``--store mod:f`` or ``--openai-session mod:f``."""
    return f"--store {store}" if store else interface.replace("=", " ", 1)


class _Recording:
    """A provider that notes every engine kind it is asked for."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.asked: list[str] = []
        self._lock = threading.Lock()

    def url(self, engine: str) -> str:
        with self._lock:
            if engine not in self.asked:
                self.asked.append(engine)
        return str(self.inner.url(engine))

    def close(self) -> None:
        """The probe's session must not stop the runner's engines."""


def probe_engines(factory: StoreFactory, provider: Any) -> list[str]:
    """Open the store once on ``provider``'s engines; the kinds it asked for, in order."""
    recording = _Recording(provider)
    session = engines.EngineSession(lambda: recording)
    uninstall = engines.install(session)

    async def probe() -> None:
        async with opened(factory):
            pass

    try:
        asyncio.run(probe())
    finally:
        uninstall()
    return list(recording.asked)


@asynccontextmanager
async def open_store(factory: StoreFactory, urls: dict[str, str], namespace: str, *,
                     keep: bool) -> AsyncIterator[Any]:
    """The store as the suite calls it (a view for smaller profiles), on the run's URLs."""

    os.environ[engines.NAMESPACE_ENV] = namespace
    os.environ[engines.KEEP_ENV] = "1" if keep else "0"
    provider = ExternalProvider({ENV_VARS[kind]: url for kind, url in urls.items()})
    session = engines.EngineSession(lambda: provider)
    uninstall = engines.install(session)
    try:
        async with opened(factory) as store:
            yield store
    finally:
        uninstall()


def keeps_data(factory: StoreFactory, urls: dict[str, str], namespace: str) -> tuple[bool, bool]:
    """(whether an append outlived the store object that made it, whether the factory asked
    for ``store_namespace()``), found as the nemesis uses a store: one object appends and
    closes keeping its data, a second object opened from the factory in the same
    namespace reads, then closes dropping it. The environment is restored after."""
    token = f"nemesis probe {secrets.token_hex(6)}"
    user = f"nmprobe{secrets.token_hex(4)}"
    saved = {name: os.environ.get(name) for name in (engines.NAMESPACE_ENV, engines.KEEP_ENV)}

    async def probe() -> bool:
        async with open_store(factory, urls, namespace, keep=True) as store:
            await store.append_message(user, "user", token)
        async with open_store(factory, urls, namespace, keep=False) as store:
            found = await store.get_history(user, 10)
            with contextlib.suppress(Exception):  # tidy: best effort, never a finding
                await store.forget(user)
        return any(_content(entry) == token for entry in found)

    given = engines.namespaces_given()
    try:
        kept = asyncio.run(probe())
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return kept, engines.namespaces_given() > given


def _content(entry: Any) -> object:
    return entry.get("content") if isinstance(entry, dict) else getattr(entry, "content", None)
