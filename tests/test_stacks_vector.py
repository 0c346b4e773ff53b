"""The vector-engine stacks reopened on a named namespace (persistence across processes).

An in-process engine (Qdrant local mode) comes back empty; Qdrant Edge (in the
provider's directory), Milvus Lite and Redis come back with their data. Either way
the reopened store must be consistent and find what was written before.
"""

from __future__ import annotations

import secrets
import shutil
from pathlib import Path
from typing import Any

import pytest

from nomnesia.adapters import open_store

STACKS = ["qdrant", "qdrant-edge", "milvus", "redis"]


@pytest.mark.parametrize("stack", STACKS)
async def test_a_reopened_namespace_finds_what_was_written(engines: Any, stack: str) -> None:
    from nomnesia.adapters.postgres import create_pool, drop_schema
    from nomnesia.adapters.redis_log import drop_namespace

    namespace = f"nm_{secrets.token_hex(8)}"
    try:
        async with open_store(stack, provider=engines, namespace=namespace) as store:
            written = [await store.append_message("ann", "user", f"fact {i}") for i in range(3)]
        async with open_store(stack, provider=engines, namespace=namespace) as store:
            assert await store.consistent_state("ann")  # recover() ran on open
            assert [e.id for e in await store.get_history("ann")] == [e.id for e in written]
            for entry in written:
                hits = await store.search("ann", entry.content, 2)
                assert hits and hits[0].id == entry.id, (stack, entry.content, hits)
            assert await store.consistent_state("ann")
            await store.forget("ann")
            assert await store.consistent_state("ann")
    finally:
        pool = await create_pool(engines.url("postgres"))
        await drop_schema(pool, namespace)
        await pool.close()
        await drop_namespace(engines.url("redis"), namespace)  # the log and vector sets
        if stack == "qdrant-edge":  # a reopened shard is kept; the provider would remove it
            shutil.rmtree(Path(engines.url("qdrant-edge")) / namespace, ignore_errors=True)
        if stack == "milvus":
            from nomnesia.adapters.indexes.milvus import MilvusIndex
            index = MilvusIndex(engines.url("milvus"), namespace=namespace)
            await index.create()
            await index.drop()
            await index.aclose()


async def test_qdrant_edge_shards_live_in_the_providers_directory() -> None:
    """A worker SIGKILLed mid-test used to leave /tmp/nomnesia-edge-*: the shard now lives
    in the provider's directory, which the provider (or its watchdog) removes."""
    from nomnesia.adapters.engines import EmbeddedProvider

    provider = EmbeddedProvider()
    try:
        async with open_store("qdrant-edge", provider=provider) as store:
            await store.append_message("ann", "user", "fact")
            assert provider.directory is not None
            root = Path(provider.url("qdrant-edge"))
            assert root.parent == provider.directory
            shard = store.index.path  # type: ignore[attr-defined]
            assert shard.parent == root and shard.is_dir()
            assert [h.content for h in await store.search("ann", "fact", 1)] == ["fact"]
        assert not shard.exists()  # a fresh namespace is dropped on close
        directory = provider.directory
    finally:
        provider.close()
    assert not directory.exists()
