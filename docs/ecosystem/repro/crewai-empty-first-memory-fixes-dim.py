"""CrewAI's Memory on LanceDBStorage: an empty first memory fixes the table at 3072
dimensions, and every later memory of any other embedder is lost.

``embed_texts`` leaves an empty or whitespace-only content unembedded (``[]``), and
``LanceDBStorage.save`` creates its table from the first record it saves: with no
embedding, ``_ensure_table`` falls back to ``DEFAULT_VECTOR_DIM`` (3072, OpenAI's
text-embedding-3-large) and fills the record with zeros. Every later record from an
embedder of another size (text-embedding-3-small, Ollama, a custom callable: all
documented) then raises ``EmbeddingDimensionMismatchError``. ``remember_many`` saves in the
background and has already returned, so the loss is reported only as a
``MemorySaveFailedEvent``; ``remember`` raises it.

No network and no API key: an LLM that is never asked (every field is given) and a 64-wide
hashing embedder, on LanceDB in a temporary directory.

Written against crewai 1.15.44 (lancedb 0.30). Run:
``python crewai-empty-first-memory-fixes-dim.py``. Exits 1 while later memories are lost,
0 when they are kept.
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


with tempfile.TemporaryDirectory() as where:
    memory = Memory(llm=OfflineLLM(model="offline"), embedder=embedder,
                    storage=LanceDBStorage(path=os.path.join(where, "memory")))
    try:
        for content in ("", "ann likes jazz", "ann lives in Lyon"):
            memory.remember_many([content], scope="/user/ann", categories=[], importance=0.5)
        memory.drain_writes()
        kept = [r.content for r in memory.list_records(scope="/user/ann")]
        if "ann likes jazz" not in kept:
            print(f"later memories lost: after remember_many of '', 'ann likes jazz' and "
                  f"'ann lives in Lyon', list_records returns {kept}")
            sys.exit(1)
        print(f"not reproduced: list_records returns {kept}")
    finally:
        memory.close()
