"""Concurrent calls on one AsyncMemory over Qdrant's local mode raise.

AsyncMemory runs every vector-store and history call in a worker thread
(``asyncio.to_thread``) with no lock; neither qdrant-client's local mode nor
mem0's SQLiteManager is safe for concurrent threads, so concurrent add and
get_all race (IndexError, sqlite3 errors).

mem0 runs here with ``infer=False`` (no LLM) on Qdrant's local mode, with a
deterministic offline embedder so that no API key is needed.
Written against mem0ai 2.2.1 (qdrant-client 1.20).

Run: ``python mem0-threads-local-qdrant.py``
"""

import asyncio
import hashlib
import os
import sys
import tempfile
from importlib.metadata import version

os.environ.setdefault("MEM0_TELEMETRY", "False")

from mem0 import AsyncMemory
from mem0.configs.base import MemoryConfig
from mem0.configs.embeddings.base import BaseEmbedderConfig
from mem0.embeddings.base import EmbeddingBase

MEM0 = f"mem0ai {version('mem0ai')}"


class OfflineEmbedder(EmbeddingBase):
    """Eight numbers from a hash of the text: stands in for a real embedding model."""

    def __init__(self) -> None:
        super().__init__(BaseEmbedderConfig(embedding_dims=8))

    def embed(self, text, memory_action=None):
        digest = hashlib.sha256(text.encode()).digest()
        return [b / 255 for b in digest[:8]]


def memory(directory: str) -> AsyncMemory:
    config = MemoryConfig(
        vector_store={"provider": "qdrant", "config": {
            "collection_name": "memories", "embedding_model_dims": 8,
            "path": os.path.join(directory, "qdrant")}},
        llm={"provider": "openai", "config": {"api_key": "unused with infer=False"}},
        embedder={"provider": "openai", "config": {"api_key": "unused", "embedding_dims": 8}},
        history_db_path=os.path.join(directory, "history.db"),
    )
    m = AsyncMemory(config)
    m.embedding_model = OfflineEmbedder()
    return m


def contents(found) -> list[str]:
    return sorted(r["memory"] for r in found["results"])


async def main(m: AsyncMemory) -> int:
    for attempt in range(1, 11):
        calls = [m.add([{"role": "user", "content": f"m{i}"}], user_id="ann", infer=False)
                 for i in range(20)]
        calls += [m.get_all(filters={"user_id": "ann"}, top_k=100) for _ in range(20)]
        results = await asyncio.gather(*calls, return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            print(f"{MEM0}: {len(errors)} of {len(calls)} concurrent calls raised (attempt "
                  f"{attempt}), first {type(errors[0]).__name__}: {errors[0]}")
            return 1
    print("not reproduced: 10 rounds of 40 concurrent calls, no error")
    return 0


with tempfile.TemporaryDirectory() as directory:
    code = asyncio.run(main(memory(directory)))
sys.exit(code)
