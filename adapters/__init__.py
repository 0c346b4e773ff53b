"""nomnesia.adapters: built-in memory stores, opened by name.

The rows live in ``registry.py`` (standard library only, so that nox can read
them without nomnesia installed); this module re-exports them and opens a
store by name.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any, cast

from nomnesia.suite.contract import MemoryStore

from .registry import (
    ADAPTERS,
    AdapterSpec,
    MissingDependency,
    UnknownAdapter,
    adapter_names,
    lookup,
)

__all__ = ["ADAPTERS", "AdapterSpec", "MissingDependency", "UnknownAdapter", "adapter_names",
           "lookup", "open_store"]


def open_store(name: str, *, provider: Any = None,
               **options: Any) -> AbstractAsyncContextManager[MemoryStore]:
    """Open a built-in stack by name: ``async with open_store("memory") as store: ...``.

    ``provider`` (from ``nomnesia.adapters.engines``) supplies engine URLs, so
    that many stores share one set of engines, each in its own namespace;
    without one, a stack starts what it needs and stops it on exit. Other
    options go to the stack's factory (``keep_last``, ``backends`` ...).
    """
    spec = lookup(name)
    factory = spec.load()
    if spec.engines:
        options["provider"] = provider
    else:  # an in-process store has no engines to choose
        options.pop("backends", None)
    return cast(AbstractAsyncContextManager[MemoryStore], factory(**options))
