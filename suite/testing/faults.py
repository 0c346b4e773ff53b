"""Faults as context managers, on the engines a test got from ``engine_url`` / ``fault_url``.

``with lost_reply("redis"):`` (or ``async with``) holds one fault on one engine for the
block and heals it on exit, whatever the block raised. Each is a fault of the suite's one
fault model (``nomnesia.suite.faults``): the wire faults are ``WirePart``'s toxics on the
engine session's fault proxy, ``pause`` is ``PausePart`` through ``EngineControl``, ``lag``
and ``cut_primary`` are ``LinkPart`` through the provider of a replicated topology. The
partial-failure test and the nemesis compose the same parts; nothing here touches a proxy
or a process itself. Each fault is also a window in every history being recorded
(``record()``): a ``fault: ... on E`` note when it starts, ``healed: ...`` when it ends.

The wire faults need the engine behind the proxy, so the store must take its URL while
faults are armed: open it inside a test that uses the ``nomnesia_fault`` (or
``nomnesia_faultable``) fixture, or inside ``with faultable():``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import random
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import TypeVar

from nomnesia.adapters.engines import EmbeddedProvider, EngineControl
from nomnesia.adapters.engines.session import EngineSession, FaultScope, active_session
from nomnesia.suite.faults import FaultPart, LinkPart, PausePart, Started, WirePart

from .recording import note_all

__all__ = ["FAULT_KINDS", "LINK_KINDS", "WIRE_KINDS", "Fault", "FaultUnavailable",
           "cut_primary", "fault", "faultable", "lag", "latency", "lost_reply", "pause",
           "refuse", "stall"]

T = TypeVar("T")

WIRE_KINDS: tuple[str, ...] = ("lost-reply", "refuse", "stall", "latency")
"""The wire faults (``WirePart.fs``): on the fault proxy in front of an engine."""
LINK_KINDS: tuple[str, ...] = ("lag", "cut-primary")
"""The replication-link faults (``LinkPart.fs``): on a replicated topology's links."""
FAULT_KINDS: tuple[str, ...] = (*WIRE_KINDS, "pause", *LINK_KINDS)
"""Every kind ``fault()`` and the ``nomnesia_fault`` fixture take."""
DEFAULT_MS = {"latency": 100.0, "lag": 300.0}
"""Milliseconds of ``latency`` and ``lag`` when a test does not say."""


class FaultUnavailable(RuntimeError):
    """This fault cannot hit that engine here (not proxied, not started by the suite, not a
    replicated topology); the message says why and what to do. ``nomnesia_fault`` turns it
    into a skip: a kind that does not apply is not a failure of the store."""


def _session() -> EngineSession:
    session = active_session()
    if session is None:
        raise FaultUnavailable("no nomnesia engine session: faults act on engines the suite "
                               "hands out, inside a pytest run with the nomnesia plugin (or "
                               "`with nomnesia.suite.engines.engine_session():`)")
    return session


@contextmanager
def faultable(session: EngineSession | None = None) -> Iterator[FaultScope]:
    """Arm the fault proxy: every ``engine_url``/``fault_url`` asked for inside the block
    comes back behind it, so the wire faults can reach it. Heals everything on exit."""
    with (session or _session()).faulted() as scope:
        yield scope


def _part(kind: str, engine: str, ms: float | None) -> FaultPart:
    """The one part of ``nomnesia.suite.faults`` that handles ``kind`` on ``engine``."""
    session = _session()
    if kind in WIRE_KINDS:
        scope = session.scope
        if scope is None or engine not in scope.engines:
            why = scope.unproxied.get(engine) if scope is not None else None
            raise FaultUnavailable(
                f"{kind} on {engine!r}: " + (f"it is not behind the fault proxy ({why})" if why
                else "the store did not get this engine through the fault proxy: open it "
                "while faults are armed (the nomnesia_fault or nomnesia_faultable fixture, or "
                "`with faultable():`), from engine_url(kind) or fault_url(url, name)"))
        return WirePart({engine: scope.engines[engine]}, latencies=(ms or DEFAULT_MS["latency"],))
    provider = session.provider
    if kind == "pause":
        if not isinstance(provider, EmbeddedProvider) or engine not in session.handed:
            raise FaultUnavailable(f"pause on {engine!r}: only an engine this session started "
                                   "from its embedded engines can be paused (its process is "
                                   "known); run with --backends embedded")
        return PausePart(EngineControl(provider), [engine])
    if kind in LINK_KINDS:
        links = getattr(provider, "link_faults", None)
        if links is None or kind not in links(engine):
            raise FaultUnavailable(f"{kind} on {engine!r}: not a replicated topology whose "
                                   "links the provider can fault (docs/topologies.md)")
        return LinkPart(provider, lags=(ms or DEFAULT_MS["lag"],))
    raise ValueError(f"unknown fault {kind!r}; known: {', '.join(FAULT_KINDS)}")


def _run(coro: Awaitable[T]) -> T:
    """Run a part's coroutine from synchronous code, on a loop of its own.

    A plain ``with`` may stand inside a running loop (a sync helper called from an async
    test): then the coroutine runs on a fresh loop in a worker thread, as the parts' own
    blocking calls do, so the caller's loop is never re-entered.
    """
    async def wrapped() -> T:
        return await coro

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wrapped())
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, wrapped()).result()


class Fault:
    """One fault held on one engine for a ``with`` or ``async with`` block, healed on exit.

    ``started`` says what the part did (``Started.what``: ``latency 100ms``) once entered.
    """

    def __init__(self, kind: str, engine: str, *, ms: float | None = None,
                 seed: int = 0) -> None:
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault {kind!r}; known: {', '.join(FAULT_KINDS)}")
        self.kind = kind
        self.engine = engine
        self.ms = ms
        self._rng = random.Random(seed)
        self._part: FaultPart | None = None
        self.started: Started | None = None

    def __repr__(self) -> str:
        ms = f", ms={self.ms:g}" if self.ms is not None else ""
        return f"Fault({self.kind!r}, {self.engine!r}{ms})"

    async def start(self) -> Started:
        """Start the fault (``async with`` does it); heal with :meth:`heal`."""
        part = self._part = _part(self.kind, self.engine, self.ms)
        try:
            started = self.started = await part.start(self.kind, self.engine, self._rng)
        except BaseException:
            await part.heal(self.engine)  # a start that failed half-way leaves nothing on
            raise
        note_all("start", started.what, self.engine)
        return started

    async def heal(self) -> None:
        """End the fault; safe to call when it never started or is already healed."""
        part, self._part = self._part, None
        if part is None:
            return
        try:
            await part.heal(self.engine)
        finally:
            what = self.started.what if self.started is not None else self.kind
            note_all("end", what, self.engine)

    async def __aenter__(self) -> Fault:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.heal()

    def __enter__(self) -> Fault:
        _run(self.start())
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        _run(self.heal())


def fault(kind: str, engine: str, *, ms: float | None = None) -> Fault:
    """The fault ``kind`` (one of :data:`FAULT_KINDS`) on ``engine``, as a context manager."""
    return Fault(kind, engine, ms=ms)


def lost_reply(engine: str) -> Fault:
    """Each open connection to ``engine`` loses one reply after its request reached it: the
    write landed, the client never heard (the fault only the wire can cause)."""
    return Fault("lost-reply", engine)


def refuse(engine: str) -> Fault:
    """New connections to ``engine`` are refused; open ones carry on."""
    return Fault("refuse", engine)


def stall(engine: str) -> Fault:
    """Bytes to and from ``engine`` stop (a black hole); on heal the stalled connections
    are closed, never resumed with bytes missing."""
    return Fault("stall", engine)


def latency(engine: str, ms: float = DEFAULT_MS["latency"]) -> Fault:
    """Every chunk to ``engine`` is delayed ``ms`` milliseconds."""
    return Fault("latency", engine, ms=ms)


def pause(engine: str) -> Fault:
    """The engine's processes are stopped (SIGSTOP) and continued on exit (SIGCONT)."""
    return Fault("pause", engine)


def lag(engine: str, ms: float = DEFAULT_MS["lag"]) -> Fault:
    """Every replication link of the replicated topology ``engine`` lags ``ms`` ms."""
    return Fault("lag", engine, ms=ms)


def cut_primary(engine: str) -> Fault:
    """The primary of ``engine`` is cut off from its replicas until they promote another
    (over when it starts: the block runs after the promotion); links heal on exit."""
    return Fault("cut-primary", engine)
