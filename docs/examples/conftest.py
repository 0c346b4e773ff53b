"""The store the example runs on, as a team's own conftest would make it.

``NOMNESIA_EXAMPLE_STORE=tiered`` (the default): our TieredMemoryStore, PostgreSQL archive,
Redis log and a RediSearch vector index, every engine from the suite (``engine_url``: the
embedded engines of ``pip install 'nomnesia[embedded,redis,pgvector]'``).
``NOMNESIA_EXAMPLE_STORE=fragile``: the seed's FragileMemoryStore, which keeps its
"vector index" in process; the fault is still held on the index's engine, and the store
fails without its help.

The store is opened inside the test, after ``nomnesia_fault`` armed the fault proxy, so
the engines it reaches are the ones the fault acts on.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import pytest

from nomnesia.adapters.fragile import FragileMemoryStore
from nomnesia.adapters.stacks import open_engine_stack
from nomnesia.suite.engines import engine_url

INDEX_ENGINE = "redis-search"


@pytest.fixture
def index_engine() -> str:
    """The engine of the store's vector index: where the example holds its fault."""
    return INDEX_ENGINE


@pytest.fixture
def open_store(nomnesia_faultable: Any, nomnesia_engines: Any
               ) -> Callable[[], AbstractAsyncContextManager[Any]]:
    """A factory of fresh stores; each is opened on the test's own event loop."""
    which = os.environ.get("NOMNESIA_EXAMPLE_STORE", "tiered")

    @asynccontextmanager
    async def tiered() -> AsyncIterator[Any]:
        # A short timeout: a stalled or paused engine makes a call fail in 1 s (G12).
        async with open_engine_stack("redis-search", provider=nomnesia_engines.routed(),
                                     keep_last=4, timeout=1.0) as store:
            yield store

    @asynccontextmanager
    async def fragile() -> AsyncIterator[Any]:
        engine_url(INDEX_ENGINE)  # handed out (so faultable) though this store never dials it
        yield FragileMemoryStore(keep_last=4)

    return {"tiered": tiered, "fragile": fragile}[which]
