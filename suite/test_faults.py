"""Partial failures: the suite faults every engine it handed the store, one at a time.

The seed's own story is a partial failure: Redis acknowledged the write, the
other store stayed empty, and no hand-run check saw it. A store that got its
engines from the suite (``engine_url``, the ``nomnesia_engines`` fixture, the
built-in stacks, or its own URL passed through ``fault_url``) is opened here
with every engine behind the suite's fault proxy. Then, for each engine in turn,
seeded clients call the store while the suite loses replies after the request
landed, refuses and resets connections, stalls them, delays them and pauses the
engine process; it heals each fault before the next (docs/faults.md).

What is judged: every acknowledged call, as in the concurrency tests (G1-G9);
every call that raised is indeterminate and may have taken effect once or not at
all (G10); after the last heal the store must answer every user again, reads and
writes (G10: a failed call never wedges the store), and be consistent once
quiescent (G11). A failure names the guarantee, the engine and the faults that
were active during the calls that prove it, with the seed that replays the
faults' choices.

A store that got no engine from the suite is *not applicable*: the suite never
faults what a store reached on its own (SPEC.md, "Faults").
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Coroutine
from functools import partial
from typing import Any

import pytest

from nomnesia.adapters.engines.session import active_session

from .base import StoreTests
from .contract import G1, G2, G3, G4, G5, G6, G7, G8, G9, G10, G11
from .core.fresh import Namespace
from .core.loop import suite_test
from .core.notes import not_exercised
from .core.profiles import NOT_APPLICABLE
from .core.recorder import LoggedStore, StoreFactory, opened
from .core.settings import settings
from .core.violations import GuaranteeViolation
from .core.workload import DEFAULT_USERS, Mix, Outcome, Workload, resolve_seed, run
from .faults.during import ACK_BOUND, Faults, active_during, session_nemesis

__all__ = ["TestPartialFailures"]

_JUDGED = (G1, G2, G3, G4, G5, G6, G7, G8, G9, G10, G11)
_MIX = Mix(append=0.55, read=0.35, search=0.05, compact=0.03, forget=0.02)
"""Mostly appends and reads: a lost reply matters most on a write, and reads show it
(a compaction soon after would cover a duplicate before any read saw it)."""
_faulted: Callable[[Callable[..., Coroutine[Any, Any, None]]], Callable[..., None]] = \
    suite_test(timeout="fault_timeout")
_OPS = 5_000
"""A cap; the faults stop the load after their last heal, long before it."""



def _timeout_of(store: Any) -> float | None:
    for obj in (store, getattr(store, "inner", None)):
        value = getattr(obj, "timeout", None)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return float(value)
    return None


class TestPartialFailures(StoreTests):
    """Faults on each engine the store got from the suite, under concurrent load."""

    @pytest.mark.guarantee(*_JUDGED)
    @_faulted
    async def test_partial_failures_on_each_engine(self, store: StoreFactory) -> None:
        """Lost replies, refused, stalled and slow connections and paused engines, healed.

        Troubleshooting: a duplicate after a lost reply (G2) is a client that
        resends a write it cannot know failed (redis-py retries by default; make the
        write idempotent or turn retries off); a store inconsistent at quiescence
        (G11) after a lost reply undid a write the engine had committed (a
        compensation that trusted the error); G10 "kept failing" is a transaction,
        lock or pool left broken by the failed call. The message lists the faults
        active during the calls shown.
        """
        session = active_session()
        if session is None:
            pytest.skip(f"{NOT_APPLICABLE}: no nomnesia engine session, so no engine the "
                        "suite could fault (docs/faults.md); it would judge "
                        + " ".join(g.name for g in _JUDGED))
        seed = resolve_seed(settings.seed)
        token = Namespace.new().user("probe")  # a user no test wrote: the first read
        failures: list[tuple[str, Outcome, Faults]] = []
        reached: list[str] = []
        tried: list[Faults] = []
        engines: list[str] = []
        closing: BaseException | None = None
        with session.faulted() as scope:
            before = {name: proxy.accepted for name, proxy in scope.proxied.proxies.items()}
            ran = False
            try:
                async with opened(store) as opened_store:
                    engines = await _engines_of(scope, opened_store, token)
                    failures, reached, tried = await _fault_each(
                        session, scope, opened_store, engines, seed, before)
                    ran = True
            except Exception as exc:
                if not ran:
                    raise
                closing = exc  # the store's close, after the faults healed
        if failures:
            raise _violation(failures, closing)
        if closing is not None:
            raise GuaranteeViolation(
                G10, f"every fault had healed and every call had answered, yet closing the "
                f"store raised {type(closing).__name__}: {closing}: a failed call must never "
                "wedge the store (aclose is part of the protocol)") from closing
        if not reached and any(f.unexercised for f in tried):
            pytest.skip(f"the store acknowledged no call within {ACK_BOUND:g} s before the "
                        "first fault, so nothing was faulted (its fault-free failures are the "
                        "other tests' to report)")
        if not reached:
            pytest.skip(f"{NOT_APPLICABLE}: the store asked the suite for "
                        f"{', '.join(engines)} but never connected through the URLs it was "
                        "given while faults were armed (a client kept from another store?), "
                        "so no fault reached it (docs/faults.md)")


async def _engines_of(scope: Any, store: Any, token: str) -> list[str]:
    """The engines the store asked for, after one read: a store that makes its clients on
    first use (one library object per user) asks only then. Not applicable if none."""
    with contextlib.suppress(Exception):  # its answer is judged by the rounds that follow
        await store.get_history(f"{token}:{DEFAULT_USERS[0]}", 1)
    engines = sorted(scope.engines)
    if not engines and scope.unproxied:
        unproxied = "; ".join(f"{name}: {why}" for name, why in sorted(scope.unproxied.items()))
        pytest.skip(f"{NOT_APPLICABLE}: no engine the store got from the suite can go through "
                    f"the fault proxy ({unproxied}); a replicated topology is faulted by the "
                    "nemesis's failovers (docs/faults.md)")
    if not engines:
        pytest.skip(f"{NOT_APPLICABLE}: the store got no engine from the suite "
                    "(engine_url, nomnesia_engines or fault_url), so the suite "
                    "faults nothing it reached on its own (docs/faults.md)")
    return engines


async def _fault_each(session: Any, scope: Any, store: Any, engines: list[str], seed: int,
                      before: dict[str, int]
                      ) -> tuple[list[tuple[str, Outcome, Faults]], list[str], list[Faults]]:
    """One seeded round per engine, faults on that engine only; the failing rounds, the
    engines whose proxy the store really went through, and every round's faults."""
    nemesis = session_nemesis(scope, session.provider)
    timeout = _timeout_of(store)
    stall = timeout + 0.2 if timeout is not None and timeout <= 2.0 else 0.5
    failures: list[tuple[str, Outcome, Faults]] = []
    reached: list[str] = []
    tried: list[Faults] = []
    for n, engine in enumerate(engines):
        workload = Workload(seed=seed * 1000 + n, ops=_OPS, processes=6, mix=_MIX)
        faults = Faults(nemesis, engine, _rng(seed, n), stall_hold=stall,
                        traffic=partial(_requests, scope.engines[engine]))
        ids = Namespace.new()  # fresh users for each round, as every concurrency round has
        outcome = await run(store, workload, during=faults, ids=ids)
        tried.append(faults)
        await LoggedStore(store, ids=ids).clean_up()
        outcome.workload = Workload(seed=seed, ops=_OPS, mix=_MIX)
        if faults.unexercised:  # no fault started: its failures are the other tests'
            not_exercised(f"faults on {engine}: the store acknowledged no call within "
                          f"{ACK_BOUND:g} s, so no fault was started")
            continue
        if not outcome:  # judged whether or not every fault hit: an anomaly is an anomaly
            failures.append((engine, outcome, faults))
        why = faults.missed or ("" if any(w.hit for w in faults.windows)
                                else "no fault hit a call")
        if why:  # named in the run's summary, never a silent pass
            not_exercised(f"faults on {engine}: {why}")
            continue
        if scope.engines[engine].accepted > before.get(engine, 0) or _used(scope, engine):
            reached.append(engine)
    return failures, reached, tried


def _requests(proxy: Any) -> int:
    """Request chunks sent through ``proxy`` so far (a pause hit only if this grew)."""
    return int(proxy.requests)


def _rng(seed: int, n: int) -> Any:
    import random

    return random.Random(f"faults/{seed}/{n}")


def _used(scope: Any, engine: str) -> bool:
    """Whether a connection through ``engine``'s proxy is open (a pool kept from before)."""
    return bool(getattr(scope.engines[engine], "_conns", ()))


def _violation(failures: list[tuple[str, Outcome, Faults]],
               closing: BaseException | None = None) -> GuaranteeViolation:
    """The first failing engine's anomalies, each with the faults active during its calls."""
    engine, outcome, faults = failures[0]
    t0 = min((op.time for op in outcome.history), default=0)
    shown = outcome.anomalies if settings.anomalies is None else \
        outcome.anomalies[:settings.anomalies]
    lines = []
    for anomaly in shown:
        lines += [str(anomaly), "  " + active_during(anomaly, faults.windows, t0)]
    if len(outcome.anomalies) > len(shown):
        lines.append(f"... and {len(outcome.anomalies) - len(shown)} more anomalies "
                     "(--nomnesia-anomalies N or all shows more)")
    lines.append(f"engine {engine}: {len(faults.windows)} faults, "
                 f"{', '.join(sorted({w.fault.split()[0] for w in faults.windows}))}")
    others = [e for e, _, _ in failures[1:]]
    if others:
        lines.append(f"also failing with faults on: {', '.join(others)}")
    lines.append(outcome.report(0).splitlines()[-2])  # history size and the store's bounds
    if closing is not None:
        lines.append(f"then closing the store raised {type(closing).__name__}: {closing}")
    lines.append(f"replay the faults' choices with --nomnesia-seed {outcome.workload.seed}")
    guarantee = outcome.guarantee or G10
    text = "\n".join(lines)
    head = f"{guarantee}: "
    return GuaranteeViolation(guarantee, text[len(head):] if text.startswith(head) else text,
                              anomalies=outcome.anomalies, history=outcome.history)
