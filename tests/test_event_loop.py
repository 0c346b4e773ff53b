"""The event loop the suite runs tests on (``--nomnesia-loop``): uvloop for the project's own
stacks where it is installed, CPython's loop for a user's store unless asked, and a usage
error, before any test, for a loop that is not installed. The report names the loop, so a
figure in docs/bench.md can say which one it was measured on.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import Iterator
from typing import Any

import pytest
from interface_runs import SUITE, quiet_ini

from nomnesia.adapters import ADAPTERS
from nomnesia.suite.core.loop import new_loop
from nomnesia.suite.core.settings import settings

pytest_plugins = ("pytester",)

uvloop = pytest.importorskip("uvloop", reason="uvloop has no build here (Windows, PyPy)")

ONE_TEST = ("-k", "test_append_returns_the_entry_and_history_shows_it")


@pytest.fixture
def loop_setting() -> Iterator[None]:
    before = settings.event_loop
    yield
    settings.event_loop = before


def _run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    quiet_ini(pytester)
    report = pytester.path / "report.json"
    result = pytester.runpytest_inprocess(*SUITE, *ONE_TEST, f"--nomnesia-json={report}", *args)
    meta = json.loads(report.read_text(encoding="utf-8"))["meta"] if report.exists() else {}
    return result, meta


def test_new_loop_is_the_kind_the_settings_name(loop_setting: None) -> None:
    settings.event_loop = "uvloop"
    loop = new_loop()
    try:
        assert isinstance(loop, uvloop.Loop)
    finally:
        loop.close()
    settings.event_loop = "asyncio"
    loop = new_loop()
    try:
        assert not isinstance(loop, uvloop.Loop)
        assert isinstance(loop, asyncio.BaseEventLoop)
    finally:
        loop.close()


def test_a_builtin_stack_runs_on_uvloop_unless_asked_otherwise(pytester: pytest.Pytester) -> None:
    result, meta = _run(pytester, "--adapter", "memory")
    result.assert_outcomes(passed=1)
    assert meta["loop"] == "uvloop"
    split = meta["cpu"]  # where the run's CPU went (bench/bench_matrix.py prints it)
    assert split["pytest"] > 0
    assert split["engines"] == {}  # the memory stack starts no engine
    assert meta["cpu_seconds"] >= split["pytest"]
    result, meta = _run(pytester, "--adapter", "memory", "--nomnesia-loop", "asyncio")
    result.assert_outcomes(passed=1)
    assert meta["loop"] == "asyncio"


def test_the_milvus_stacks_keep_cpythons_loop_where_uvloop_measured_slower() -> None:
    slower = {name for name, spec in ADAPTERS.items() if spec.event_loop == "asyncio"}
    assert slower == {"milvus", "milvus-server"}
    assert all(spec.event_loop in ("asyncio", "uvloop") for spec in ADAPTERS.values())


def test_a_users_store_keeps_cpythons_loop_unless_asked(pytester: pytest.Pytester) -> None:
    store = ("--store", "nomnesia.adapters.memory:InMemoryStore")
    result, meta = _run(pytester, *store)
    result.assert_outcomes(passed=1)
    assert meta["loop"] == "asyncio"
    result, meta = _run(pytester, *store, "--nomnesia-loop", "uvloop")
    result.assert_outcomes(passed=1)
    assert meta["loop"] == "uvloop"


def test_asking_for_a_loop_that_is_not_installed_is_a_usage_error(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    find_spec = importlib.util.find_spec

    def without_uvloop(name: str, package: str | None = None) -> Any:
        return None if name == "uvloop" else find_spec(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", without_uvloop)
    result, _ = _run(pytester, "--adapter", "memory", "--nomnesia-loop", "uvloop")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--nomnesia-loop uvloop: uvloop is not installed here*"])
    result, meta = _run(pytester, "--adapter", "memory")  # auto: CPython's loop, no error
    result.assert_outcomes(passed=1)
    assert meta["loop"] == "asyncio"
