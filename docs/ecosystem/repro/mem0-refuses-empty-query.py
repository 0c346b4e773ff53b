"""search('') raises ValueError instead of returning nothing or everything.

Deliberate (the error says "Invalid query: cannot be empty"): a hazard for a
caller that passes a user's (possibly empty) input straight through.

mem0 runs here with ``infer=False`` (no LLM) on Qdrant's local mode, with a
deterministic offline embedder so that no API key is needed.
Written against mem0ai 2.2.1 (qdrant-client 1.20).

Run: ``python mem0-refuses-empty-query.py``
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
    await m.add("a note", user_id="ann", infer=False)
    try:
        await m.search("", filters={"user_id": "ann"})
    except ValueError as exc:
        print(f"{MEM0}: search('') raised ValueError: {exc}")
        return 1
    print("not reproduced: search('') answered")
    return 0


with tempfile.TemporaryDirectory() as directory:
    code = asyncio.run(main(memory(directory)))
sys.exit(code)
