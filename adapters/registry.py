"""The adapter registry: one row per built-in store, and what it needs installed.

The suite's ``--adapter``, ``open_store``, the nox matrix and the CI matrix all
read these rows, so adding a row here is all it takes to test a stack
everywhere. Like fsspec's registry, a name maps to an import path that is loaded
only when used, and a missing client library becomes an error that says which
extra to install instead of a bare ImportError.

This module imports the standard library only, and nothing relative: nox loads
it by path from an interpreter where nomnesia (and its dependencies) may not be
installed, e.g. ``importlib.util.spec_from_file_location("registry", path)``.
"""

# No ``from __future__ import annotations``: with string annotations, dataclass
# looks its module up in sys.modules, which a module run by path is not in.
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["ADAPTERS", "AdapterSpec", "MissingDependency", "adapter_names"]


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
        module_name, _, attr = self.target.partition(":")
        factory: Callable[..., Any] = getattr(importlib.import_module(module_name), attr)
        return factory


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
