"""The adapter registry: one row per built-in store, and what it needs installed.

The suite's ``--adapter``, ``open_store``, the nox matrix and the CI matrix all
read these rows, so adding a row here is all it takes to test a stack
everywhere. A stack is a row: its log engine, its index class and the engines
it needs; a backend on an engine the project already runs is one index module
plus one row (docs/adapters.md). Like fsspec's registry, a name maps to an
import path that is loaded only when used, and a missing client library becomes
an error that says which extra to install instead of a bare ImportError.

This module imports the standard library only, and nothing relative: nox loads
it by path from an interpreter where nomnesia (and its dependencies) may not be
installed, e.g. ``importlib.util.spec_from_file_location("registry", path)``.
"""

# No ``from __future__ import annotations``: with string annotations, dataclass
# looks its module up in sys.modules, which a module run by path is not in.
import difflib
import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["ADAPTERS", "STACK_OPENER", "AdapterSpec", "MissingDependency", "UnknownAdapter",
           "adapter_names", "lookup"]


class UnknownAdapter(LookupError):
    """No built-in store is registered under that name (the message suggests the nearest)."""


class MissingDependency(ImportError):
    """A client library or engine wheel of an adapter is not installed."""

    def __init__(self, adapter: str, module: str, extras: tuple[str, ...]) -> None:
        hint = f"pip install 'nomnesia[{','.join(extras)}]'" if extras else "pip install nomnesia"
        super().__init__(f"adapter {adapter!r} needs the Python module {module!r}: {hint}")
        self.adapter = adapter
        self.module = module
        self.hint = hint


STACK_OPENER = "nomnesia.adapters.stacks:open_engine_stack"
"""What opens every row with an ``index``: ``open_engine_stack(spec, **options)``."""


def _attr(target: str) -> Any:
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


@dataclass(frozen=True)
class AdapterSpec:
    """How to open one built-in store, and what it needs installed.

    A *stack* (a row with ``index``) is data: the PostgreSQL archive, a
    short-term log on ``log``, and the VectorIndex class ``index`` on
    ``index_engine``; ``open_engine_stack`` opens any of them. Another row
    names a ``target`` that opens the store itself (the in-process oracle).
    """

    name: str
    target: str = ""
    """``module:callable`` for a row without ``index``: it takes keyword options
    and returns an async context manager that yields a fresh, empty store."""
    extras: tuple[str, ...] = ()
    """The pip extras that bring its clients and embedded engines."""
    requires: tuple[str, ...] = ()
    """Import names checked before opening, for the install hint."""
    description: str = ""
    engines: tuple[str, ...] = ()
    """Engine kinds the stack needs from a provider (``postgres``, ``redis`` ...);
    empty for in-process stores."""
    log: str = ""
    """The engine of a stack's short-term log: ``redis``, ``valkey``, or a replicated
    kind of them (``redis-sentinel``, ``redis-cluster``)."""
    index: str = ""
    """``module:Class`` of a stack's VectorIndex. The class is built as
    ``Class(target, namespace=, dim=, timeout=, reuse=)`` then ``await create()``,
    where ``target`` is the URL of ``index_engine``, or the connection the stack
    already holds to it (the archive's pool, for ``postgres``). A class that shares
    state across the stores of one provider (the Milvus server's collection pool)
    has a classmethod ``for_provider(provider, target, **same)`` used instead."""
    index_engine: str = ""
    """The engine kind whose URL (or held connection) the index gets."""
    archive: str = "postgres"
    """The engine kind of a stack's PostgreSQL archive: ``postgres``, or a replicated
    PostgreSQL (``postgres-ha``: a primary with a synchronous standby)."""
    event_loop: str = "uvloop"
    """The loop the suite runs this stack on under ``--nomnesia-loop auto`` (where uvloop is
    installed): ``uvloop``, or ``asyncio`` for a stack measured slower on uvloop (the
    Milvus stacks, whose pymilvus calls go through gRPC's own asyncio integration: a
    ``milvus-server`` run took 147 CPU-s on uvloop against 110 on asyncio's loop,
    docs/bench.md)."""

    def __post_init__(self) -> None:
        if self.index:
            wanted = {self.archive, self.log, self.index_engine}
            if not (self.log and self.index_engine) or set(self.engines) != wanted:
                raise ValueError(f"adapter {self.name!r}: a stack needs log and index_engine, "
                                 f"and engines == {sorted(wanted)}, not {self.engines}")
        elif not self.target:
            raise ValueError(f"adapter {self.name!r} needs a target or an index")

    @property
    def is_stack(self) -> bool:
        return bool(self.index)

    def check_installed(self) -> None:
        """Raise MissingDependency, naming the extra, if a required module is absent."""
        for module in self.requires:
            try:
                importlib.import_module(module)
            except ImportError as exc:
                raise MissingDependency(self.name, module, self.extras) from exc

    def load(self) -> Callable[..., Any]:
        """The opener: a callable of keyword options returning an async context manager."""
        self.check_installed()
        if self.is_stack:
            return functools.partial(_attr(STACK_OPENER), self)
        factory: Callable[..., Any] = _attr(self.target)
        return factory

    def index_class(self) -> Any:
        """The stack's VectorIndex class, imported now (its client library with it)."""
        self.check_installed()
        return _attr(self.index)


_INDEXES = "nomnesia.adapters.indexes"

ADAPTERS: dict[str, AdapterSpec] = {
    spec.name: spec
    for spec in (
        AdapterSpec("memory", "nomnesia.adapters.memory:InMemoryStore",
                    description="in-process oracle: every guarantee, no backends"),
        AdapterSpec("pgvector", log="redis", index=f"{_INDEXES}.pgvector:PgVectorIndex",
                    index_engine="postgres",
                    extras=("pgvector", "redis", "embedded"), requires=("psycopg", "redis"),
                    engines=("postgres", "redis"),
                    description="Redis short-term log + pgvector index + PostgreSQL archive"),
        AdapterSpec("qdrant", log="redis", index=f"{_INDEXES}.qdrant:QdrantIndex",
                    index_engine="qdrant",
                    extras=("qdrant", "pgvector", "redis", "embedded"),
                    requires=("qdrant_client", "psycopg", "redis"),
                    engines=("postgres", "redis", "qdrant"),
                    description="Redis log + Qdrant index (qdrant-client) + PostgreSQL archive"),
        # The "URL" of qdrant-edge is a directory under the provider's own, which the
        # provider removes even when this process is killed.
        AdapterSpec("qdrant-edge", log="redis", index=f"{_INDEXES}.qdrant_edge:QdrantEdgeIndex",
                    index_engine="qdrant-edge",
                    extras=("pgvector", "redis", "embedded"),
                    requires=("qdrant_edge", "psycopg", "redis"),
                    engines=("postgres", "redis", "qdrant-edge"),
                    description="Redis log + Qdrant Edge index in-process + PostgreSQL archive"),
        AdapterSpec("milvus", log="redis", event_loop="asyncio",
                    index=f"{_INDEXES}.milvus:MilvusIndex",
                    index_engine="milvus",
                    extras=("milvus", "pgvector", "redis", "embedded"),
                    requires=("pymilvus", "psycopg", "redis"),
                    engines=("postgres", "redis", "milvus"),
                    description="Redis log + Milvus index (pymilvus) + PostgreSQL archive"),
        AdapterSpec("redis", log="redis", index=f"{_INDEXES}.redis_vsets:RedisVsetIndex",
                    index_engine="redis",
                    extras=("pgvector", "redis", "embedded"), requires=("psycopg", "redis"),
                    engines=("postgres", "redis"),
                    description="Redis 8 log + Redis 8 vector sets index + PostgreSQL archive"),
        AdapterSpec("valkey", log="valkey", index=f"{_INDEXES}.pgvector:PgVectorIndex",
                    index_engine="postgres",
                    extras=("pgvector", "redis", "embedded"), requires=("psycopg", "redis"),
                    engines=("postgres", "valkey"),
                    description="Valkey log + pgvector index + PostgreSQL archive"),
        AdapterSpec("redis-search", log="redis",
                    index=f"{_INDEXES}.redis_search:RedisSearchIndex",
                    index_engine="redis-search",
                    extras=("pgvector", "redis", "embedded"), requires=("psycopg", "redis"),
                    engines=("postgres", "redis", "redis-search"),
                    description="Redis log + Redis query engine (RediSearch) index "
                                "+ PostgreSQL archive"),
        # MilvusIndex on a Milvus server over gRPC (never Lite), collections pooled.
        AdapterSpec("milvus-server", log="redis", event_loop="asyncio",
                    index=f"{_INDEXES}.milvus:ServerMilvusIndex",
                    index_engine="milvus-server",
                    extras=("milvus", "pgvector", "redis", "embedded"),
                    requires=("pymilvus", "psycopg", "redis"),
                    engines=("postgres", "redis", "milvus-server"),
                    description="Redis log + Milvus server index (gRPC) + PostgreSQL archive"),
        # Replicated engines (docs/topologies.md): every tier survives a failover.
        AdapterSpec("pgvector-ha", log="redis-sentinel",
                    index=f"{_INDEXES}.pgvector:PgVectorIndex", index_engine="postgres-ha",
                    archive="postgres-ha",
                    extras=("pgvector", "redis", "embedded"), requires=("psycopg", "redis"),
                    engines=("postgres-ha", "redis-sentinel"),
                    description="Redis log under Sentinel + pgvector index + PostgreSQL "
                                "archive, on a primary with a synchronous standby"),
        AdapterSpec("redis-cluster", log="redis-cluster",
                    index=f"{_INDEXES}.redis_vsets:RedisVsetIndex", index_engine="redis-cluster",
                    extras=("pgvector", "redis", "embedded"), requires=("psycopg", "redis"),
                    engines=("postgres", "redis-cluster"),
                    description="Redis Cluster (3 primaries, a replica each) log + vector sets "
                                "index + PostgreSQL archive"),
    )
}


def adapter_names() -> list[str]:
    """Names of the built-in stores, in registry order."""
    return list(ADAPTERS)


def lookup(name: str) -> AdapterSpec:
    """The registry row ``name``; UnknownAdapter (with the nearest name) if there is none."""
    try:
        return ADAPTERS[name]
    except KeyError:
        known = ", ".join(ADAPTERS)
        close = difflib.get_close_matches(name, ADAPTERS, n=1)
        maybe = f"did you mean {close[0]!r}? " if close else ""
        raise UnknownAdapter(f"no such built-in store: {name!r}; {maybe}known: {known}") from None
