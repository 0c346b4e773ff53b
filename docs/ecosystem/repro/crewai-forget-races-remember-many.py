"""CrewAI's Memory: forget() does not wait for pending remember_many() saves, so what was
forgotten comes back.

``Memory.remember_many`` is non-blocking: it queues the save on Memory's background
executor (``_submit_save``) and returns. ``Memory.forget`` deletes from the storage at once,
without ``drain_writes()``: a save still queued lands after the delete, and the next
``recall`` (which drains first) or ``list_records`` returns the forgotten memory.
``reset()`` and ``reset_all()`` drain first (crewAI PR #6195 fixed the same race there);
``forget()`` does not (crewAI issue #7290, open; PR #7291, open).

No network and no API key: an LLM that answers only the consolidation question (never
asked here, every field is given) and a small hashing embedder, on LanceDB (CrewAI's
default storage) in a temporary directory.

Written against crewai 1.15.44 (lancedb 0.30). Run:
``python crewai-forget-races-remember-many.py``. Exits 1 while forgotten memories come
back, 0 when they do not.
"""

import hashlib
import os
import sys
import tempfile

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")  # offline: no telemetry wait
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")

from crewai.llms.base_llm import BaseLLM
from crewai.memory.storage.lancedb_storage import LanceDBStorage
from crewai.memory.unified_memory import Memory


class OfflineLLM(BaseLLM):
    def call(self, messages, *args, **kwargs):
        return '{"actions": [], "insert_new": true, "insert_reason": "offline"}'


def embedder(texts):
    """Words hashed into 64 buckets: deterministic, no model."""
    out = []
    for text in texts:
        vector = [0.0] * 64
        for word in text.lower().split():
            vector[hashlib.blake2b(word.encode(), digest_size=2).digest()[0] % 64] += 1.0
        out.append(vector)
    return out


TRIES = 5
with tempfile.TemporaryDirectory() as where:
    memory = Memory(llm=OfflineLLM(model="offline"), embedder=embedder,
                    storage=LanceDBStorage(path=os.path.join(where, "memory")))
    try:
        for attempt in range(1, TRIES + 1):
            scope = f"/user/ann{attempt}"
            # What an agent's crew does after a task: remember, without blocking.
            memory.remember_many([f"ann's card number is 4111-{attempt}"], scope=scope,
                                 categories=[], importance=0.5)
            deleted = memory.forget(scope=scope)  # the user asks to be forgotten
            memory.drain_writes()  # what recall() does first, and a crew at shutdown
            back = [r.content for r in memory.list_records(scope=scope)]
            if back:
                print(f"forgotten memory came back: forget(scope={scope!r}) deleted "
                      f"{deleted} records, then list_records returns {back} "
                      f"(try {attempt} of {TRIES})")
                sys.exit(1)
        print(f"not reproduced: forget() took every memory in {TRIES} tries")
    finally:
        memory.close()
