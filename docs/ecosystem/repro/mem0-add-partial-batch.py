"""add() of a batch of messages with infer=False is not all-or-nothing.

``AsyncMemory._add_to_vector_store`` stores the messages one at a time (one
``_create_memory`` each). When one of them cannot be stored (here a message whose
``name``, kept as the memory's ``actor_id``, cannot be serialized), add() raises
after the messages before it were stored: a caller that retries the batch stores
those twice. add()'s docstring says nothing either way.

mem0 runs here with ``infer=False`` (no LLM) on Qdrant's local mode, with a
deterministic offline embedder so that no API key is needed.
Written against mem0ai 2.2.1 (qdrant-client 1.20).

Run: ``python mem0-add-partial-batch.py``
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
    batch = [{"role": "user", "content": "first"}, {"role": "assistant", "content": "second"},
             {"role": "user", "content": "third", "name": object()}]
    try:
        await m.add(batch, user_id="ann", infer=False)
    except Exception as exc:  # whatever the serializer raises
        raised = f"{type(exc).__name__}: {str(exc)[:80]}"
    else:
        print("not reproduced: add() of the batch returned normally")
        return 0
    found = contents(await m.get_all(filters={"user_id": "ann"}))
    if found:
        print(f"{MEM0}: add() of 3 messages raised {raised} and stored {len(found)} of them: "
              f"{found}")
        return 1
    print(f"not reproduced: add() raised {raised} and stored nothing")
    return 0


with tempfile.TemporaryDirectory() as directory:
    code = asyncio.run(main(memory(directory)))
sys.exit(code)
