"""nomnesia.suite: the memory-store contract in code, and the conformance suite that enforces it.

Run it on any store::

    python -m pytest --pyargs nomnesia.suite --store mypkg.mod:factory
"""

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
from .engines import engine_session, engine_url, fault_url, keep_data, store_namespace
from .errors import (
    BackendTimeout,
    BackendUnavailable,
    MemoryStoreError,
    StoreClosed,
)

__all__ = [
    "ROLES",
    "SUMMARY_ROLE",
    "BackendTimeout",
    "BackendUnavailable",
    "Capabilities",
    "ConsistencyReport",
    "Difference",
    "Entry",
    "EntryLike",
    "Guarantee",
    "MemoryStore",
    "MemoryStoreError",
    "StoreClosed",
    "engine_session",
    "engine_url",
    "fault_url",
    "keep_data",
    "store_namespace",
]
