"""Benchmark: the real embedder (all-MiniLM-L6-v2) against the hashing one.

    pip install 'torch==2.13.0+cpu' 'nomnesia[embedder]'   # a CPU torch first
    python bench/bench_embedder.py

Prints the model's load time and throughput (batched and one text at a time),
then append and search latency on the pgvector stack with each embedder.
Not a test: it prints numbers and asserts nothing.
"""

from __future__ import annotations

import asyncio
import time

from nomnesia.adapters import open_store
from nomnesia.adapters.engines import get_provider
from nomnesia.adapters.text import Embedder, HashingEmbedder, MiniLMEmbedder


def model_numbers() -> MiniLMEmbedder:
    started = time.perf_counter()
    model = MiniLMEmbedder()
    print(f"MiniLM load: {time.perf_counter() - started:.2f} s")
    batch = [f"message number {i} about topic {i % 17}" for i in range(512)]
    started = time.perf_counter()
    model.embed(batch)
    print(f"MiniLM batch of 512: {512 / (time.perf_counter() - started):.0f} texts/s")
    started = time.perf_counter()
    for text in batch[:100]:
        model.embed([text])
    print(f"MiniLM one at a time: {100 / (time.perf_counter() - started):.0f} texts/s")
    return model


async def store_numbers(name: str, embedder: Embedder, provider: object) -> None:
    async with open_store("pgvector", provider=provider, embedder=embedder) as store:
        await store.append_message("warm", "user", "warm up")
        appends, searches = [], []
        for i in range(200):
            started = time.perf_counter()
            await store.append_message("u", "user", f"message {i} about the garden")
            appends.append(time.perf_counter() - started)
        for i in range(100):
            started = time.perf_counter()
            await store.search("u", f"weather {i}")
            searches.append(time.perf_counter() - started)
    appends.sort()
    searches.sort()
    print(f"{name}: append p50 {appends[100] * 1000:.2f} ms, p99 {appends[197] * 1000:.2f} ms; "
          f"search p50 {searches[50] * 1000:.2f} ms")


async def main() -> None:
    minilm = model_numbers()
    provider = get_provider("embedded")
    try:
        await store_numbers("hashing", HashingEmbedder(), provider)
        await store_numbers("minilm", minilm, provider)
    finally:
        provider.close()


if __name__ == "__main__":
    asyncio.run(main())
