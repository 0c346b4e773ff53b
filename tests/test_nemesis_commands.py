"""The nemesis on your own deployment: faults it cannot cause itself, as your commands.

``--backends external`` takes the engines from ``NOMNESIA_*_URL``; ``--fault-command``
gives the failover, pause and kill it would otherwise do to engines it started. The
worked example of docs/faults.md runs here on the embedded Sentinel group, started by
the test and handed to the nemesis as an external server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nomnesia.suite.nemesis.commands import CommandFaults, parse_commands
from nomnesia.suite.nemesis.runner import NemesisConfig, _Run

ROOT = Path(__file__).resolve().parent.parent


class _Servers:
    """An external provider's stand-in: fixed URLs, nothing it can do to them."""

    def url(self, engine: str) -> str:
        return f"redis://127.0.0.1:1/{engine}"

    def close(self) -> None:
        pass


def test_commands_are_kind_equals_command_and_come_in_pairs() -> None:
    assert parse_commands(["failover=echo {engine}", "pause=a", "resume=b"]) == {
        "failover": "echo {engine}", "pause": "a", "resume": "b"}
    for bad, says in ((["failover"], "KIND=COMMAND"), (["reboot=x"], "unknown kind"),
                      (["pause=a"], "pause needs resume"), (["kill=a"], "kill needs restart"),
                      (["failover=echo 'open"], "quotation")):
        with pytest.raises(ValueError, match=says):
            parse_commands(bad)


def test_a_command_gets_the_engine_and_its_url_and_must_exit_zero(tmp_path: Path) -> None:
    out = tmp_path / "ran"
    faults = CommandFaults(_Servers(), {
        "failover": f"{sys.executable} -c \"import sys; open(sys.argv[1], 'w')"
                    f".write(' '.join(sys.argv[2:]))\" {out} {{engine}} {{url}}",
        "pause": "false", "resume": "true"})
    assert faults.can_fail_over("redis-sentinel")
    assert set(faults.failover("redis-sentinel")) == {"command_s"}
    assert out.read_text() == "redis-sentinel redis://127.0.0.1:1/redis-sentinel"
    with pytest.raises(RuntimeError, match=r"--fault-command pause for redis .* exited 1"):
        faults.run("pause", "redis")
    with pytest.raises(ValueError, match="no --fault-command kill"):
        faults.run("kill", "redis")
    assert [(kind, engine) for kind, engine, _ in faults.ran] == [("failover", "redis-sentinel")]


def test_pause_on_servers_the_nemesis_did_not_start_needs_a_command() -> None:
    cfg = NemesisConfig(adapter="redis", kinds=("crash", "pause"), backends="external")
    with pytest.raises(ValueError, match="pause need engines the nemesis started, or your "
                                         "commands"):
        _Run(cfg, _Servers(), ("redis",))
    everything = _Run(NemesisConfig(adapter="redis", backends="external"), _Servers(),
                      ("redis",))
    assert "pause" not in everything.kinds and "kill" not in everything.kinds
    assert "net" in everything.kinds  # the wire still goes through the proxy
    commanded = _Run(NemesisConfig(adapter="redis", kinds=("pause",), backends="external",
                                   commands={"pause": "true", "resume": "true"}),
                     CommandFaults(_Servers(), {"pause": "true", "resume": "true"}), ("redis",))
    assert commanded.kinds == ("pause",)


@pytest.mark.slow
def test_the_worked_example_fails_a_sentinel_group_over_by_command(tmp_path: Path) -> None:
    from nomnesia.adapters.engines import EmbeddedProvider

    report = tmp_path / "report.json"
    with EmbeddedProvider() as provider:
        env = {**os.environ, "NOMNESIA_BACKENDS": "external",
               "NOMNESIA_REDIS_SENTINEL_URL": provider.url("redis-sentinel"),
               "PYTHONPATH": str(ROOT)}
        done = subprocess.run(
            [sys.executable, "-m", "nomnesia.suite.nemesis", "--backends", "external",
             "--store", "tests.replica_stores:sentinel_primary", "--kinds", "failover",
             "--faults", "2", "--mix", "compact=0,forget=0", "--seed", "20261207",
             "--out", str(report), "--fault-command",
             f"failover={sys.executable} -m nomnesia.suite.nemesis.sentinel failover {{url}}"],
            env=env, capture_output=True, text=True, timeout=600, cwd=ROOT, check=False)
    assert report.exists(), done.stdout[-2000:] + done.stderr[-2000:]
    faults = json.loads(report.read_text())["faults"]
    assert [f["kind"] for f in faults] == ["failover", "failover"], done.stdout[-2000:]
    assert all("command_s" in f.get("figures", {}) for f in faults), faults
