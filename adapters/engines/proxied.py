"""A provider that hands out proxy URLs, so a store opened by name talks through the nemesis.

Stores get engine URLs from a provider (``provider.url("redis")``); wrapping
the real provider is therefore all it takes to put a :class:`Proxy` between
any stack and its networked engines, with no change to the stack.
"""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from nomnesia.suite.contract.errors import BackendUnavailable

from .proxy import Proxy, ProxyLoop
from .toxics import Toxic

__all__ = ["PROXIED_ENGINES", "ProxiedProvider"]

PROXIED_ENGINES: tuple[str, ...] = ("postgres", "redis", "valkey", "redis-search",
                                    "milvus-server")
"""Engines reached over TCP; the others (Milvus Lite, Qdrant local) run in-process."""


class ProxiedProvider:
    """Same interface as an engines Provider; networked engines come back behind a proxy.

    ``close()`` stops the proxies only: the wrapped provider belongs to the caller.
    """

    def __init__(self, provider: Any) -> None:
        self.inner = provider
        self.kind = f"proxied-{getattr(provider, 'kind', 'provider')}"
        self._loop: ProxyLoop | None = None
        self._proxies: dict[str, Proxy] = {}
        self._lock = threading.Lock()
        self._closed = False

    def url(self, engine: str) -> str:
        real = str(self.inner.url(engine))
        if engine not in PROXIED_ENGINES:
            return real
        return self.proxy_url(engine, real)

    def proxy_url(self, name: str, real: str) -> str:
        """``real`` behind the proxy called ``name``, started the first time it is asked for.

        Any single-host URL can go through one (a user's own deployment, not only the
        engines this provider started); a name keeps its target, so asking again for
        ``name`` with another host:port is an error, not a silent second engine.
        """
        parts = urlsplit(real)
        try:
            host, port = parts.hostname, parts.port
        except ValueError:  # a multi-host URL's "port" is not a number
            host, port = None, None
        if host is None or port is None:
            raise ValueError(f"cannot proxy {name} URL without one host:port: {real}")
        with self._lock:
            if self._closed:
                raise BackendUnavailable(name, "the proxied provider is closed")
            proxy = self._proxies.get(name)
            if proxy is not None and proxy.target != (host, port):
                raise ValueError(f"the fault proxy {name!r} already forwards to "
                                 f"{proxy.target[0]}:{proxy.target[1]}, not {host}:{port}: "
                                 "give each engine its own name")
            if proxy is None:
                if self._loop is None:
                    self._loop = ProxyLoop()
                proxy = self._loop.proxy(host, port, name)
                self._proxies[name] = proxy
            return proxy.url_for(real)

    def urls(self, *engines: str) -> dict[str, str]:
        return {engine: self.url(engine) for engine in engines}

    def proxy(self, engine: str) -> Proxy:
        """The proxy in front of ``engine`` (started by a first ``url(engine)``)."""
        self.url(engine)
        return self._proxies[engine]

    def set_toxic(self, engine: str, toxic: Toxic | None) -> None:
        """Put ``toxic`` on the proxy in front of ``engine`` (None: let it pass)."""
        self.proxy(engine).set_toxic(toxic)

    @property
    def proxies(self) -> dict[str, Proxy]:
        with self._lock:
            return dict(self._proxies)

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._proxies = {}
            loop, self._loop = self._loop, None
        if loop is not None:
            loop.close()  # and the proxies it started

    def __enter__(self) -> ProxiedProvider:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
