"""Each engine's CPU, read from ``/proc`` before its provider stops it: the part of a run's
cost the suite cannot lower (the report's ``meta.cpu.engines``, bench/bench_matrix.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from nomnesia.adapters.engines import EmbeddedProvider, engine_cpu
from nomnesia.adapters.engines._proc import process_cpu

BURN = ("import sys\nx = 0\nfor i in range(3_000_000): x += i\n"
        "print('burnt', flush=True)\nsys.stdin.read()")
"""A process that spends some CPU, says so, then waits (on stdin) to be stopped."""


def _burnt(proc: subprocess.Popen[bytes]) -> None:
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"burnt\n"


def test_process_cpu_reads_a_running_process_and_zero_for_a_gone_one() -> None:
    proc = subprocess.Popen([sys.executable, "-c", BURN], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE)
    try:
        _burnt(proc)
        assert process_cpu(proc.pid) > 0.05
    finally:
        proc.kill()
        proc.wait()
    assert process_cpu(proc.pid) == 0.0  # reaped: no /proc entry


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_provider_records_an_engines_cpu_when_it_stops_it() -> None:
    before = engine_cpu().get("burner", 0.0)
    provider = EmbeddedProvider()
    read, write = subprocess.PIPE, subprocess.PIPE
    proc = subprocess.Popen([sys.executable, "-c", BURN], stdin=read, stdout=write,
                            start_new_session=True)
    try:
        _burnt(proc)
        provider.adopt("burner", proc)
    finally:
        provider.close()
    assert proc.poll() is not None
    spent = engine_cpu().get("burner", 0.0) - before
    assert spent > 0.05, f"the stopped engine's CPU was not recorded: {spent}"
