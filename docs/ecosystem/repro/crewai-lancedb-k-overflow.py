"""CrewAI's LanceDBStorage: a search or list limit of 2**32 or more raises OverflowError.

``LanceDBStorage.search(..., limit=k)`` and ``list_records(limit=n)`` hand the limit to
LanceDB's query builder as given, which converts it to a 32-bit integer: a limit of 2**32
or more raises ``OverflowError: out of range integral type conversion attempted`` instead
of returning every match. ``Memory.recall(limit=...)`` passes its limit straight through.

Written against crewai 1.15.44 (lancedb 0.30). Run: ``python crewai-lancedb-k-overflow.py``.
Exits 1 while the limit overflows, 0 when it does not.
"""

import os
import sys
import tempfile

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")  # offline: no telemetry wait
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

from crewai.memory.storage.lancedb_storage import LanceDBStorage
from crewai.memory.types import MemoryRecord

with tempfile.TemporaryDirectory() as where:
    storage = LanceDBStorage(path=os.path.join(where, "memory"))
    storage.save([MemoryRecord(content="hello", scope="/user/ann", embedding=[1.0, 0.0, 0.0])])
    found = storage.search([1.0, 0.0, 0.0], scope_prefix="/user/ann", limit=2**31)
    try:
        storage.search([1.0, 0.0, 0.0], scope_prefix="/user/ann", limit=2**32)
    except OverflowError as exc:
        print(f"search(limit=2**32) raised OverflowError: {exc} "
              f"(limit=2**31 returned {len(found)} record)")
        sys.exit(1)
    print("not reproduced: search(limit=2**32) returned")
