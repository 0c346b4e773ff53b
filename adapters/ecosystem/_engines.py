"""One embedded engine provider per process, for the ecosystem audits' ``--store`` factories.

A ``--store`` factory is a zero-argument callable, so it cannot be handed the
suite's provider; every audit factory asks this module instead. The provider
starts PostgreSQL or Redis on first use and is closed when the process exits
(each xdist worker is a process, so each gets its own engines). This is the
module global plus ``atexit`` that issue 13 calls out: it is kept small and in
one place so that the suite's supported engine helper can replace it.
"""

from __future__ import annotations

import atexit
import threading
import uuid

from nomnesia.adapters.engines import Provider, get_provider

__all__ = ["namespace", "url"]

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
    """The URL or DSN of ``engine`` (``postgres``, ``redis``) in this process's provider."""
    return provider().url(engine)


def namespace(prefix: str) -> str:
    """A fresh name for one store's tables, keys or collections: every store starts empty."""
    return f"{prefix}_{uuid.uuid4().hex[:12]}"
