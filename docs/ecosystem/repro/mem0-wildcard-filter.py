"""filters={'user_id': '*'} also returns memories that have no user_id at all.

mem0 documents '*' in filters as "match any value / field exists"
(docs.mem0.ai/open-source/features/metadata-filtering), so reading every user's
memories with it is intended. The Qdrant vector store's ``_build_field_condition``
drops the condition altogether, so the read also returns memories with no
user_id (here, one stored for an agent only): not what "field exists" says.

mem0 runs here with ``infer=False`` (no LLM) on Qdrant's local mode, with a
deterministic offline embedder so that no API key is needed.
Written against mem0ai 2.2.1 (qdrant-client 1.20).

Run: ``python mem0-wildcard-filter.py``
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
    await m.add("ann's note", user_id="ann", infer=False)
    await m.add("bob's note", user_id="bob", infer=False)
    await m.add("the agent's own note", agent_id="helper", infer=False)
    found = (await m.get_all(filters={"user_id": "*"}))["results"]
    owners = sorted(str(r.get("user_id")) for r in found)
    if any(r.get("user_id") is None for r in found):
        print(f"{MEM0}: get_all(filters={{'user_id': '*'}}) returned memories of {owners}: "
              f"including {sum(r.get('user_id') is None for r in found)} with no user_id")
        return 1
    print(f"not reproduced: get_all(filters={{'user_id': '*'}}) returned owners {owners}")
    return 0


with tempfile.TemporaryDirectory() as directory:
    code = asyncio.run(main(memory(directory)))
sys.exit(code)
