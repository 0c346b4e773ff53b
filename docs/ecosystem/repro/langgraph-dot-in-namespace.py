"""LangGraph's stores refuse a namespace label with '.', so an e-mail address cannot be a user id.

Documented (BaseStore.put/get/search, "Raises: InvalidNamespaceError: If a
namespace label ... contains a period"): a hazard for a team that keys memory
by user id, not a defect. The check lives in langgraph-checkpoint
(``langgraph.store.base._validate_namespace_labels``), not in langgraph.
Written against langgraph-checkpoint 4.3.2. Run: ``python langgraph-dot-in-namespace.py``.
"""

import asyncio
import sys
from importlib.metadata import version

from langgraph.store.memory import InMemoryStore


async def main() -> int:
    store = InMemoryStore()
    user_id = "ann.lee@example.com"
    try:
        await store.aput(("memories", user_id), "m1", {"content": "hello"})
    except Exception as exc:
        print(f"langgraph-checkpoint {version('langgraph-checkpoint')}: "
              f"aput(('memories', {user_id!r}), ...) raised {type(exc).__name__}: {exc}")
        return 1
    print("not reproduced: a user id with '.' was stored")
    return 0


sys.exit(asyncio.run(main()))
