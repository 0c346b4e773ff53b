"""VectorIndexRetriever.aretrieve('') raises TypeError instead of returning results.

With an empty query string no query embedding is computed, and the similarity is
then computed against None (``NoneType * float``) inside the retrieval.
Written against llama-index-core 0.14.25 (in-memory SimpleVectorStore).

Run: ``python llama-empty-query.py``
"""

import asyncio
import sys
from importlib.metadata import version

from llama_index.core import Document, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding


async def main() -> int:
    index = VectorStoreIndex.from_documents([Document(text="a note about cats")],
                                            embed_model=MockEmbedding(embed_dim=8))
    retriever = index.as_retriever(similarity_top_k=2)
    print(f"aretrieve('note'): {len(await retriever.aretrieve('note'))} node(s)")
    try:
        nodes = await retriever.aretrieve("")
    except Exception as exc:
        print(f"llama-index-core {version('llama-index-core')}: aretrieve('') raised "
              f"{type(exc).__name__}: {exc}")
        return 1
    print(f"not reproduced: aretrieve('') returned {len(nodes)} node(s)")
    return 0


sys.exit(asyncio.run(main()))
