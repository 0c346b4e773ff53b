"""The vector-engine stacks: PostgreSQL archive + Redis log + one VectorIndex each.

Each factory only builds its index (adapters/indexes/) in the stack's
namespace; engines, archive, log and cleanup are ``open_engine_stack``'s. The
index drops its collection / keys / shard in ``aclose``, which the store calls
on exit, so a stack leaves nothing behind on a shared engine.
"""

from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager
from typing import Any

from .stacks import StackContext, open_engine_stack, open_valkey
from .tiered import TieredMemoryStore
from .tiers import VectorIndex

__all__ = ["open_milvus", "open_qdrant", "open_qdrant_edge", "open_redis", "open_redis_search",
           "open_valkey"]

Stack = AbstractAsyncContextManager[TieredMemoryStore]


async def _url(ctx: StackContext, engine: str) -> str:
    return str(await asyncio.to_thread(ctx.provider.url, engine))


async def _qdrant(ctx: StackContext) -> VectorIndex:
    from .indexes.qdrant import QdrantIndex

    index = QdrantIndex(await _url(ctx, "qdrant"), namespace=ctx.namespace, dim=ctx.dim,
                        timeout=ctx.timeout, reuse=ctx.reuse)
    await index.create()
    return index


async def _qdrant_edge(ctx: StackContext) -> VectorIndex:
    from .indexes.qdrant_edge import QdrantEdgeIndex

    # In-process, in a shard directory per namespace under the provider's
    # "qdrant-edge" directory: the provider removes it, even when this process
    # is killed, and a reopened namespace finds its shard there.
    index = QdrantEdgeIndex(await _url(ctx, "qdrant-edge"), namespace=ctx.namespace,
                            dim=ctx.dim, timeout=ctx.timeout, reuse=ctx.reuse)
    await index.create()
    return index


async def _milvus(ctx: StackContext) -> VectorIndex:
    from .indexes.milvus import MilvusIndex

    index = MilvusIndex(await _url(ctx, "milvus"), namespace=ctx.namespace, dim=ctx.dim,
                        timeout=ctx.timeout, reuse=ctx.reuse)
    await index.create()
    return index


async def _redis_vsets(ctx: StackContext) -> VectorIndex:
    from .indexes.redis_vsets import RedisVsetIndex

    index = RedisVsetIndex(await _url(ctx, "redis"), namespace=ctx.namespace, dim=ctx.dim,
                           timeout=ctx.timeout, reuse=ctx.reuse)
    await index.create()
    return index


async def _redis_search(ctx: StackContext) -> VectorIndex:
    from .indexes.redis_search import RedisSearchIndex

    index = RedisSearchIndex(await _url(ctx, "redis-search"), namespace=ctx.namespace,
                             dim=ctx.dim, timeout=ctx.timeout, reuse=ctx.reuse)
    await index.create()
    return index


def open_qdrant(*, provider: Any = None, **kw: Any) -> Stack:
    """``qdrant``: Qdrant via AsyncQdrantClient (embedded local mode, or a server URL)."""
    return open_engine_stack(_qdrant, provider=provider, engines=("qdrant",), **kw)


def open_qdrant_edge(*, provider: Any = None, **kw: Any) -> Stack:
    """``qdrant-edge``: the Qdrant Edge engine in-process."""
    return open_engine_stack(_qdrant_edge, provider=provider, engines=("qdrant-edge",), **kw)


def open_milvus(*, provider: Any = None, **kw: Any) -> Stack:
    """``milvus``: Milvus via pymilvus (Milvus Lite embedded, or a server URI)."""
    return open_engine_stack(_milvus, provider=provider, engines=("milvus",), **kw)


def open_redis(*, provider: Any = None, **kw: Any) -> Stack:
    """``redis``: Redis 8 log and Redis 8 vector sets in the same server."""
    return open_engine_stack(_redis_vsets, provider=provider, log_engine="redis", **kw)


def open_redis_search(*, provider: Any = None, **kw: Any) -> Stack:
    """``redis-search``: the Redis query engine (needs a Redis Stack URL)."""
    return open_engine_stack(_redis_search, provider=provider, engines=("redis-search",), **kw)
