"""How the tiered store talks to its tiers: bounded calls, embeddings, both tiers written at once.

Its own module because it is the store's plumbing, apart from its policy: what
``tiered.py`` decides (the archive first, an outbox row, when a tier may be
trusted), this carries out against engines that may hang, fail over or answer
late. Every backend call is bounded by the store's timeout (G12) and names its
backend in a failure; a call given up on is tracked until it is over; an append's
log put is sent again through a failover (issue 34.4).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import TypeVar

from tenacity import (
    AsyncRetrying,
    retry_if_exception_type,
    stop_before_delay,
    wait_exponential,
    wait_random,
)

from nomnesia.suite.contract import Entry
from nomnesia.suite.contract.errors import BackendTimeout, BackendUnavailable, MemoryStoreError

from .abandoned import Abandoned
from .text import Embedder
from .tiers import ShortTermLog, StalePrefix, TierDown, TierLost, VectorIndex

__all__ = ["TierIO"]

T = TypeVar("T")

_LOG_RETRY_BUDGET = 0.9
"""Share of the store's timeout an append's log put may spend sending itself again
while the log engine does not answer (``_log_written``): the rest is left, so the put's
own last error, not the store's timeout, is what a caller hears after a long outage."""
_LOG_ATTEMPTS = 4
"""A retry of the log put waits at most timeout / this, the first attempt twice that: a
frozen primary answers nothing until its socket times out, and the promoted one is only
reached by the next attempt's new connection. The first attempt gets more, so that a
log that is only slow (a loaded server, 100 ms of network latency under a 1 s timeout)
is not cancelled and sent again over a new connection, which would only be slower."""



class TierIO:
    """The tier plumbing ``TieredMemoryStore`` inherits; it sets every attribute below."""

    log: ShortTermLog
    index: VectorIndex
    timeout: float
    _embedder: Embedder
    _embed_in_thread: bool
    _abandoned: Abandoned

    async def _failpoint(self, name: str) -> None:
        """The store's failpoint ``name``: the subclass calls its module's ``failpoint``."""
        raise NotImplementedError

    async def _call(self, backend: str, awaitable: Awaitable[T], *,
                    down_ok: bool = False) -> T:
        """Bound one backend call by the timeout and name the backend in any failure.

        The call runs in a task of its own. On timeout it is cancelled and
        abandoned (not awaited), so a client library's cancel clean-up (psycopg
        may wait seconds for a server-side cancel) cannot stretch the bound of
        G12. When the *caller* is cancelled, the call is left to finish: a
        request already sent can still land on the server after the client
        gave up, e.g. after a ``recover()`` that already looked, and only its
        answer proves the server is done with it (``_settle`` waits for that).
        ``down_ok``: a ``TierDown`` reaches the caller, which serves the read
        elsewhere; otherwise it is the backend's failure (``BackendUnavailable``).
        """
        return await self._outcome(backend, asyncio.ensure_future(awaitable), self.timeout,
                                   down_ok=down_ok)

    async def _outcome(self, backend: str, task: asyncio.Future[T], timeout: float, *,
                       down_ok: bool = False) -> T:
        """Wait up to ``timeout`` for a backend call already running as ``task`` (``_call``).

        One that is over already (the faster of two writes started together) is taken
        as is: ``asyncio.wait`` would still cost a turn of the event loop."""
        if not task.done():
            try:
                await asyncio.wait((task,), timeout=timeout)
            except BaseException:
                # The caller was interrupted, not the backend: let the call finish.
                self._abandoned.add(task, backend)
                raise
        if not task.done():
            self._abandoned.add(task, backend, cancel=True)
            raise BackendTimeout(backend, self.timeout)
        try:
            return task.result()
        except TierDown as exc:
            if down_ok:
                raise
            raise BackendUnavailable(backend, str(exc)) from exc
        except (ValueError, TypeError, MemoryStoreError, StalePrefix, TierLost):
            raise
        except (TimeoutError, asyncio.TimeoutError):  # distinct classes before Python 3.11
            raise BackendTimeout(backend, self.timeout) from None
        except Exception as exc:
            raise BackendUnavailable(backend, f"{type(exc).__name__}: {exc}") from exc

    async def _settle(self) -> None:
        """Wait (bounded) until every abandoned call is over, before a write reads or writes.

        Until then a given-up write may still land, after the write that follows
        it (a put after a forget). Once over, its outcome is fixed and a resync
        sees the truth.
        """
        # Stuck for a whole timeout more (a black-holed connection may never answer):
        # cancelled, so the store can answer again once the engine does.
        stuck = await self._abandoned.wait(self.timeout, cancel_stuck=True)
        if stuck is not None:
            raise BackendTimeout(stuck, self.timeout, "an earlier call is still stuck")

    async def _embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed off the event loop when the embedder says it is slow (``blocking``)."""
        if self._embed_in_thread:
            return await asyncio.to_thread(self._embedder.embed, list(texts))
        return self._embedder.embed(texts)

    async def _embed_beside(self, content: str) -> list[list[float]]:
        """An append's vector, computed while its archive commit is in flight.

        The commit's task was just created; one turn of the event loop lets it send
        its statement, and the embedding (CPU: 0.1 to 0.4 ms for the hashing
        embedder on the bench's machine) then runs while the archive works instead
        of before it, so the append costs archive + max(log, index), where the
        index write includes its vector. Only for the built-in ``HashingEmbedder``
        (``_embed_beside_commit``), which cannot refuse a validated text: an
        embedder that may refuse must do so before the commit, or a refused append
        would be in the archive.
        """
        await asyncio.sleep(0)
        return self._embedder.embed([content])

    async def _vectors(self, entries: Sequence[Entry]) -> list[list[float]]:
        return await self._embed([e.content for e in entries])

    async def _put_tiers(self, entries: Sequence[Entry], vectors: Sequence[Sequence[float]],
                         op: str) -> None:
        """Write the log and the index at once: the append costs archive + max(log, index).

        Both writes are idempotent by entry id and come after the archive commit, whose
        outbox row and ``guard.dirty`` already say that both tiers may be behind, so
        their order does not matter and neither needs the other (seq, the order of
        history, was fixed by the archive). Both are waited for, within one timeout
        from when they started, before anything is raised: a failure of one never
        leaves the other running unseen, and the error raised is the log's if both
        failed, as when they ran one after the other. An interruption (cancellation,
        here or at a failpoint) leaves whichever write still runs to finish in the
        background, tracked as abandoned: ``_settle`` waits for it before the next
        write or ``recover()`` reads the tiers, and the outbox row replays it.
        """
        loop = asyncio.get_running_loop()
        started = loop.time()
        # The index first: its write is the slower one on every stack measured (the
        # bench), so its server's work overlaps the log client's own CPU, not after it.
        index = asyncio.ensure_future(self.index.upsert(entries, vectors))
        log = asyncio.ensure_future(self.log.put(entries))
        writes = ((self.log.name, log, "after_log"), (self.index.name, index, "after_index"))
        failure: Exception | None = None
        for backend, task, point in writes:
            try:
                if task is log:
                    await self._log_written(entries, log, started)
                else:
                    await self._outcome(backend, task,
                                        max(0.0, started + self.timeout - loop.time()))
                await self._failpoint(f"tiered.{op}.{point}")
            except Exception as exc:  # the other write still runs: wait for it first
                failure = failure or exc
            except BaseException:  # interrupted: what still runs is left to finish, tracked
                for other_backend, other, _ in writes:
                    if other is not task:  # a done one is only reaped (its error retrieved)
                        self._abandoned.add(other, other_backend)
                raise
        if failure is not None:
            raise failure

    async def _log_written(self, entries: Sequence[Entry], first: asyncio.Future[None],
                           started: float) -> None:
        """Wait for the log's put ``first`` (started at ``started``); send it again while
        the log's engine does not answer (issue 34.4).

        After the archive commit the entry is durable, and the log is a cache that
        must catch up: during a failover (a Sentinel promoting a replica, a cluster
        shard's replica taking over) the put raises ``TierDown`` until the log's
        client reaches the new primary. Failing the append then would report a
        durable write as failed. So the put is sent again, with growing jittered
        waits (tenacity), until ``_LOG_RETRY_BUDGET`` of the timeout has passed since
        ``started``, each retry bounded by timeout / ``_LOG_ATTEMPTS`` and the first
        attempt by twice that (a frozen primary answers nothing; an attempt given up
        on is cancelled and tracked as abandoned, as any call is, so ``_settle``
        waits for it). Each attempt ends by the budget, so the caller's bound never
        cuts one short.

        A retry is safe because ``put`` is idempotent by entry id, and the archive,
        not the log, assigned seq: nothing is applied twice. A put that never got
        through raises its last failure (``BackendUnavailable`` naming the log, or
        ``BackendTimeout``); an error the engine answered with is raised at once.
        The first attempt needs no retrying machinery (tenacity costs more than a
        log write on loopback), so an append that meets no failover pays nothing.
        """
        loop = asyncio.get_running_loop()
        until = started + self.timeout * _LOG_RETRY_BUDGET

        def bound(share: float) -> float:
            return min(self.timeout * share, max(0.0, until - loop.time()))

        async def attempt(task: asyncio.Future[None] | None = None) -> None:
            if task is not None:  # the first: more time, as the log may only be slow
                await self._outcome(self.log.name, task, bound(2 / _LOG_ATTEMPTS), down_ok=True)
                return
            await self._outcome(self.log.name, asyncio.ensure_future(self.log.put(entries)),
                                bound(1 / _LOG_ATTEMPTS), down_ok=True)

        try:
            try:
                await attempt(first)
                return
            except (TierDown, BackendTimeout):
                if loop.time() >= until:
                    raise
            retrying = AsyncRetrying(
                retry=retry_if_exception_type((TierDown, BackendTimeout)),
                stop=stop_before_delay(max(0.0, until - loop.time())),
                wait=wait_exponential(multiplier=0.02, max=0.25) + wait_random(0, 0.02),
                reraise=True)
            await retrying(attempt)
        except TierDown as exc:
            raise BackendUnavailable(self.log.name, str(exc)) from exc
