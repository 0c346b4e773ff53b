"""Partial failures beside a workload: faults on one engine at a time, healed, then judged.

Cancellation at an await (``test_interruption``) cannot make a write that the
engine applied while the client never heard back; only a fault on the wire or in
the engine can. :class:`Faults` is a ``workload.During``: while the seeded clients
of ``workload.run`` call the store, it starts one fault at a time on one engine
(through a composed nemesis of fault parts, ``base.py``), holds it until calls have run
into it (or a bound passes), heals it, and waits for acknowledged calls again
before the next one. Each fault is a ``note`` in the history and a :class:`Window`
here, so a failure can say which fault was active during the calls that prove it.

Every call that raised while this went on is indeterminate (Jepsen's ``info``):
the checkers hold only acknowledged calls to guarantees 1-9. Once the faults are
over, :meth:`Faults.answers_again` holds the store to G10's last sentence: a
failed call never wedges the store, so after ``recover()`` (where the store has
it) every user can be read and written again within ``settings.op_timeout``.
The quiescent phase that follows judges G11 as in every concurrency round.

How long a fault is held is progress-driven, not timed to the store: a lost reply
lasts until the proxy has swallowed a reply and three calls have completed since it
began (each open connection loses one reply; a lost reply that swallowed none, because
the calls went to other engines or to connections opened since, faulted nothing), a
refusal until three calls completed, a stall as long as the store's own timeout says a
call may take (past it, when the store declares one of at most 2 s), latency until
ten calls ran through it; every hold is bounded, so a store that stops calling
does not stop the test.

A fault counts only if it hit (issue 47): a lost reply swallowed a reply, a refusal
refused a connection, a stall held a call's bytes, latency delayed one, a pause had a
call reach the store while it held. A fault that has not hit when its bound passes is
held on, up to ``settings.op_timeout``; one that still hit nothing ends the round,
which is then *not exercised* (:attr:`Faults.not_exercised` says why), and the test
reports it by name rather than counting it as a pass.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from nomnesia.adapters.engines import EmbeddedProvider, EngineControl
from nomnesia.adapters.engines.toxics.latency import Latency
from nomnesia.adapters.engines.toxics.lost_reply import LostReply
from nomnesia.adapters.engines.toxics.refuse import Refuse
from nomnesia.adapters.engines.toxics.stall import Stall

from ..contract import Guarantee
from ..core.checker import Anomaly
from ..core.history import History, Op
from ..core.recorder import LoggedStore
from ..core.settings import settings
from .base import FaultPart, Nemesis
from .process import PausePart
from .wire import WirePart

__all__ = ["ACK_BOUND", "Faults", "Window", "active_during", "session_nemesis"]

_HIT = {LostReply.name: 3, Refuse.name: 3, Latency.name: 10}
"""Calls that must complete after a fault began before it is healed (or its bound passes)."""
_BOUND = {LostReply.name: 0.5, Refuse.name: 0.3, Latency.name: 0.5, PausePart.fs[0]: 0.3}
"""Seconds a fault is held at most (a stall: see ``Faults.stall_hold``)."""
_EFFECT = {LostReply.name: ("reply lost", "replies lost"),
           Refuse.name: ("connection refused", "connections refused"),
           Stall.name: ("request held", "requests held"),
           Latency.name: ("chunk delayed", "chunks delayed")}
"""How a fault's ``hits`` read in its window and the history (faults the nemesis counts)."""
_WEIGHT = {LostReply.name: 3}
"""How often each fault is drawn, relative to 1: a reply lost after the write landed is
the fault only the wire can cause, and the one a retrying client turns into a duplicate."""
_ACKED_BETWEEN = 5
"""Acknowledged calls between two faults: the store must have come back before the next."""
ACK_BOUND = 3.0
"""Seconds to wait for them; a store still failing then meets the next fault anyway, and
``answers_again`` judges it at the end."""


@dataclass(frozen=True)
class Window:
    """One fault: what, on which engine, from when to when (the histories' monotonic ns)."""

    fault: str
    engine: str
    start_ns: int
    end_ns: int
    effect: str = ""
    """What the fault visibly did, where the nemesis can tell (``2 replies lost``)."""
    hit: bool = True
    """Whether the fault did anything: a fault that hit nothing proves nothing."""

    def describe(self, t0_ns: int) -> str:
        effect = f" ({self.effect})" if self.effect else ""
        return (f"{self.fault} on {self.engine}{effect} from "
                f"{(self.start_ns - t0_ns) / 1e9:.3f} s to {(self.end_ns - t0_ns) / 1e9:.3f} s")


@dataclass
class Faults:
    """Faults on ``engine`` beside the load, ``count`` of them, drawn from ``rng``."""

    nemesis: Nemesis
    engine: str
    rng: random.Random
    count: int = 12
    stall_hold: float = 0.5
    windows: list[Window] = field(default_factory=list)
    unexercised: bool = False
    """Set when the store acknowledged no append or read before the first fault: nothing
    was faulted."""
    missed: str = ""
    """Set when a fault hit nothing within ``settings.op_timeout``: the store made no call
    through the engine, and the round ended there."""
    traffic: Callable[[], int] | None = None
    """Request chunks sent through the engine's proxy so far: a fault whose part counts
    nothing (a pause) hit only if traffic reached the engine while it held."""
    answered: set[str] = field(default_factory=set)
    """The calls (``append``, ``read`` ...) the store acknowledged before the first fault:
    only those are held to answering again after the last heal."""

    async def __call__(self, store: LoggedStore, workload: Any, stop: asyncio.Event,
                       load: asyncio.Future[Any]) -> list[Anomaly]:
        log = store.log
        kinds = self.nemesis.faults_for(self.engine)
        # The store must first answer without a fault: one that never does is failing for
        # a reason the other tests report, and whatever it raises later is not the faults'.
        await _until(log, 0, _ACKED_BETWEEN, ACK_BOUND, load, ok_only=True)
        self.answered = {op.f for op in log.ops if op.type == "ok"}
        if not {"append", "read"} & self.answered:
            self.unexercised = True
            stop.set()
            await load
            return []
        try:
            for _ in range(self.count):
                if load.done() or not kinds or self.missed:
                    break
                f = self.rng.choices(kinds, [_WEIGHT.get(k, 1) for k in kinds])[0]
                await self._one(log, f, load)
        finally:
            await self.nemesis.heal([self.engine])
            stop.set()
        await load
        return await self.answers_again(store, workload)

    async def _one(self, log: History, f: str, load: asyncio.Future[Any]) -> None:
        mark = len(log)
        before = self.nemesis.hits(f, self.engine)
        sent = self.traffic() if self.traffic is not None else 0
        what = (await self.nemesis.start(f, self.engine, self.rng)).what
        started = time.monotonic_ns()
        log.note(f"fault: {what} on {self.engine}")

        def hit() -> int:
            return (self.nemesis.hits(f, self.engine) or 0) - (before or 0)

        def proved() -> bool:
            """The fault did something: counted by its part, else traffic reached the
            engine while it held (a paused engine holds every call that reaches it)."""
            if before is not None:
                return hit() > 0
            if self.traffic is not None:
                return self.traffic() > sent
            return _invoked(log, mark) > 0

        try:
            if f == Stall.name:
                await _until(log, mark, None, self.stall_hold, load)
            else:
                await _until(log, mark, _HIT.get(f), _BOUND.get(f, 0.3), load,
                             hit=None if before is None else lambda: hit() > 0)
            if not proved():  # held on until it hits, bounded: never counted unproved
                await _until_true(proved, settings.op_timeout, load)
        finally:
            await self.nemesis.heal([self.engine])
            ended = time.monotonic_ns()
            effect = "" if before is None else _effect(f, hit())
            did = proved()
            if not did and not load.done():
                flowed = self.traffic is not None and self.traffic() > sent
                why = (f"requests reached {self.engine} meanwhile, none of them where it "
                       f"could hit (a lost reply is lost on a connection open when it was "
                       f"set; a store that connects per call opens each one after)"
                       if flowed else f"the store made no call through {self.engine} "
                                      f"while it held")
                self.missed = (f"{what} on {self.engine} hit nothing within "
                               f"{settings.op_timeout:g} s (--nomnesia-op-timeout): {why}")
            log.note(f"healed: {what} on {self.engine}" + (f" ({effect})" if effect else "")
                     + ("" if did else " (hit nothing)"))
            self.windows.append(Window(what, self.engine, started, ended, effect, did))
        await _until(log, len(log), _ACKED_BETWEEN, ACK_BOUND, load, ok_only=True)

    async def answers_again(self, store: LoggedStore, workload: Any) -> list[Anomaly]:
        """G10: with every fault healed, each user is read and written again, within a bound.

        A pooled connection that a fault cut may fail the first call after the heal;
        what G10 forbids is a store that keeps failing (a lock or transaction left
        open, a client that never reconnects), so each call is tried until it is
        acknowledged or ``settings.op_timeout`` passes.
        """
        client = store.client(workload.processes + 1)
        bound = settings.op_timeout
        calls: list[tuple[str, Any]] = []
        if client.can("recover"):
            calls.append(("recover()", client.recover))
        for n, user in enumerate(workload.users):
            def read(user: str = user) -> Any:
                return client.get_history(user, 10)

            def append(user: str = user, n: int = n) -> Any:
                return client.append_message(user, "user", f"after the heal {n} {user}")

            # A call that failed before any fault too is not the faults' to answer for.
            calls += [(f"get_history({user!r})", read)] if "read" in self.answered else []
            calls += [(f"append_message({user!r})", append)] if "append" in self.answered \
                else []
        for what, call in calls:
            mark = len(store.log)
            deadline = time.monotonic() + bound
            error: BaseException | None = None
            while True:
                try:
                    await asyncio.wait_for(call(), bound)
                    error = None
                    break
                except (asyncio.TimeoutError, Exception) as exc:
                    error = exc
                if time.monotonic() >= deadline:
                    break
                await asyncio.sleep(0.05)  # bounded retry: the store reconnects, or it is wedged
            if error is not None:
                tried = [op for op in store.log.ops[mark:] if op.f != "note"]
                return [Anomaly(
                    Guarantee.INTERRUPTION,
                    f"every fault had healed, yet {what} kept failing for {bound:g} s "
                    f"({type(error).__name__}: {error}): a failed call must never wedge "
                    "the store", tried[-4:], kind="wedged")]
        return []


async def _until(log: History, mark: int, calls: int | None, bound: float,
                 load: asyncio.Future[Any], *, ok_only: bool = False,
                 hit: Callable[[], bool] | None = None) -> None:
    """Poll until ``calls`` calls completed after index ``mark`` (ok ones only with
    ``ok_only``) and ``hit()`` holds where given, the load ended, or ``bound`` seconds
    passed; ``calls=None``: the bound."""
    deadline = time.monotonic() + bound
    pause = 0.002
    while time.monotonic() < deadline and not load.done():
        if calls is not None and _completed(log.ops, mark, ok_only) >= calls and (
                hit is None or hit()):
            return
        await asyncio.sleep(pause)  # bounded poll of the history (the fault's hold)
        pause = min(pause * 2, 0.02)


async def _until_true(done: Callable[[], bool], bound: float, load: asyncio.Future[Any]
                      ) -> None:
    """Poll ``done`` until it holds, the load ended, or ``bound`` seconds passed."""
    deadline = time.monotonic() + bound
    pause = 0.002
    while not done() and time.monotonic() < deadline and not load.done():
        await asyncio.sleep(pause)  # bounded poll of the fault's effect
        pause = min(pause * 2, 0.05)


def _invoked(log: History, mark: int) -> int:
    """Store calls begun after index ``mark``, or still in flight from before it."""
    begun = sum(1 for op in log.ops[mark:] if op.type == "invoke" and op.f != "note")
    return begun + len(log.in_flight())


def _effect(f: str, hits: int) -> str:
    one, many = _EFFECT.get(f, ("call hit", "calls hit"))
    return f"{hits} {one if hits == 1 else many}"


def _completed(ops: list[Op], mark: int, ok_only: bool) -> int:
    return sum(1 for op in ops[mark:] if op.f != "note" and op.type != "invoke"
               and (op.type == "ok" or not ok_only))


def active_during(anomaly: Anomaly, windows: Sequence[Window], t0_ns: int) -> str:
    """Which faults were active while the anomaly's calls ran, as one line.

    An anomaly with no calls (G11 at quiescence) or whose calls met no fault gets the
    faults of the whole round: the damage may have been done by any of them.
    """
    times = [op.time for op in anomaly.ops if op.f != "note"]
    hit = [w for w in windows if times and w.start_ns <= max(times) and w.end_ns >= min(times)]
    if hit:
        return "faults active during these calls: " + "; ".join(w.describe(t0_ns) for w in hit)
    if not windows:
        return "no fault was injected in this round"
    shown = "; ".join(w.describe(t0_ns) for w in windows[:6])
    more = f" (and {len(windows) - 6} more)" if len(windows) > 6 else ""
    lead = "no fault was active during these calls; " if times else ""
    return f"{lead}faults of this round: {shown}{more}"


def session_nemesis(scope: Any, provider: Any) -> Nemesis:
    """The nemesis for one faulted scope of the engine session: wire faults on its proxies,
    pauses where the provider is the embedded one (it alone knows its engines' processes)."""
    parts: list[FaultPart] = [WirePart(scope.engines)]
    pausable = sorted(scope.provided)
    if pausable and isinstance(provider, EmbeddedProvider):
        parts.append(PausePart(EngineControl(provider), pausable))
    return Nemesis(parts)
