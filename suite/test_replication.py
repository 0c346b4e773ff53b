"""Replication lag: a store on a replicated topology must read its own writes while replicas lag.

Teams offload reads to replicas; SPEC.md's guarantee 3 has no lag ("a read that
starts after an append returned sees it"), so a store that reads a user's history
from a replica breaks it whenever the replica is behind. On loopback a replica is
almost never behind, so without help a stale read shows only by chance. When the
store got a replicated topology from the suite (``engine_url("redis-sentinel")``,
``"valkey-sentinel"``, ``"redis-cluster"``, ``"postgres-ha"``...), this test delays every
replication link of it (SPEC.md, "Faults": the suite may delay the links between members),
leaving the store's own connections alone, and runs seeded clients that append
and read. A store that reads from the primary passes; one that reads from a
replica is caught under G3 with the stale read and the append it missed, every run.

Not applicable: a store with no replicated topology from the suite, or one whose
provider cannot delay its links (external servers, Docker).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from nomnesia.adapters.engines.session import active_session

from .base import StoreTests
from .contract import G1, G2, G3, G5, G9
from .core.fresh import Namespace
from .core.loop import suite_test
from .core.notes import not_exercised
from .core.profiles import NOT_APPLICABLE
from .core.recorder import LoggedStore, StoreFactory, opened
from .core.settings import settings
from .core.violations import GuaranteeViolation
from .core.workload import DEFAULT_USERS, Mix, Outcome, Workload, resolve_seed, run

__all__ = ["LAG_MS", "TestReplicationLag"]

LAG_MS = 300.0
"""How late each replication link delivers: longer than a store's round trip on loopback
(so a replica read right after an append misses it), short enough that a store waiting
for its replicas (``WAIT``, a synchronous standby) still answers within its timeout."""
_JUDGED = (G1, G2, G3, G5, G9)
_MIX = Mix(append=0.5, read=0.5, search=0.0, compact=0.0, forget=0.0, message_id=0.0)
"""Appends and reads only, each append a new entry: read-your-writes and order are what a
lagging replica breaks, and a user's entries are then exactly its acknowledged appends."""
_OPS = 240
_lagged_test: Callable[[Callable[..., Coroutine[Any, Any, None]]], Callable[..., None]] = \
    suite_test(timeout="fault_timeout")
CATCH_UP_S = 10.0
"""After the heal, how long each user's whole history may take to show every acknowledged
append (a replica catching up); a store still missing one then has lost it (G1)."""



class TestReplicationLag(StoreTests):
    """Read-your-writes and order with every replication link of the store's topology delayed."""

    @pytest.mark.guarantee(*_JUDGED)
    @_lagged_test
    async def test_reads_under_replication_lag(self, store: StoreFactory) -> None:
        """Appends and reads while each replica receives the primary's writes late.

        Troubleshooting: a G3 failure here ("read ... missed the acknowledged
        append") is a read served by a replica (redis-py's ``Sentinel.slave_for``,
        ``target_session_attrs=standby``, a read-only pool): read a user's history
        from the primary, or wait until the replica has the append (Redis ``WAIT``
        gives no read guarantee by itself; PostgreSQL ``remote_apply`` does).
        """
        session = active_session()
        if session is None:
            pytest.skip(f"{NOT_APPLICABLE}: no nomnesia engine session, so no replicated "
                        "topology the suite could delay (docs/faults.md)")
        provider = session.provider
        can = getattr(provider, "link_faults", None)
        seed = resolve_seed(settings.seed)
        lagged: list[str] = []
        outcome: Outcome | None = None
        done: list[str] = []
        with session.faulted() as scope:  # records what the store asks the session for
            async with opened(store) as opened_store:
                with contextlib.suppress(Exception):  # a lazy store connects on first use
                    await opened_store.get_history(
                        f"{Namespace.new().user('probe')}:{DEFAULT_USERS[0]}", 1)
                asked = sorted(scope.unproxied)
                lagged = [t for t in asked if callable(can) and "lag" in can(t)]
                if not lagged:
                    pytest.skip(_not_applicable(asked, provider))
                workload = Workload(seed=seed, ops=_OPS, processes=4, mix=_MIX)
                ids = Namespace.new()
                lag = _Lagged(provider, lagged, done)
                outcome = await run(opened_store, workload, during=lag, ids=ids)
                await LoggedStore(opened_store, ids=ids).clean_up()
        if outcome is None:  # run() always returns; here for the type checker only
            raise RuntimeError("the lagged round returned no outcome")
        if not outcome:
            raise _violation(outcome, done, seed)
        if not _acked_while_lagged(outcome):  # the lag delayed nothing the store wrote
            not_exercised(f"replication lag on {', '.join(lagged)}: no append was "
                          "acknowledged while the links were delayed")


def _acked_while_lagged(outcome: Outcome) -> int:
    """Appends acknowledged between the first fault note and the first heal note."""
    ops = list(outcome.history)
    start = next((op.index for op in ops if op.f == "note" and str(op.value).startswith(
        "fault: ")), None)
    end = next((op.index for op in ops if op.f == "note" and str(op.value).startswith(
        "healed: ")), len(ops))
    if start is None:
        return 0
    return sum(1 for op in ops[start:end] if op.f == "append" and op.type == "ok")


class _Lagged:
    """Beside the load: every link delayed from the first call to the last, then healed,
    then each user's whole history read (recorded) until it shows every acknowledged
    append or ``CATCH_UP_S`` passes, so a read that missed one is told apart as stale (G3:
    the entry reappears) or lost (G1: it never does)."""

    def __init__(self, provider: Any, topologies: list[str], done: list[str]) -> None:
        self.provider, self.topologies, self.done = provider, topologies, done

    async def __call__(self, store: LoggedStore, workload: Workload, stop: asyncio.Event,
                       load: asyncio.Future[Any]) -> list[Any]:
        log = store.log
        try:
            for topology in self.topologies:
                what = await asyncio.to_thread(self.provider.lag_links, topology, LAG_MS)
                self.done.append(what)
                log.note(f"fault: {what}")
            await load
        finally:
            stop.set()
            for topology in self.topologies:
                await asyncio.to_thread(self.provider.heal_links, topology)
                log.note(f"healed: links of {topology}")
        await load
        client = store.client(workload.processes + 1)
        for user in workload.users:
            acked = sum(1 for op in log.ops if op.f == "append" and op.type == "ok"
                        and op.user_id == store.store_user(user))
            deadline = time.monotonic() + CATCH_UP_S
            while True:
                with contextlib.suppress(Exception):  # a failed read is the checker's
                    if len(await client.get_history(user, acked + 1)) >= acked:
                        break
                if time.monotonic() >= deadline:
                    break
                await asyncio.sleep(0.05)  # bounded poll: the replica catches up, or lost it
        return []


def _not_applicable(asked: list[str], provider: Any) -> str:
    replicated = getattr(provider, "can_fail_over", lambda engine: False)
    topologies = [engine for engine in asked if replicated(engine)]
    if topologies:
        return (f"{NOT_APPLICABLE}: the store got {', '.join(topologies)} from the suite, "
                "whose replication links the suite cannot delay (it can on redis-sentinel, "
                "valkey-sentinel, redis-cluster and the postgres-ha pairs)")
    if asked and not callable(getattr(provider, "link_faults", None)):
        return (f"{NOT_APPLICABLE}: the store asked for {', '.join(asked)}, but this "
                "session's engines cannot delay links between members (embedded engines "
                "can; Docker and external servers cannot)")
    return (f"{NOT_APPLICABLE}: the store got no replicated topology from the suite "
            "(engine_url(\"redis-sentinel\"), \"redis-cluster\", \"postgres-ha\"...), so "
            "no replica could be behind; it would judge "
            + ", ".join(str(g) for g in _JUDGED))


def _violation(outcome: Outcome, done: list[str], seed: int) -> GuaranteeViolation:
    """The anomalies, stale reads (G3) first: a replica's lag is what this test causes, so a
    read that missed an append is the diagnosis; the checker calls a miss that no later read
    repaired a loss (G1), and those follow."""
    anomalies = sorted(outcome.anomalies, key=lambda a: a.guarantee is not G3)
    shown = anomalies if settings.anomalies is None else anomalies[:settings.anomalies]
    lines = [str(anomaly) for anomaly in shown]
    if len(outcome.anomalies) > len(shown):
        lines.append(f"... and {len(outcome.anomalies) - len(shown)} more anomalies "
                     "(--nomnesia-anomalies N or all shows more)")
    lines.append(f"during every call: {'; '.join(done)} (the store's own connections "
                 "were not delayed): a read that missed an acknowledged append was served "
                 "by a replica")
    lines.append(outcome.report(0).splitlines()[-2])
    lines.append(f"replay with --nomnesia-seed {seed}")
    guarantee = anomalies[0].guarantee if anomalies else (outcome.guarantee or G3)
    text = "\n".join(lines)
    head = f"{guarantee}: "
    return GuaranteeViolation(guarantee, text[len(head):] if text.startswith(head) else text,
                              anomalies=anomalies, history=outcome.history)
