"""Open a stack of the registry: a TieredMemoryStore on engines, in a namespace of its own.

Every built-in stack is the PostgreSQL archive + a Redis/Valkey short-term log
+ some vector index, and a registry row says which (``AdapterSpec.log``,
``index``, ``index_engine``). So ``open_engine_stack(spec)`` opens any of them:
engines, namespace, archive, log, index and the cleanup that leaves nothing
behind live here once. docs/adapters.md says how to add a stack.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from . import lookup
from .engines import get_provider
from .registry import AdapterSpec
from .text import Embedder, HashingEmbedder, Summarizer
from .tiered import TieredMemoryStore
from .tiers import ArchiveTier, ShortTermLog, VectorIndex, check_namespace, new_namespace

__all__ = ["drop_kept_namespace", "open_engine_stack", "open_stack"]


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


def _spec(spec: AdapterSpec | str) -> AdapterSpec:
    found = spec if isinstance(spec, AdapterSpec) else lookup(spec)
    if not found.is_stack:
        raise ValueError(f"adapter {found.name!r} is not an engine stack (it has no index)")
    return found


@asynccontextmanager
async def open_engine_stack(spec: AdapterSpec | str, *,
                            store_cls: type[TieredMemoryStore] = TieredMemoryStore,
                            provider: Any = None, keep_last: int = 4,
                            embedder: Embedder | None = None,
                            summarizer: Summarizer | None = None, timeout: float = 5.0,
                            history_from_log: bool = True, pool_size: int = 8,
                            namespace: str | None = None, shared: bool = False,
                            backends: str | None = None,
                            engine_map: Mapping[str, str] | None = None,
                            ) -> AsyncIterator[TieredMemoryStore]:
    """The stack of registry row ``spec`` (a name or an ``AdapterSpec``), as a ``store_cls``.

    PostgreSQL archive on ``spec.archive`` + ``spec.log`` log + ``spec.index`` on
    ``spec.index_engine``.
    With ``provider=None`` the stack starts its own engines from
    ``get_provider(backends)`` (``"embedded"``, ``"docker"``, ``"external"`` or
    ``"auto"``; default ``NOMNESIA_BACKENDS``, else auto) and stops them on
    exit; with a provider it only creates (and on exit drops) its namespace.
    Pass ``namespace`` (``nm_...``) to reopen data on servers that outlive the
    store: it is created if missing, kept on exit, and ``recover()`` runs on
    open to finish whatever a crashed process left in the outbox. Pass
    ``shared=True`` when other processes (replicas) open the same namespace.
    ``store_cls`` is a TieredMemoryStore subclass taking the same keywords
    (the nemesis's positive control, ``suite/nemesis/broken.py``, is one).
    ``engine_map`` runs a tier on another engine kind of the same family than its
    row says, e.g. ``{"postgres-ha": "postgres-ha-async"}``: the archive of
    ``pgvector-ha`` on the asynchronous pair, a positive control that must lose data.
    """
    spec = _spec(spec)
    index_cls = spec.index_class()  # a missing client fails before any engine starts
    from . import postgres, redis_log  # function-level: psycopg and redis are optional extras

    embedder = embedder or HashingEmbedder()
    reuse = namespace is not None
    namespace = check_namespace(namespace if namespace is not None else new_namespace())
    async with AsyncExitStack() as outer:
        if provider is None:
            provider = get_provider(backends)
            outer.push_async_callback(asyncio.to_thread, provider.close)
        kinds = {engine: (engine_map or {}).get(engine, engine) for engine in spec.engines}
        real = await asyncio.to_thread(provider.urls, *kinds.values())
        urls = {engine: real[kind] for engine, kind in kinds.items()}
        pool = await postgres.create_pool(urls[spec.archive], max_size=pool_size, timeout=timeout,
                                          application_name=namespace)
        outer.push_async_callback(pool.close)
        archive = postgres.PostgresArchive(pool, namespace)
        await archive.create(reuse=reuse)
        if not reuse:
            outer.push_async_callback(postgres.drop_schema, pool, namespace)
            outer.push_async_callback(redis_log.drop_namespace, urls[spec.log], namespace,
                                      timeout=timeout, name=spec.log)
        log = redis_log.RedisLog(urls[spec.log], namespace, name=spec.log, timeout=timeout)
        outer.push_async_callback(log.aclose)
        # An index on an engine the stack already holds a connection to shares it:
        # pgvector gets the archive's pool (one pool per store), the others a URL.
        # An index class that shares state across the provider's stores (a pool of
        # Milvus server collections) is built by its ``for_provider`` instead.
        held: dict[str, Any] = {spec.archive: pool}
        target = held.get(spec.index_engine, urls[spec.index_engine])
        options: dict[str, Any] = {"namespace": namespace, "dim": embedder.dim,
                                   "timeout": timeout, "reuse": reuse}
        for_provider = getattr(index_cls, "for_provider", None)
        built = (for_provider(provider, target, **options) if for_provider is not None
                 else index_cls(target, **options))
        index: VectorIndex = built
        try:
            await built.create()  # every index class has it; the store's protocol does not
            store = store_cls(log=log, index=index, archive=archive, keep_last=keep_last,
                              embedder=embedder, summarizer=summarizer, timeout=timeout,
                              history_from_log=history_from_log, shared=shared)
        except BaseException:
            with contextlib.suppress(Exception):
                await index.aclose()
            raise
        outer.push_async_callback(store.aclose)  # closes archive, log and index
        await store.recover()  # a reopened namespace: finish crashed writes; vouch for the log
        yield store


async def drop_kept_namespace(urls: Mapping[str, str], namespace: str, *,
                              timeout: float = 5.0) -> None:
    """Remove what stacks opened with ``namespace=`` keep on exit, when done with it.

    Covers PostgreSQL (archive, pgvector; ``postgres`` or a replicated kind) and every
    Redis-protocol URL given (log, vector sets; a Sentinel group's or a cluster's too);
    not Qdrant or Milvus collections. Each engine is tried even
    after another failed (an engine a fault left broken), and the first failure is
    raised at the end.
    """
    from . import postgres, redis_log  # function-level: psycopg and redis are optional extras

    errors: list[Exception] = []
    for engine in ("postgres", "postgres-ha", "postgres-ha-async"):
        if engine not in urls:
            continue
        try:
            pool = await postgres.create_pool(urls[engine], max_size=1, timeout=timeout)
            try:
                await postgres.drop_schema(pool, namespace)
            finally:
                await pool.close()
        except Exception as exc:
            errors.append(exc)
    for engine in ("redis", "valkey", "redis-sentinel", "valkey-sentinel", "redis-cluster"):
        if engine in urls:
            try:
                await redis_log.drop_namespace(urls[engine], namespace, timeout=timeout,
                                               name=engine)
            except Exception as exc:
                errors.append(exc)
    if errors:
        raise errors[0]
