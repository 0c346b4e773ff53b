"""Stack factories: a TieredMemoryStore on engines, in a namespace of its own.

Every built-in stack is the PostgreSQL archive + a Redis/Valkey short-term log
+ some vector index; only the index differs. So a stack module writes one
``make_index(ctx)`` and calls ``open_engine_stack``; engines, namespace,
archive, log and the cleanup that leaves nothing behind live here once.
docs/adapters.md says how to add a stack.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

from .text import Embedder, HashingEmbedder, Summarizer
from .tiered import TieredMemoryStore
from .tiers import ArchiveTier, ShortTermLog, VectorIndex, check_namespace, new_namespace

__all__ = ["IndexFactory", "StackContext", "drop_kept_namespace", "open_engine_stack",
           "open_pgvector", "open_stack", "open_valkey"]

@dataclass
class StackContext:
    """What an index factory gets: engines, a fresh namespace, the store's settings."""

    provider: Any
    namespace: str
    """``nm_<16 hex>``: safe as a collection, table, schema or key-prefix name."""
    dim: int
    timeout: float
    cleanup: AsyncExitStack
    """Push callbacks that drop what the index created; run after the store closes."""
    pool: Any = None
    """The PostgreSQL pool of the archive (``psycopg_pool.AsyncConnectionPool``)."""
    reuse: bool = False
    """The caller named the namespace to reopen its data: keep existing collections,
    and do not drop them on close."""


IndexFactory = Callable[[StackContext], Awaitable[VectorIndex]]


@asynccontextmanager
async def open_stack(*, log: ShortTermLog, index: VectorIndex, archive: ArchiveTier,
                     keep_last: int = 4, embedder: Embedder | None = None,
                     summarizer: Summarizer | None = None, timeout: float = 5.0,
                     history_from_log: bool = True) -> AsyncIterator[TieredMemoryStore]:
    """A TieredMemoryStore over tiers you built; they are closed on exit."""
    store = TieredMemoryStore(log=log, index=index, archive=archive, keep_last=keep_last,
                              embedder=embedder, summarizer=summarizer, timeout=timeout,
                              history_from_log=history_from_log)
    try:
        await store.recover()
        yield store
    finally:
        await store.aclose()


async def _pgvector_index(ctx: StackContext) -> VectorIndex:
    from .indexes.pgvector import PgVectorIndex

    index = PgVectorIndex(ctx.pool, namespace=ctx.namespace, dim=ctx.dim, timeout=ctx.timeout,
                          reuse=ctx.reuse)
    await index.create()
    return index


@asynccontextmanager
async def open_engine_stack(make_index: IndexFactory | None = None, *, provider: Any = None,
                            log_engine: str = "redis", engines: Sequence[str] | None = None,
                            keep_last: int = 4, embedder: Embedder | None = None,
                            summarizer: Summarizer | None = None, timeout: float = 5.0,
                            history_from_log: bool = True, pool_size: int = 8,
                            namespace: str | None = None, shared: bool = False,
                            backends: str | None = None) -> AsyncIterator[TieredMemoryStore]:
    """PostgreSQL archive + ``log_engine`` log + ``make_index(ctx)`` (default pgvector).

    With ``provider=None`` the stack starts its own engines from
    ``get_provider(backends)`` (``"embedded"``, ``"docker"``, ``"external"`` or
    ``"auto"``; default ``NOMNESIA_BACKENDS``, else auto) and stops them on
    exit; with a provider it only creates (and on exit drops) its namespace.
    Pass ``namespace`` (``nm_...``) to reopen data on servers that outlive the
    store: it is created if missing, kept on exit, and ``recover()`` runs on
    open to finish whatever a crashed process left in the outbox. Pass
    ``shared=True`` when other processes (replicas) open the same namespace.
    """
    from .postgres import PostgresArchive, create_pool, drop_schema
    from .redis_log import RedisLog, drop_namespace

    if log_engine not in ("redis", "valkey"):
        raise ValueError(f"log_engine must be 'redis' or 'valkey', not {log_engine!r}")
    embedder = embedder or HashingEmbedder()
    needed = tuple(dict.fromkeys(("postgres", log_engine, *(engines or ()))))
    reuse = namespace is not None
    namespace = check_namespace(namespace if namespace is not None else new_namespace())
    async with AsyncExitStack() as outer:
        if provider is None:
            from .engines import get_provider

            provider = get_provider(backends)
            outer.push_async_callback(asyncio.to_thread, provider.close)
        urls: dict[str, str] = await asyncio.to_thread(provider.urls, *needed)
        pool = await create_pool(urls["postgres"], max_size=pool_size, timeout=timeout,
                                 application_name=namespace)
        outer.push_async_callback(pool.close)
        archive = PostgresArchive(pool, namespace)
        await archive.create(reuse=reuse)
        if not reuse:
            outer.push_async_callback(drop_schema, pool, namespace)
            outer.push_async_callback(drop_namespace, urls[log_engine], namespace,
                                      timeout=timeout, name=log_engine)
        log = RedisLog(urls[log_engine], namespace, name=log_engine, timeout=timeout)
        outer.push_async_callback(log.aclose)
        ctx = StackContext(provider, namespace, embedder.dim, timeout,
                           await outer.enter_async_context(AsyncExitStack()), pool, reuse)
        index = await (make_index or _pgvector_index)(ctx)
        try:
            store = TieredMemoryStore(log=log, index=index, archive=archive,
                                      keep_last=keep_last, embedder=embedder,
                                      summarizer=summarizer, timeout=timeout,
                                      history_from_log=history_from_log, shared=shared)
        except BaseException:
            await index.aclose()
            raise
        outer.push_async_callback(store.aclose)  # closes archive, log and index
        await store.recover()  # a reopened namespace: finish crashed writes; vouch for the log
        yield store


async def drop_kept_namespace(urls: Mapping[str, str], namespace: str, *,
                              timeout: float = 5.0) -> None:
    """Remove what stacks opened with ``namespace=`` keep on exit, when done with it.

    Covers PostgreSQL (archive, pgvector) and every ``redis``/``valkey`` URL given
    (log, vector sets); not Qdrant or Milvus collections. Each engine is tried even
    after another failed (an engine a fault left broken), and the first failure is
    raised at the end.
    """
    from .postgres import create_pool, drop_schema
    from .redis_log import drop_namespace

    errors: list[Exception] = []
    if "postgres" in urls:
        try:
            pool = await create_pool(urls["postgres"], max_size=1, timeout=timeout)
            try:
                await drop_schema(pool, namespace)
            finally:
                await pool.close()
        except Exception as exc:
            errors.append(exc)
    for engine in ("redis", "valkey"):
        if engine in urls:
            try:
                await drop_namespace(urls[engine], namespace, timeout=timeout, name=engine)
            except Exception as exc:
                errors.append(exc)
    if errors:
        raise errors[0]


def open_pgvector(*, provider: Any = None, keep_last: int = 4,
                  **kw: Any) -> AbstractAsyncContextManager[TieredMemoryStore]:
    """The ``pgvector`` stack: Redis log + pgvector index + PostgreSQL archive."""
    return open_engine_stack(None, provider=provider, log_engine="redis",
                             keep_last=keep_last, **kw)


def open_valkey(*, provider: Any = None, keep_last: int = 4,
                **kw: Any) -> AbstractAsyncContextManager[TieredMemoryStore]:
    """The ``valkey`` stack: Valkey log + pgvector index + PostgreSQL archive."""
    return open_engine_stack(None, provider=provider, log_engine="valkey",
                             keep_last=keep_last, **kw)
