"""nomnesia.testing (issue 45): eventually, faults that always heal, record/check, the history
file format and its versions, ``nomnesia check``, the strategies.

Each test names, in its docstring or a comment, what it catches when its mechanism goes.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings

from nomnesia.adapters.engines import EmbeddedProvider, EngineControl
from nomnesia.adapters.engines.part import proc_state
from nomnesia.adapters.engines.session import EngineSession, install
from nomnesia.adapters.fragile import FragileMemoryStore
from nomnesia.adapters.memory import InMemoryStore
from nomnesia.suite import plugin_testing
from nomnesia.suite.cli import main as cli
from nomnesia.suite.contract import validation
from nomnesia.suite.core import history_format
from nomnesia.suite.core.eventually import Misuse
from nomnesia.suite.core.loop import wait_until
from nomnesia.suite.faults import LinkPart, WirePart
from nomnesia.testing import (
    FAULT_KINDS,
    EventuallyTimeout,
    HistoryFormatError,
    check,
    eventually,
    fault,
    faultable,
    lag,
    pause,
    read_history,
    record,
    stall,
    verdict_html,
    write_history,
)
from nomnesia.testing.strategies import contents, invalid_calls, user_ids

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "history.jsonl"
PLANTED = ROOT / "docs" / "examples" / "history-planted.jsonl"
VERSIONS = sorted((Path(__file__).parent / "histories").glob("v*.jsonl"))


# --------------------------------------------------------------------------- eventually


def test_eventually_returns_the_first_truthy_value() -> None:
    calls: list[int] = []

    def check_() -> int:
        calls.append(1)
        assert len(calls) >= 3, "not yet"
        return len(calls)

    assert eventually(check_, timeout=2, interval=0.001) == 3


def test_eventually_times_out_with_the_last_value_and_how_long() -> None:
    """Without the EventuallyTimeout wrapping, tenacity's bare RetryError (no value, no
    seconds) or a silent None would come out: both fail the asserts below."""
    began = time.monotonic()
    with pytest.raises(EventuallyTimeout) as caught:
        eventually(lambda: [], timeout=0.2, interval=0.01, what="the index agrees")
    assert time.monotonic() - began >= 0.2
    text = str(caught.value)
    assert "the index agrees did not hold within 0.2 s" in text
    assert "last probe returned []" in text and "waited 0.2" in text
    assert caught.value.attempts >= 2


def test_eventually_reports_the_last_exception() -> None:
    def refused() -> bool:
        raise ConnectionRefusedError("vector index down")

    with pytest.raises(EventuallyTimeout) as caught:
        eventually(refused, timeout=0.05, interval=0.01)
    assert isinstance(caught.value.last_error, ConnectionRefusedError)
    assert "ConnectionRefusedError: vector index down" in str(caught.value)


def test_eventually_awaits_coroutine_functions_and_lambdas() -> None:
    async def main() -> tuple[object, object]:
        seen: list[int] = []

        async def agreed() -> bool:
            seen.append(1)
            return len(seen) > 2

        first = await eventually(agreed, timeout=2, interval=0.001)
        second = await eventually(lambda: agreed(), timeout=2, interval=0.001)
        return first, second

    assert asyncio.run(main()) == (True, True)


def test_eventually_refuses_an_awaitable_outside_a_loop_at_once() -> None:
    """A coroutine is truthy: without the check it would 'hold' at once, unawaited."""
    async def agreed() -> bool:
        return False

    began = time.monotonic()
    with pytest.raises(Misuse):
        eventually(lambda: agreed(), timeout=5)
    assert time.monotonic() - began < 1, "a misuse is not retried until the timeout"


def test_wait_until_probes_once_more_at_the_deadline() -> None:
    probes: list[float] = []

    async def probe() -> int:
        probes.append(time.monotonic())
        return len(probes)

    async def main() -> tuple[int, float]:
        return await wait_until(probe, lambda n: n > 10**6, within=0.05, interval=0.01)

    last, waited = asyncio.run(main())
    assert last == len(probes) >= 2 and waited >= 0.05
    now = asyncio.run(wait_until(probe, bool, within=0))
    assert now == (len(probes), pytest.approx(0, abs=0.05))


# --------------------------------------------------------------------------- faults


def test_the_plugin_spells_every_fault_kind_of_the_one_fault_model() -> None:
    """The fixture's parameters, the public kinds, and the parts' fault names agree."""
    assert plugin_testing.FAULT_KINDS == FAULT_KINDS
    assert set(FAULT_KINDS) == {*WirePart.fs, "pause", *LinkPart.fs}


@pytest.fixture(scope="module")
def session() -> Iterator[EngineSession]:
    made = EngineSession(EmbeddedProvider)
    uninstall = install(made)
    try:
        yield made
    finally:
        uninstall()
        made.close()


def _stopped(pid: int) -> bool:
    state = proc_state(pid)
    return state is not None and state[0] in ("T", "t")


@pytest.mark.parametrize("kind", ["lost-reply", "refuse", "stall", "latency"])
def test_a_wire_fault_heals_on_exception(session: EngineSession, kind: str) -> None:
    """Without the heal in __exit__ (or with it skipped by the exception) the toxic stays on
    the proxy, and EngineSession.heal() finds it: both asserts below fail."""
    log = record(InMemoryStore())
    with faultable(session) as scope:
        session.url("redis")
        proxy = scope.engines["redis"]
        with pytest.raises(RuntimeError, match="the test's own error"), fault(kind, "redis"):
            assert proxy.toxic is not None and proxy.toxic.name == kind
            raise RuntimeError("the test's own error")
        assert proxy.toxic is None, f"{kind} left on the proxy"
    log.stop()
    assert session.heal() == []
    notes = [str(op.value) for op in log.history.ops if op.f == "note"]
    assert notes[0].startswith("fault: ") and notes[0].endswith(" on redis"), notes
    assert notes[1].startswith("healed: "), notes


def test_async_with_heals_a_stall_on_exception(session: EngineSession) -> None:
    async def main() -> None:
        with faultable(session) as scope:
            session.url("redis")
            with pytest.raises(KeyError):
                async with stall("redis"):
                    assert scope.engines["redis"].toxic is not None
                    raise KeyError("boom")
            assert scope.engines["redis"].toxic is None

    asyncio.run(main())
    assert session.heal() == []


def test_pause_heals_on_exception(session: EngineSession) -> None:
    """Without the heal, the engine stays SIGSTOPped: the poll below never sees it run, and
    EngineSession.heal() reports the stopped processes."""
    session.url("redis")
    pid = EngineControl(session.provider).pid("redis")  # type: ignore[arg-type]
    with pytest.raises(RuntimeError), pause("redis"):
        assert eventually(lambda: _stopped(pid), timeout=5, interval=0.005)
        raise RuntimeError("the test's own error")
    assert eventually(lambda: not _stopped(pid), timeout=5, interval=0.005)
    assert session.heal() == []


def test_a_wire_fault_on_an_engine_not_behind_the_proxy_says_how(session: EngineSession) -> None:
    from nomnesia.testing import FaultUnavailable

    with pytest.raises(FaultUnavailable, match="open it while faults are armed"), \
            stall("postgres"):
        pass


# --------------------------------------------------------------------------- record, check


async def _concurrent(store: object) -> object:
    s = record(store)

    async def writer(name: str) -> None:
        for i in range(6):
            await s.append_message("ann", "user", f"{name} {i}")

    await asyncio.gather(writer("a"), writer("b"), s.compact("ann"))
    await s.get_history("ann", 50)
    s.history.note(history_format.fault_note("start", "stall", "redis"))
    await s.search("ann", "a 1", 3)
    s.history.note(history_format.fault_note("end", "stall", "redis", "1 call hit"))
    await s.compact("ann")
    await s.get_history("ann", 50)
    s.stop()
    return s


def test_check_passes_the_oracle_and_names_the_fragile_stores_guarantee() -> None:
    """The seed's store shares seqs between concurrent appends; across seeds at least one
    history shows it, named G5 with its smallest history. A check() that dropped anomalies
    (or a verdict without guarantees) fails here."""
    good = check(asyncio.run(_concurrent(InMemoryStore())))  # type: ignore[arg-type]
    assert good and good.ok, str(good)
    verdicts = [check(asyncio.run(_concurrent(FragileMemoryStore(seed=seed))))  # type: ignore[arg-type]
                for seed in range(8)]
    bad = [v for v in verdicts if not v]
    assert bad, "the seed's store passed eight concurrent histories"
    text = str(bad[0])
    assert "broken: G" in text and "the smallest history that shows it" in text
    assert all(a.ops and len(a.ops) < len(bad[0].history.ops) for a in bad[0].anomalies)
    assert "<svg" in verdict_html(bad[0]) and str(bad[0].guarantees[0]) in verdict_html(bad[0])


def test_a_recorded_history_round_trips_through_the_file(tmp_path: Path) -> None:
    """write -> read gives the same ops (notes as fault windows included) and verdict."""
    recorded = asyncio.run(_concurrent(InMemoryStore()))
    path = write_history(recorded, tmp_path / "h.jsonl")  # type: ignore[arg-type]
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["version"] == history_format.VERSION and lines[0]["keep_last"] >= 1
    assert [e["type"] for e in lines].count("fault") == 2
    read = read_history(path)
    before = recorded.history.ops  # type: ignore[attr-defined]
    after = read.history.ops
    assert [(o.type, o.f, o.process, o.user_id, o.value, o.error, o.time) for o in before] == \
        [(o.type, o.f, o.process, o.user_id, o.value, o.error, o.time) for o in after]
    assert check(path).ok


@pytest.mark.parametrize("path", VERSIONS, ids=lambda p: p.name)
def test_every_format_version_is_read_and_valid(path: Path) -> None:
    """tests/histories keeps one file per version: a reader dropped for an old version, or a
    schema that no longer describes its lines, fails here."""
    jsonschema = pytest.importorskip("jsonschema")
    schema = history_format.schema()
    for line in path.read_text(encoding="utf-8").splitlines():
        jsonschema.validate(json.loads(line), schema)
    read = read_history(path)
    assert read.history.ops and check(path).ok


def test_there_is_a_history_file_for_every_version() -> None:
    assert [p.name for p in VERSIONS] == [f"v{n}.jsonl" for n in
                                          range(1, history_format.VERSION + 1)]


def test_a_newer_version_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "future.jsonl"
    path.write_text('{"type": "header", "format": "nomnesia-history", "version": 99}\n',
                    encoding="utf-8")
    with pytest.raises(HistoryFormatError, match="version 99 is newer"):
        read_history(path)


def test_the_worked_examples_follow_the_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    for path in (EXAMPLE, PLANTED):
        for line in path.read_text(encoding="utf-8").splitlines():
            jsonschema.validate(json.loads(line), history_format.schema())


def test_nomnesia_check_passes_the_worked_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["check", str(EXAMPLE)]) == 0
    assert "no anomaly in 7 calls" in capsys.readouterr().out


def test_nomnesia_check_names_the_planted_anomaly(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The planted file differs from the worked example only in what the summary covers:
    m2, acknowledged, is then in no read. A checker that missed it exits 0 here."""
    page = tmp_path / "check.html"
    assert cli(["check", str(EXAMPLE), str(PLANTED), "--html", str(page)]) == 1
    out = capsys.readouterr().out
    assert "G1 durability: m2 was acknowledged" in out
    assert "the smallest history that shows it" in out
    second = tmp_path / "check-2.html"
    assert "G1 durability" in second.read_text(encoding="utf-8") and "<svg" in second.read_text(
        encoding="utf-8")


def test_nomnesia_check_says_where_a_file_is_broken(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(EXAMPLE.read_text(encoding="utf-8") + '{"type": "ok", "process": 7}\n',
                    encoding="utf-8")
    assert cli(["check", str(path)]) == 2
    assert "bad.jsonl:18: a ok of process 7 that has no call in flight" in capsys.readouterr().err


# --------------------------------------------------------------------------- strategies


@settings(max_examples=60, deadline=None)
@given(user=user_ids(), content=contents())
def test_strategies_draw_valid_adversarial_inputs(user: str, content: str) -> None:
    assert validation.validate_user_id(user) == user
    assert validation.validate_content(content) == content


@settings(max_examples=60, deadline=None)
@given(call=invalid_calls())
def test_invalid_calls_are_refused_by_validation(call: tuple[str, object]) -> None:
    """What the strategy draws as invalid, the contract's validation refuses."""
    name, value = call
    args: dict[str, object] = {"user_id": "ann", "role": "user", "content": "x",
                               "message_id": None}
    if name in ("limit", "k"):
        with pytest.raises((ValueError, TypeError)):
            validation.validate_limit(name, value)
        return
    args[name] = value
    with pytest.raises((ValueError, TypeError)):
        validation.validate_append(args["user_id"], args["role"], args["content"],
                                   message_id=args["message_id"])


# --------------------------------------------------------------------------- --nomnesia-history


@pytest.mark.parametrize(("store", "code"), [("nomnesia.adapters.memory:InMemoryStore", 0),
                                             ("nomnesia.adapters.fragile:FragileMemoryStore", 1)])
def test_nomnesia_check_judges_the_histories_the_suite_wrote(
        tmp_path: Path, store: str, code: int, capsys: pytest.CaptureFixture[str]) -> None:
    """--nomnesia-history writes each test's histories with the store's keep_last in the
    header; nomnesia check judges them as the suite did: the oracle passes, the seed's store
    fails naming guarantees. Without the writer there is no file (the glob is empty)."""
    out = tmp_path / "histories"
    subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "nomnesia.suite", "--store",
                    store, "-k", "concurrent_mixed", "--nomnesia-history", str(out), "-q",
                    "-p", "no:cacheprovider", "-p", "no:xdist"],
                   cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    files = sorted(out.glob("*.jsonl"))
    assert files, "the suite wrote no history"
    assert json.loads(files[0].read_text(encoding="utf-8").splitlines()[0])["keep_last"] >= 1
    assert cli(["check", *map(str, files)]) == code
    text = capsys.readouterr().out
    assert ("broken: G" in text) == bool(code), text[-2000:]


# --------------------------------------------------------------------------- the seed profile


async def _seed_scenario(store: object) -> object:
    s = record(store)

    async def writer(name: str) -> None:
        for i in range(8):
            await s.append_message("ann", "user", f"{name} says {i}")
            if name == "a" and i >= 3:  # its summarizer awaits: "b" appends meanwhile
                await s.compact("ann")

    await asyncio.gather(writer("a"), writer("b"))
    await s.get_history("ann", 50)
    s.stop()
    return s


def test_record_takes_a_seed_profile_store_and_check_reads_it_by_content(
        tmp_path: Path) -> None:
    """A four-method store (no ids) is recorded through the keyed view and judged by the
    keyed checker; its file says profile keyed and judges the same. The seed's stale-read
    compaction loses a concurrent append (G1/G7) in some seed; the correct one never."""
    from nomnesia.adapters.seed import CorrectSeedStore, SeedMemoryStore

    good = asyncio.run(_seed_scenario(CorrectSeedStore(seed=1)))
    assert check(good).ok, str(check(good))  # type: ignore[arg-type]
    bad = [asyncio.run(_seed_scenario(SeedMemoryStore(seed=seed))) for seed in range(8)]
    verdicts = [check(b) for b in bad]  # type: ignore[arg-type]
    failed = [v for v in verdicts if not v]
    assert failed, "the seed store's compaction lost nothing in eight histories"
    assert {g.number for v in failed for g in v.guarantees} & {1, 7}, str(failed[0])
    index = verdicts.index(failed[0])
    path = write_history(bad[index], tmp_path / "seed.jsonl")  # type: ignore[arg-type]
    assert json.loads(path.read_text(encoding="utf-8").splitlines()[0])["profile"] == "keyed"
    assert check(path).guarantees == failed[0].guarantees


@pytest.mark.slow  # a PostgreSQL primary and its streaming standby start: ~10 s
@pytest.mark.xdist_group("postgres-ha")
def test_lag_on_a_replicated_topology_holds_and_heals_on_exception(
        session: EngineSession) -> None:
    """``lag`` on ``postgres-ha`` makes the standby apply WAL late while the block runs
    (``recovery_min_apply_delay``), and undoes it on exit, also on an exception. Without
    the heal the setting stays: the last assert fails."""
    import psycopg

    url = session.url("postgres-ha")

    def delay() -> str:
        with psycopg.connect(url, target_session_attrs="standby", autocommit=True,
                             connect_timeout=10) as conn:
            row = conn.execute("SHOW recovery_min_apply_delay").fetchone()
            return str(row[0]) if row else ""

    with pytest.raises(RuntimeError), lag("postgres-ha", ms=700):
        assert delay() == "700ms"
        raise RuntimeError("the test's own error")
    assert eventually(lambda: delay() == "0", timeout=10, interval=0.05)
