"""langgraph-checkpoint-redis's ``AsyncRedisStore``, for ``--langgraph-store``.

Each factory returns the library's own object, ``AsyncRedisStore.from_conn_string``
(an async context manager that runs ``setup()``, creating the RediSearch indexes),
on the ``redis-search`` engine (Redis 8.2 with RediSearch and RedisJSON, which the
store needs: it keeps items as JSON documents and lists them with ``FT.SEARCH``).
The suite's mapping (``nomnesia.suite.interfaces.langgraph``) does the rest; nothing
is added that the library lacks.

- :func:`store`: no index, so the ``history`` profile;
- :func:`indexed_store`: an index over the ``content`` field, embedded by the
  project's deterministic hashing embedder (no network, no model), so the
  ``memory`` profile.

Every store gets fresh key prefixes (``store_prefix``, ``vector_prefix``, which
also name the RediSearch indexes), so it starts empty; its indexes and keys are
dropped when the store closes, so one Redis serves a whole run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from langgraph.store.redis import AsyncRedisStore

from ._common import DIM, embedder
from ._engines import namespace, url

__all__ = ["INDEX", "indexed_store", "store"]


def _embed(texts: Sequence[str]) -> list[list[float]]:
    return embedder().embed(texts)


INDEX: dict[str, Any] = {"dims": DIM, "embed": _embed, "fields": ["content"]}
"""The index of :func:`indexed_store`: the ``content`` field, embedded locally."""


@asynccontextmanager
async def _open(index: dict[str, Any] | None) -> AsyncIterator[AsyncRedisStore]:
    """The library's ``from_conn_string`` under fresh prefixes; its indexes and keys are
    dropped afterwards (``delete=True``), as a test fixture would."""
    prefix = namespace("nomnesia_lg")
    async with AsyncRedisStore.from_conn_string(
            url("redis-search"), index=index,  # type: ignore[arg-type, unused-ignore]
            store_prefix=f"{prefix}_store", vector_prefix=f"{prefix}_vectors") as made:
        try:
            yield made
        finally:
            await made.store_index.delete(drop=True)
            if made.index_config:
                await made.vector_index.delete(drop=True)


def store() -> Any:
    """``--langgraph-store nomnesia.adapters.ecosystem.langgraph_redis:store``: no index."""
    return _open(None)


def indexed_store() -> Any:
    """``--langgraph-store ...langgraph_redis:indexed_store``: an index over ``content``."""
    return _open(INDEX)
