"""What every VectorIndex backend shares: derived keys, bounded calls, completeness.

User ids are data. No backend ever sees a user id inside query syntax: each
one filters on a derived key (``user_key``: hex SHA-256, only ``[0-9a-f]``)
or a per-user key name, and checks the stored user id on the way out. That
makes isolation independent of each engine's escaping rules.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Awaitable, Sequence
from typing import Any, Protocol, TypeVar

from nomnesia.adapters.abandoned import Abandoned
from nomnesia.adapters.engines.keys import point_uuid, user_key
from nomnesia.adapters.tiers import TierLost, check_namespace, new_namespace
from nomnesia.suite.contract import Entry
from nomnesia.suite.contract.errors import BackendTimeout, BackendUnavailable, MemoryStoreError

__all__ = [
    "Calls",
    "Completeness",
    "bounded",
    "check_batch",
    "command",
    "point_uuid",
    "user_key",
]

T = TypeVar("T")

# A fixed uuid5 namespace: point ids must be the same in every process.


def check_batch(entries: Sequence[Entry], vectors: Sequence[Sequence[float]], dim: int) -> None:
    if len(entries) != len(vectors):
        raise ValueError(f"{len(entries)} entries but {len(vectors)} vectors")
    for vector in vectors:
        if len(vector) != dim:
            raise ValueError(f"vector of dimension {len(vector)}; the index has {dim}")


async def bounded(backend: str, timeout: float, call: Awaitable[T]) -> T:
    """Await a backend call within ``timeout``; errors name the backend (G12).

    Input errors raised before the call pass through; anything the engine or
    its client raises becomes ``BackendUnavailable``, a silence ``BackendTimeout``.
    """
    try:
        return await asyncio.wait_for(call, timeout)
    except asyncio.TimeoutError as exc:
        raise BackendTimeout(backend, timeout) from exc
    except MemoryStoreError:
        raise
    except Exception as exc:
        raise BackendUnavailable(backend, f"{type(exc).__name__}: {exc}") from exc


async def command(client: Any, *args: Any) -> Any:
    """A raw Redis command (redis-py leaves ``execute_command`` untyped)."""
    return await client.execute_command(*args)


class Calls:
    """Bounded backend calls of one index, in an order the engine cannot reverse.

    A caller may give up on a call (its timeout, or its own cancellation) while
    the request is already on its way: the engine may still apply it, later.
    TieredMemoryStore reads an index to repair it after such a call, so the
    call is shielded and keeps running, and every later call of this index
    first waits (bounded) until the given-up ones are over: a repair never
    reads a state that a late write then changes.
    """

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self._abandoned = Abandoned()

    async def __call__(self, timeout: float, call: Awaitable[T]) -> T:
        try:
            await self.drain(timeout)
        except BaseException:
            if asyncio.iscoroutine(call):
                call.close()
            raise
        task = asyncio.ensure_future(call)
        try:
            return await bounded(self.backend, timeout, asyncio.shield(task))
        except BaseException:
            if not task.done():
                self._abandoned.add(task, self.backend)
            raise

    async def drain(self, timeout: float) -> None:
        """Wait until the calls given up on are over, or raise ``BackendTimeout``."""
        if await self._abandoned.wait(timeout) is not None:
            raise BackendTimeout(self.backend, timeout,
                                 "a call given up on earlier is still running")


class Completeness:
    """``SelfChecking`` for an index that can lose data only with its process or namespace.

    A store that reopens a named namespace (``reuse``) may find the index
    missing, e.g. an in-process engine whose process crashed, or a private temp
    dir: the index is then created empty but not complete, queries raise
    ``TierLost`` and the store's ``recover()`` rebuilds it from the archive.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.complete = True
        self._token: str | None = None

    def check(self) -> None:
        if not self.complete:
            raise TierLost(f"{self.name} was recreated empty for a reopened namespace; "
                           "recover() rebuilds it")

    def begin_rebuild(self) -> str:
        self._token = secrets.token_hex(8)
        return self._token

    def mark_intact(self, token: str) -> bool:
        if token == self._token:
            self.complete = True
        return self.complete


class IndexBase:
    """The settings every index keeps, set one way: namespace, dimension, timeout, reuse.

    ``namespace`` defaults to a fresh one; ``reuse`` means the caller reopens a
    namespace whose data it wants back (keep it on close). ``_calls`` bounds the
    index's backend calls; ``_created`` says whether this index made what it
    drops on close.
    """

    name = "index"

    def __init__(self, *, namespace: str | None, dim: int, timeout: float, reuse: bool) -> None:
        self.namespace = check_namespace(namespace or new_namespace())
        self.dim = dim
        self.timeout = timeout
        self.reuse = reuse
        self._calls = Calls(self.name)
        self._created = False


class SelfCheckingByCompleteness:
    """The ``SelfChecking`` methods of an index that keeps a ``Completeness`` in ``_complete``.

    One mixin instead of the same three delegating methods in every index.
    """

    _complete: Completeness

    async def intact(self) -> bool:
        return self._complete.complete

    async def begin_rebuild(self) -> str:
        return self._complete.begin_rebuild()

    async def mark_intact(self, token: str) -> bool:
        return self._complete.mark_intact(token)


class _Droppable(Protocol):
    timeout: float
    reuse: bool
    _calls: Calls
    _created: bool

    async def drop(self) -> None: ...


async def settle_and_drop(index: _Droppable) -> None:
    """The first half of every index's ``aclose``: let given-up calls land, then drop
    the namespace if this index created it (a reused one is kept for the next open)."""
    with contextlib.suppress(BackendTimeout):
        await index._calls.drain(index.timeout)
    if index._created and not index.reuse:
        await index.drop()
