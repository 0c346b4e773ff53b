"""Failover faults in the nemesis, and availability per fault kind.

The arithmetic (which call belongs to which fault, how available the store was,
how soon a write was acknowledged again) is checked on synthetic histories whose
answers are known; the fault's plumbing on a real run with a provider whose
``failover`` restarts PostgreSQL; the real thing on ``pgvector-ha``, whose
archive and index sit on the synchronous PostgreSQL pair, and its positive
control on the asynchronous pair, which must lose acknowledged appends.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import pytest

from nomnesia.adapters.engines import EmbeddedProvider
from nomnesia.adapters.engines.postgres_ha import PostgresPair
from nomnesia.suite.core.history import Op, Rec
from nomnesia.suite.nemesis.failover import (
    failover_engines,
    fault_schedule,
    map_engines,
    parse_assignments,
)
from nomnesia.suite.nemesis.report import FaultRecord, NemesisReport, attribute, percentiles
from nomnesia.suite.nemesis.runner import KINDS, NemesisConfig, run_nemesis, stack_kinds

S = 1_000_000_000  # one second on the histories' clock (ns)


# -- which call belongs to which fault -----------------------------------------------------


class _Ops:
    """Builds a history: ``call(process, f, invoked_s, completed_s, type)``, one call at a
    time per process, as the workers make them."""

    def __init__(self) -> None:
        self.events: list[Op] = []
        self.busy: dict[int, list[tuple[float, float]]] = {}

    def call(self, process: int, f: str, invoked: float, completed: float, type_: str) -> None:
        spans = self.busy.setdefault(process, [])
        assert all(completed <= lo or invoked >= hi for lo, hi in spans), "overlapping calls"
        spans.append((invoked, completed))
        value = Rec(f"e{len(self.events)}", 1, "user", (), "ann") if (
            f == "append" and type_ == "ok") else None
        self.events.append(Op(0, process, "invoke", f, "ann", None, int(invoked * S)))
        self.events.append(Op(0, process, type_, f, "ann", value, int(completed * S)))

    def history(self) -> list[Op]:
        ordered = sorted(self.events, key=lambda op: op.time)
        return [Op(i, o.process, o.type, o.f, o.user_id, o.value, o.time)
                for i, o in enumerate(ordered)]


def _fault(kind: str, start: float, **figures: float) -> FaultRecord:
    return FaultRecord(kind, "postgres-ha" if kind == "failover" else "client", "", start, 0.0,
                       started_ns=int(start * S), figures=dict(figures))


def test_each_call_counts_in_the_window_where_it_ended() -> None:
    ops = _Ops()
    ops.call(1, "append", 0.5, 0.6, "ok")  # before any fault: the baseline
    ops.call(2, "read", 0.7, 0.8, "ok")
    ops.call(4, "append", 9.9, 10.5, "ok")  # in flight at the failover: its, not a first write
    # failover at 10 s: two appends fail, a read answers, the first write is acked at 13.0
    ops.call(1, "append", 10.1, 11.1, "info")
    ops.call(2, "read", 10.2, 10.3, "ok")
    ops.call(1, "append", 11.2, 12.2, "info")
    ops.call(3, "append", 12.9, 13.0, "ok")
    ops.call(3, "append", 13.1, 13.2, "fail")  # a refused conflicting retry: answered
    ops.call(1, "append", 19.9, 20.5, "info")  # in flight at the crash: killed with it
    # crash at 20 s: the next window
    ops.call(2, "append", 20.2, 20.25, "ok")
    ops.call(2, "read", 29.0, 29.1, "info")
    ops.call(2, "append", 30.5, 30.6, "ok")  # after the load stopped (the final worker)
    faults = [_fault("failover", 10.0), _fault("crash", 20.0)]
    baseline = attribute(ops.history(), faults, end_ns=30 * S)
    assert baseline == {"attempted": 2, "answered": 2, "appends_attempted": 1,
                        "appends_answered": 1}
    failover, crash = faults
    assert (failover.attempted, failover.answered) == (6, 4)
    assert (failover.appends_attempted, failover.appends_answered) == (5, 3)
    assert failover.first_write_after == 3.0  # from 10.0 to the ack at 13.0
    assert failover.append_answer_s == [0.6, 0.1, 0.1]  # answered ones, invoke to answer
    assert failover.window == 10.0
    assert (crash.attempted, crash.answered) == (3, 1)
    assert (crash.appends_attempted, crash.appends_answered) == (2, 1)
    assert crash.first_write_after == 0.25 and crash.window == 10.0
    assert crash.append_answer_s == [0.05]


def test_a_window_without_an_acknowledged_write_has_no_first_write() -> None:
    ops = _Ops()
    ops.call(1, "append", 1.5, 2.5, "info")
    ops.call(2, "read", 1.6, 1.7, "ok")
    ops.call(1, "append", 2.6, 2.7, "ok")  # the next fault's window, not this one's
    faults = [_fault("failover", 1.0), _fault("failover", 2.55)]
    attribute(ops.history(), faults, end_ns=3 * S)
    assert faults[0].first_write_after is None and faults[0].appends_answered == 0
    assert faults[1].first_write_after == 0.15
    row = _report(faults).availability["failover"]
    assert row["first_write"] == {"p50": 0.15, "max": 0.15, "none": 1}


def test_faults_recorded_out_of_order_get_their_own_windows() -> None:
    ops = _Ops()
    ops.call(1, "append", 5.5, 5.6, "ok")
    ops.call(1, "append", 1.5, 1.6, "ok")
    late, early = _fault("crash", 5.0), _fault("failover", 1.0)
    attribute(ops.history(), [late, early], end_ns=10 * S)
    assert (early.window, early.first_write_after) == (4.0, 0.6)
    assert (late.window, late.first_write_after) == (5.0, 0.6)


def _report(faults: list[FaultRecord]) -> NemesisReport:
    return NemesisReport("pgvector-ha", 7, ["crash", "failover"], faults=faults)


def test_availability_per_kind_adds_up_windows_and_takes_percentiles() -> None:
    ops = _Ops()
    starts = [10.0, 20.0, 30.0, 40.0]
    for n, start in enumerate(starts):  # first writes 1, 2, 3 and 4 s after each start
        ops.call(1, "append", start + 0.5, start + 1.0 + n, "ok")
        ops.call(2, "read", start + 0.1, start + 0.2, "info" if n % 2 else "ok")
    faults = [_fault("failover", s, promoted_s=0.1 * (n + 1), rejoined_s=float(n + 2))
              for n, s in enumerate(starts[:3])] + [_fault("crash", starts[3])]
    report = _report(faults)
    report.baseline = attribute(ops.history(), faults, end_ns=50 * S)
    row = report.availability["failover"]
    assert row["faults"] == 3 and row["window_s"] == 30.0
    assert (row["answered"], row["attempted"], row["availability"]) == (5, 6, 0.8333)
    assert row["first_write"] == {"p50": 2.0, "max": 3.0, "none": 0}
    assert row["append_answer"] == {"p50": 1.5, "max": 2.5}  # each append, invoke to answer
    assert row["promoted_s"] == {"p50": 0.2, "max": 0.3}
    assert row["rejoined_s"] == {"p50": 3.0, "max": 4.0}
    crash = report.availability["crash"]
    assert crash["first_write"]["max"] == 4.0 and "promoted_s" not in crash
    data = json.loads(report.dumps())
    assert data["availability"]["failover"]["write_availability"] == 1.0
    assert data["faults"][0]["first_write_after"] == 1.0
    assert "append_answer_s" not in data["faults"][0]  # summed up, not listed
    text = report.summary()
    assert "failover    3 faults, 30 s: calls 5/6 (83.3%)" in text
    assert "first write p50 2.0 s, max 3.0 s; promoted p50 0.2 s, max 0.3 s" in text
    assert "answered in p50 1.5 s, max 2.5 s" in text
    assert "before faults: calls 0/0 (-)" in text


def test_failovers_are_also_told_apart_by_engine() -> None:
    ops = _Ops()
    ops.call(1, "append", 10.5, 13.0, "ok")  # the pair's failover: first write after 3 s
    ops.call(1, "append", 20.5, 26.0, "ok")  # the Sentinel group's: after 6 s
    pair = _fault("failover", 10.0, rejoined_s=2.5)
    group = _fault("failover", 20.0, rejoined_s=5.5)
    group.target = "redis-sentinel"
    report = _report([pair, group])
    report.baseline = attribute(ops.history(), report.faults, end_ns=30 * S)
    by_engine = report.failover_availability
    assert set(by_engine) == {"failover:postgres-ha", "failover:redis-sentinel"}
    assert by_engine["failover:postgres-ha"]["first_write"]["max"] == 3.0
    assert by_engine["failover:redis-sentinel"]["rejoined_s"] == {"p50": 5.5, "max": 5.5}
    assert report.availability["failover"]["first_write"] == {"p50": 6.0, "max": 6.0,
                                                               "none": 0}
    text = report.summary()
    assert "\n      postgres-ha " in text and "\n      redis-sentinel " in text
    assert "failover:redis-sentinel" in json.loads(report.dumps())["failover_availability"]


def test_percentiles_take_the_upper_median_and_the_max() -> None:
    assert percentiles([3.0, 1.0, 2.0, 10.0]) == {"p50": 3.0, "max": 10.0}
    assert percentiles([]) == {"p50": None, "max": None}


# -- which faults a run draws ----------------------------------------------------------------


def test_failovers_get_a_third_of_a_mixed_run_at_seeded_places() -> None:
    kinds = ("crash", "failover")
    schedule = fault_schedule(kinds, 200, random.Random(1))
    assert schedule is not None and len(schedule) == 200
    assert schedule.count("failover") == 67 >= 50
    assert schedule == fault_schedule(kinds, 200, random.Random(1))
    assert schedule != fault_schedule(kinds, 200, random.Random(2))
    assert schedule[:20].count("failover") not in (0, 20)  # shuffled, not in one block
    five = fault_schedule(("crash", "pause", "kill", "net", "failover"), 200, random.Random(3))
    assert five is not None and five.count("failover") == 67
    assert all(five.count(k) > 20 for k in ("crash", "pause", "kill", "net"))
    assert fault_schedule(("crash", "failover"), 10, random.Random(1), share=0.5
                          ) is not None
    with pytest.raises(ValueError, match="share"):
        fault_schedule(kinds, 10, random.Random(1), share=1.5)


def test_runs_without_failover_draw_as_they_always_did() -> None:
    assert fault_schedule(("crash", "pause", "kill", "net"), 200, random.Random(1)) is None
    assert fault_schedule(("failover",), 10, random.Random(1)) is None


def test_every_kind_means_every_kind_that_applies_to_the_stack() -> None:
    assert stack_kinds(KINDS, networked=True, replicated=False) == (
        "crash", "pause", "kill", "net")
    assert stack_kinds(KINDS, networked=False, replicated=True) == ("crash", "failover")
    assert stack_kinds(KINDS, networked=True, replicated=True) == (
        "crash", "pause", "kill", "net", "failover")
    assert stack_kinds(KINDS, networked=True, replicated=True, linked=True) == KINDS
    assert stack_kinds(("crash", "failover"), networked=False, replicated=True) == (
        "crash", "failover")
    with pytest.raises(ValueError, match="failover needs a replicated engine"):
        stack_kinds(("crash", "failover"), networked=True, replicated=False)
    with pytest.raises(ValueError, match="pause needs a networked engine"):
        stack_kinds(("pause",), networked=False, replicated=True)
    with pytest.raises(ValueError, match="link needs a replicated engine whose links"):
        stack_kinds(("link",), networked=True, replicated=True)


class _AskingProvider:
    """A provider that says itself which engines it can fail over."""

    def __init__(self, replicated: set[str]) -> None:
        self.replicated = replicated

    def can_fail_over(self, engine: str) -> bool:
        return engine in self.replicated

    def failover(self, engine: str) -> dict[str, float]:
        raise AssertionError("discovery must not fail anything over")


def test_discovery_asks_without_failing_anything_over() -> None:
    assert failover_engines(_AskingProvider({"redis-sentinel"}),
                            ("postgres-ha", "redis-sentinel")) == ("redis-sentinel",)
    assert failover_engines(object(), ("postgres-ha",)) == ()  # no failover at all
    provider = EmbeddedProvider()  # starts nothing until asked for a URL
    try:
        assert failover_engines(provider, ("postgres", "redis", "postgres-ha",
                                           "postgres-ha-async")) == (
            "postgres-ha", "postgres-ha-async")
        assert provider.directory is None, "discovery started an engine"
    finally:
        provider.close()


def test_an_engine_map_reads_and_applies() -> None:
    mapping = parse_assignments(" postgres-ha=postgres-ha-async, redis=valkey ,")
    assert mapping == {"postgres-ha": "postgres-ha-async", "redis": "valkey"}
    assert map_engines(("postgres-ha", "redis-sentinel"), mapping) == (
        "postgres-ha-async", "redis-sentinel")
    with pytest.raises(ValueError, match="NAME=VALUE"):
        parse_assignments("postgres-ha")


# -- the fault's plumbing on a real run ----------------------------------------------------


class _RestartingPair:
    """Engines of its own, plus a ``failover`` of PostgreSQL that is a kill and a restart:
    the runner's failover path (thread, figures, windows) on a stack that exists without
    a replicated engine. Everything else is the embedded provider's."""

    def __init__(self) -> None:
        from nomnesia.adapters.engines import EngineControl

        self.inner = EmbeddedProvider()
        self.control = EngineControl(self.inner)
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def can_fail_over(self, engine: str) -> bool:
        return engine == "postgres"

    def failover(self, engine: str, *, freeze: bool = False) -> dict[str, float]:
        self.calls.append(engine + (":freeze" if freeze else ""))
        began = time.monotonic()
        self.control.kill(engine)
        killed = time.monotonic()
        self.control.start(engine)
        return {"promoted_s": round(killed - began, 3),
                "rejoined_s": round(time.monotonic() - began, 3), "failovers": len(self.calls)}

    def close(self) -> None:
        self.control.close()
        self.inner.close()


@pytest.mark.slow  # engines and a failover: nox -s slow
async def test_a_run_with_failover_faults_measures_each_window() -> None:
    """pgvector with a PostgreSQL that "fails over" by restarting: every fault is recorded
    with its figures, every call of the load lands in a window, nothing is lost."""
    provider = _RestartingPair()
    try:
        report = await run_nemesis(NemesisConfig(
            adapter="pgvector", faults=4, kinds=("crash", "failover"), seed=5,
            failover_share=0.5, freeze_share=0.0, log=lambda _: None), provider=provider)
    finally:
        provider.close()
    print(report.summary())
    assert report.passed, report.summary()
    assert report.faults_by_kind == {"crash": 2, "failover": 2}
    assert provider.calls == ["postgres", "postgres"]
    failover = report.availability["failover"]
    assert failover["rejoined_s"]["max"] is not None and failover["faults"] == 2
    assert failover["first_write"]["none"] == 0, report.summary()
    windows = sum(f.attempted for f in report.faults) + report.baseline["attempted"]
    load = sum(report.operations.values())
    assert 0 < windows < load  # the final worker's calls are in no window
    assert report.options["failover_share"] == 0.5
    assert "availability (calls answered / made" in report.summary()


# -- a standby cut off before the failover: the asynchronous pair loses what it acknowledged --


@pytest.mark.slow  # engines and a failover: nox -s slow
@pytest.mark.xdist_group("postgres-ha")
def test_a_detached_async_standby_is_promoted_without_the_acknowledged_row() -> None:
    """What ``--lag`` does before each failover, on the pair alone: the row acknowledged
    after the standby was cut off is gone once the standby is promoted, and the pair can
    fail over again (the rejoined member streams from the new primary)."""
    import psycopg

    from nomnesia.suite.nemesis.failover import detach_standby

    provider = EmbeddedProvider()
    try:
        url = provider.url("postgres-ha-async")
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE TABLE lag_control (x int)")
            conn.execute("INSERT INTO lag_control VALUES (1)")
        pair = provider._parts["postgres-ha-async"]
        assert isinstance(pair, PostgresPair)
        standby_port = pair.members[1].port
        assert detach_standby(url) == f"127.0.0.1:{standby_port}"
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("INSERT INTO lag_control VALUES (2)")  # acknowledged, primary only
        provider.failover("postgres-ha-async")
        with psycopg.connect(url, autocommit=True) as conn:
            rows = [r[0] for r in conn.execute("SELECT x FROM lag_control ORDER BY x")]
            conn.execute("INSERT INTO lag_control VALUES (3)")
        assert rows == [1], f"the promoted standby should lack the acknowledged row: {rows}"
        assert provider.failover("postgres-ha-async")["failovers"] == 2
        with psycopg.connect(url, autocommit=True) as conn:
            assert [r[0] for r in conn.execute("SELECT x FROM lag_control ORDER BY x")] == [1, 3]
        with pytest.raises(ValueError, match="only a PostgreSQL pair"):
            detach_standby("redis://127.0.0.1:1")
    finally:
        provider.close()


# -- whole runs on pgvector-ha (archive and index on the PostgreSQL pair) --------------------


def _seed() -> int:
    import os

    env = os.environ.get("NOMNESIA_SEED", "").strip()
    seed = int(env) if env else random.SystemRandom().randrange(2**32)
    print(f"nemesis seed {seed} (replay with NOMNESIA_SEED={seed})")
    return seed


@pytest.mark.slow  # 25 s measured: 4 failovers, of which a Sentinel one takes ~5 s to settle
@pytest.mark.xdist_group("postgres-ha")
async def test_pgvector_ha_keeps_every_acknowledged_append_through_failovers() -> None:
    """The synchronous pair and the Sentinel group fail over under load (default kinds:
    crash and failover, the stack has no proxied engine); nothing acknowledged is lost."""
    report = await run_nemesis(NemesisConfig(adapter="pgvector-ha", faults=8, seed=_seed(),
                                             failover_share=0.5, log=lambda _: None))
    print(report.summary())
    assert "failover" in report.kinds, f"failover is not among the stack's kinds {report.kinds}"
    assert report.passed, report.summary()
    assert report.faults_by_kind.get("failover") == 4
    row = report.availability["failover"]
    assert row["rejoined_s"]["max"] is not None and row["first_write"]["max"] is not None
    assert row["attempted"] > 0 and report.baseline["attempted"] > 0


def _control(pair: str) -> NemesisConfig:
    """The positive control's run, on ``pair`` as the archive's engine.

    Before the failover the standby is cut off and the lone primary loaded for a second
    (``lag``); the Sentinel log fails over after it (``cascade``), so the store rebuilds
    its log from the archive and serves nothing the archive lost; no forgets (a forget
    that may follow an append excuses its loss, and the workload forgets every user
    within a second or two)."""
    return NemesisConfig(adapter="pgvector-ha", faults=1, kinds=("failover",), seed=_seed(),
                         engine_map={"postgres-ha": pair}, targets={"failover": (pair,)},
                         lag=1.0, cascade=True, mix={"forget": 0.0}, freeze_share=0.0,
                         log=lambda _: None)


@pytest.mark.slow  # a nemesis run with a failover: nox -s slow
@pytest.mark.xdist_group("postgres-ha")
async def test_the_nemesis_catches_an_async_pair_losing_acknowledged_appends(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The positive control: the archive on the asynchronous pair. What the lone primary
    acknowledged is gone after the promotion, and the report names each lost append (G1)
    by user and id. 13 s measured."""
    monkeypatch.setenv("NOMNESIA_NEMESIS_KEEP", str(tmp_path))  # the merged history too
    report = await run_nemesis(_control("postgres-ha-async"))
    print(report.summary())
    assert not report.passed
    assert [(f.kind, f.target, f.detail) for f in report.faults] == [
        ("failover", "postgres-ha-async", "lag1s+redis-sentinel")]
    assert report.lost, f"G1: the async pair lost nothing the nemesis saw\n{report.summary()}"
    history = json.loads((tmp_path / "pgvector-ha-history.json").read_text(encoding="utf-8"))
    acked = {f"{op.user_id!r}: {op.value.id}" for op in map(Op.from_json, history)
             if op.f == "append" and op.type == "ok"}  # as the report names them
    assert set(report.lost) <= acked, set(report.lost) - acked
    assert f"  LOST {report.lost[0]}" in report.summary()
    assert report.options["engine_map"] == {"postgres-ha": "postgres-ha-async"}


@pytest.mark.slow  # a nemesis run with a failover: nox -s slow
@pytest.mark.xdist_group("postgres-ha")
async def test_the_control_on_the_synchronous_pair_loses_nothing() -> None:
    """The same run with the archive on the synchronous pair: a standby cut off makes
    COMMITs wait instead of acknowledging, so the control's loss is the asynchronous
    standby's, not an artefact of cutting it off or of the cascade. 14 s measured.

    It proves that only if the failover happened, as in its asynchronous twin: one
    failover of the pair, after the lag, cascading to the Sentinel log, and a
    promotion the provider measured; else "nothing lost" held of a run with no fault."""
    report = await run_nemesis(_control("postgres-ha"))
    print(report.summary())
    assert report.passed, report.summary()
    assert report.acknowledged_appends > 0
    assert [(f.kind, f.target, f.detail) for f in report.faults] == [
        ("failover", "postgres-ha", "lag1s+redis-sentinel")], report.summary()
    assert report.faults[0].figures.get("promoted_s") is not None, report.faults[0]
