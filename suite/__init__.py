"""nomnesia.suite: the memory-store contract in code, and the conformance suite that enforces it.

Run it on any store::

    python -m pytest --pyargs nomnesia.suite --store mypkg.mod:factory

The names below are loaded on first use (PEP 562): ``nomnesia.suite.contract``, which every
store imports, must not pull in the engines, and an adapter importing the contract must not
import the suite back.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nomnesia.adapters.engines.session import (
        engine_session,
        engine_url,
        fault_url,
        keep_data,
        store_namespace,
    )

    from .contract import (
        ROLES,
        SUMMARY_ROLE,
        Capabilities,
        ConsistencyReport,
        Difference,
        Entry,
        EntryLike,
        Guarantee,
        MemoryStore,
    )
    from .contract.errors import BackendTimeout, BackendUnavailable, MemoryStoreError, StoreClosed

_WHERE = {
    **dict.fromkeys(("ROLES", "SUMMARY_ROLE", "Capabilities", "ConsistencyReport", "Difference",
                     "Entry", "EntryLike", "Guarantee", "MemoryStore"), "nomnesia.suite.contract"),
    **dict.fromkeys(("BackendTimeout", "BackendUnavailable", "MemoryStoreError", "StoreClosed"),
                    "nomnesia.suite.contract.errors"),
    **dict.fromkeys(("engine_session", "engine_url", "fault_url", "keep_data", "store_namespace"),
                    "nomnesia.adapters.engines.session"),
}

__all__ = ["ROLES", "SUMMARY_ROLE", "BackendTimeout", "BackendUnavailable", "Capabilities",
           "ConsistencyReport", "Difference", "Entry", "EntryLike", "Guarantee", "MemoryStore",
           "MemoryStoreError", "StoreClosed", "engine_session", "engine_url", "fault_url",
           "keep_data", "store_namespace"]


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'nomnesia.suite' has no attribute {name!r}")
    return getattr(importlib.import_module(where), name)
