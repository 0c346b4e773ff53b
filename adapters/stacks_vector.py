"""The vector-engine stacks: PostgreSQL archive + Redis log + one VectorIndex each.

Each factory only builds its index (adapters/indexes/) in the stack's
namespace; engines, archive, log and cleanup are ``open_engine_stack``'s. The
index drops its collection / keys / shard in ``aclose``, which the store calls
on exit, so a stack leaves nothing behind on a shared engine.
"""

from __future__ import annotations

import asyncio
import importlib
from contextlib import AbstractAsyncContextManager
from typing import Any

from .stacks import IndexFactory, StackContext, open_engine_stack, open_valkey
from .tiered import TieredMemoryStore
from .tiers import VectorIndex

__all__ = ["open_milvus", "open_milvus_server", "open_qdrant", "open_qdrant_edge", "open_redis",
           "open_redis_search", "open_valkey"]

Stack = AbstractAsyncContextManager[TieredMemoryStore]


async def _url(ctx: StackContext, engine: str) -> str:
    return str(await asyncio.to_thread(ctx.provider.url, engine))


def _index_on(engine: str, module: str, cls: str, *, pooled: bool = False) -> IndexFactory:
    """An index factory: class ``cls`` of ``adapters/indexes/<module>.py`` on ``engine``.

    Every index takes the same arguments, so one factory serves all stacks; the
    module is imported only when a store opens, so a missing client library
    affects only its own stack. For qdrant-edge the "URL" is a directory under
    the provider's own, which the provider removes even when this process is killed.
    ``pooled``: the module's ``pool_for(provider, url, dim)`` lends the index an empty
    collection that earlier stores of the provider gave back (a Milvus server takes
    seconds to load a new one); a reopened namespace keeps its own. Not Milvus Lite:
    it creates collections in milliseconds, and searches a reused one's deleted rows
    one by one (its model test ran 16 s unpooled, 26 s pooled).
    """

    async def make(ctx: StackContext) -> VectorIndex:
        index_module = importlib.import_module(f".indexes.{module}", __package__)
        url = await _url(ctx, engine)
        extra = ({"pool": index_module.pool_for(ctx.provider, url, ctx.dim)}
                 if pooled and not ctx.reuse else {})
        index: VectorIndex = getattr(index_module, cls)(
            url, namespace=ctx.namespace, dim=ctx.dim, timeout=ctx.timeout, reuse=ctx.reuse,
            **extra)
        await index.create()  # type: ignore[attr-defined]
        return index

    return make


_qdrant = _index_on("qdrant", "qdrant", "QdrantIndex")
_qdrant_edge = _index_on("qdrant-edge", "qdrant_edge", "QdrantEdgeIndex")
_milvus = _index_on("milvus", "milvus", "MilvusIndex")
_milvus_server = _index_on("milvus-server", "milvus", "MilvusIndex", pooled=True)
_redis_vsets = _index_on("redis", "redis_vsets", "RedisVsetIndex")
_redis_search = _index_on("redis-search", "redis_search", "RedisSearchIndex")


def open_qdrant(*, provider: Any = None, **kw: Any) -> Stack:
    """``qdrant``: Qdrant via AsyncQdrantClient (embedded local mode, or a server URL)."""
    return open_engine_stack(_qdrant, provider=provider, engines=("qdrant",), **kw)


def open_qdrant_edge(*, provider: Any = None, **kw: Any) -> Stack:
    """``qdrant-edge``: the Qdrant Edge engine in-process."""
    return open_engine_stack(_qdrant_edge, provider=provider, engines=("qdrant-edge",), **kw)


def open_milvus(*, provider: Any = None, **kw: Any) -> Stack:
    """``milvus``: Milvus via pymilvus (Milvus Lite embedded, or a server URI)."""
    return open_engine_stack(_milvus, provider=provider, engines=("milvus",), **kw)


def open_milvus_server(*, provider: Any = None, **kw: Any) -> Stack:
    """``milvus-server``: the same MilvusIndex, on a Milvus server over gRPC (never Lite)."""
    return open_engine_stack(_milvus_server, provider=provider, engines=("milvus-server",), **kw)


def open_redis(*, provider: Any = None, **kw: Any) -> Stack:
    """``redis``: Redis 8 log and Redis 8 vector sets in the same server."""
    return open_engine_stack(_redis_vsets, provider=provider, log_engine="redis", **kw)


def open_redis_search(*, provider: Any = None, **kw: Any) -> Stack:
    """``redis-search``: the Redis query engine (RediSearch; embedded, Docker or a URL)."""
    return open_engine_stack(_redis_search, provider=provider, engines=("redis-search",), **kw)
