"""nomnesia.adapters: built-in memory stores, opened by name.

The registry is the one list of adapters: the suite's ``--adapter``, the nox
matrix and the CI matrix all read it, so adding a stack here is all it takes to
test it everywhere. Like fsspec's registry, a name maps to an import path that
is loaded only when used, and a missing client library becomes an error that
says which extra to install instead of a bare ImportError.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, cast

from nomnesia.suite.contract import MemoryStore
from nomnesia.suite.errors import UnknownAdapter

__all__ = ["ADAPTERS", "AdapterSpec", "MissingDependency", "adapter_names", "open_store"]


class MissingDependency(ImportError):
    """A client library or engine wheel of an adapter is not installed."""

    def __init__(self, adapter: str, module: str, extras: tuple[str, ...]) -> None:
        hint = f"pip install 'nomnesia[{','.join(extras)}]'" if extras else "pip install nomnesia"
        super().__init__(f"adapter {adapter!r} needs the Python module {module!r}: {hint}")
        self.adapter = adapter
        self.module = module
        self.hint = hint


@dataclass(frozen=True)
class AdapterSpec:
    """How to open one built-in stack, and what it needs installed."""

    name: str
    target: str
    """``module:callable``; the callable takes keyword options and returns an
    async context manager that yields a fresh, empty store."""
    extras: tuple[str, ...] = ()
    """The pip extras that bring its clients and embedded engines."""
    requires: tuple[str, ...] = ()
    """Import names checked before opening, for the install hint."""
    description: str = ""
    engines: tuple[str, ...] = ()
    """Engine kinds the stack needs from a provider (``postgres``, ``redis`` ...);
    empty for in-process stores."""

    def load(self) -> Callable[..., AbstractAsyncContextManager[MemoryStore]]:
        for module in self.requires:
            try:
                importlib.import_module(module)
            except ImportError as exc:
                raise MissingDependency(self.name, module, self.extras) from exc
        module_name, _, attr = self.target.partition(":")
        factory = getattr(importlib.import_module(module_name), attr)
        return cast(Callable[..., AbstractAsyncContextManager[MemoryStore]], factory)


ADAPTERS: dict[str, AdapterSpec] = {
    spec.name: spec
    for spec in (
        AdapterSpec("memory", "nomnesia.adapters.memory:InMemoryStore",
                    description="in-process oracle: every guarantee, no backends"),
        AdapterSpec("pgvector", "nomnesia.adapters.stacks:open_pgvector",
                    extras=("pgvector", "redis", "embedded"), requires=("psycopg", "redis"),
                    engines=("postgres", "redis"),
                    description="Redis short-term log + pgvector index + PostgreSQL archive"),
        AdapterSpec("qdrant", "nomnesia.adapters.stacks_vector:open_qdrant",
                    extras=("qdrant", "pgvector", "redis", "embedded"),
                    requires=("qdrant_client", "psycopg", "redis"),
                    engines=("postgres", "redis", "qdrant"),
                    description="Redis log + Qdrant index (qdrant-client) + PostgreSQL archive"),
        AdapterSpec("qdrant-edge", "nomnesia.adapters.stacks_vector:open_qdrant_edge",
                    extras=("pgvector", "redis", "embedded"),
                    requires=("qdrant_edge", "psycopg", "redis"),
                    engines=("postgres", "redis", "qdrant-edge"),
                    description="Redis log + Qdrant Edge index in-process + PostgreSQL archive"),
        AdapterSpec("milvus", "nomnesia.adapters.stacks_vector:open_milvus",
                    extras=("milvus", "pgvector", "redis", "embedded"),
                    requires=("pymilvus", "psycopg", "redis"),
                    engines=("postgres", "redis", "milvus"),
                    description="Redis log + Milvus index (pymilvus) + PostgreSQL archive"),
        AdapterSpec("redis", "nomnesia.adapters.stacks_vector:open_redis",
                    extras=("pgvector", "redis", "embedded"), requires=("psycopg", "redis"),
                    engines=("postgres", "redis"),
                    description="Redis 8 log + Redis 8 vector sets index + PostgreSQL archive"),
        AdapterSpec("valkey", "nomnesia.adapters.stacks_vector:open_valkey",
                    extras=("pgvector", "redis", "embedded"), requires=("psycopg", "redis"),
                    engines=("postgres", "valkey"),
                    description="Valkey log + pgvector index + PostgreSQL archive"),
        AdapterSpec("redis-search", "nomnesia.adapters.stacks_vector:open_redis_search",
                    extras=("pgvector", "redis", "embedded"), requires=("psycopg", "redis"),
                    engines=("postgres", "redis", "redis-search"),
                    description="Redis log + Redis query engine (RediSearch) index "
                                "+ PostgreSQL archive"),
        AdapterSpec("milvus-server", "nomnesia.adapters.stacks_vector:open_milvus_server",
                    extras=("milvus", "pgvector", "redis", "embedded"),
                    requires=("pymilvus", "psycopg", "redis"),
                    engines=("postgres", "redis", "milvus-server"),
                    description="Redis log + Milvus server index (gRPC) + PostgreSQL archive"),
    )
}


def adapter_names() -> list[str]:
    """Names of the built-in stacks, in registry order."""
    return list(ADAPTERS)


def open_store(name: str, *, provider: Any = None,
               **options: Any) -> AbstractAsyncContextManager[MemoryStore]:
    """Open a built-in stack by name: ``async with open_store("memory") as store: ...``.

    ``provider`` (from ``nomnesia.adapters.engines``) supplies engine URLs, so
    that many stores share one set of engines, each in its own namespace;
    without one, a stack starts what it needs and stops it on exit. Other
    options go to the stack's factory (``keep_last``, ``backends`` ...).
    """
    try:
        spec = ADAPTERS[name]
    except KeyError:
        known = ", ".join(ADAPTERS)
        close = difflib.get_close_matches(name, ADAPTERS, n=1)
        maybe = f"did you mean {close[0]!r}? " if close else ""
        raise UnknownAdapter(f"no built-in store named {name!r}; {maybe}known: {known}") from None
    factory = spec.load()
    if spec.engines:
        options["provider"] = provider
    else:  # an in-process store has no engines to choose
        options.pop("backends", None)
    return factory(**options)
