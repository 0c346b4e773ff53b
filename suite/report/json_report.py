"""The suite's machine-readable report: one JSON file per run, read by ``nomnesia report``.

A red test is only useful across adapters if it says which promise broke, so
every test is recorded with the guarantees it exercises (what it declares with
``@pytest.mark.guarantee(G1, G7, ...)``, read from the collected item) and the
guarantees its failure names (suite failure messages start with
``G7 atomic compaction:`` or ``Inputs:``). A failed test also keeps its whole
message and, for a concurrency failure, the history the page draws.

This module is the pytest plugin (``-p nomnesia.suite.reporting`` loads it
through the facade): ``--nomnesia-json PATH`` registers the annotator on every
process and the writer on the one that owns the session's output.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ..core.settings import settings
from .annotate import ANOMALIES, CAUSES, EVIDENCE, PROPERTY, Annotator
from .causes import group_causes
from .labels import FORMAT, NOT_APPLICABLE, failed_guarantees, ordered
from .outcome import RANK, failure_text, first_line, outcome, skip_reason
from .verdicts import guarantee_verdicts

__all__ = ["ADAPTER_INFO", "ENGINE_CPU", "INTERFACE_INFO", "PROFILE_INFO", "JsonReporter",
           "add_options", "build_report", "configure", "cpu_seconds", "cpu_split",
           "pytest_addoption", "pytest_configure", "run_metadata"]

PLUGIN_NAME = "nomnesia-json-report"
ANNOTATOR_NAME = "nomnesia-json-annotator"

INTERFACE_INFO = pytest.StashKey["tuple[str, str]"]()
"""The interface option and factory of a run on a library's own object, from the plugin."""
PROFILE_INFO = pytest.StashKey["dict[str, Any]"]()
"""The run's profile (``profiles.Resolved.to_json``), put here by the plugin."""
ADAPTER_INFO = pytest.StashKey["tuple[list[str], str | None]"]()
"""The built-in adapter's engines and factory, put here by the plugin: the report is
part of the suite's core, which never imports adapters (docs/architecture.md)."""
ENGINE_CPU = pytest.StashKey["dict[str, float]"]()
"""CPU-seconds per engine the run's provider started and stopped, put here by the plugin
once the engines are stopped (``nomnesia.adapters.engines.engine_cpu``)."""


class JsonReporter:
    """Collects every test's outcome on the process that owns the session's output."""

    def __init__(self, config: pytest.Config, path: str | os.PathLike[str]) -> None:
        self.config = config
        self.path = Path(path)
        self.tests: dict[str, dict[str, Any]] = {}
        self.started = time.time()
        self.clock = time.monotonic()

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.started = time.time()
        self.clock = time.monotonic()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        entry = self.tests.setdefault(report.nodeid, {
            "nodeid": report.nodeid, "outcome": "passed", "duration": 0.0,
            "guarantees": [], "failed_guarantees": [], "message": "",
        })
        entry["duration"] = round(entry["duration"] + float(report.duration or 0.0), 6)
        for key, value in report.user_properties:
            if key == PROPERTY and isinstance(value, (list, tuple)):
                entry["guarantees"] = ordered([*entry["guarantees"], *map(str, value)])
            elif key == CAUSES and isinstance(value, list):
                entry.setdefault("causes", []).extend(value)
            elif key == ANOMALIES and isinstance(value, list):
                entry["anomalies"] = [str(a) for a in value]  # all of them, however many shown
            elif key == EVIDENCE and isinstance(value, dict):
                entry.setdefault("evidence", value)  # the first failing phase's
        phase = outcome(report)
        if phase is None:
            return
        if RANK[phase] >= RANK[entry["outcome"]]:
            entry["outcome"] = phase
            entry["message"] = "" if phase == "passed" else first_line(report)
            if phase == NOT_APPLICABLE:
                entry["message"] = skip_reason(report)
        if report.failed:
            named = failed_guarantees(failure_text(report))
            entry["failed_guarantees"] = ordered([*entry["failed_guarantees"], *named])
            entry["guarantees"] = ordered([*entry["guarantees"], *named])

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int | pytest.ExitCode
                             ) -> None:
        data = build_report(self.config, list(self.tests.values()), started=self.started,
                            duration=time.monotonic() - self.clock, exitstatus=int(exitstatus))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(self.path)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        terminalreporter.write_line(f"nomnesia: JSON report written to {self.path}")


def _iso(stamp: float) -> str:
    return _dt.datetime.fromtimestamp(stamp, _dt.timezone.utc).isoformat(timespec="seconds")


def _option(config: pytest.Config, name: str) -> Any:
    try:
        return config.getoption(name)
    except ValueError:
        return None


def run_metadata(config: pytest.Config) -> dict[str, Any]:
    """Who was tested, where, and with what: the row label of ``nomnesia report``."""
    adapter = _option(config, "--adapter")
    store = _option(config, "--store")
    seed = _option(config, "--nomnesia-seed")
    if seed is None:
        seed = settings.seed or os.environ.get("NOMNESIA_SEED")
    engines, target = config.stash.get(ADAPTER_INFO, ([], None))
    workers = _option(config, "numprocesses")
    profile = config.stash.get(PROFILE_INFO, None)
    label = adapter or store
    interface = config.stash.get(INTERFACE_INFO, None)  # (option, MODULE:FACTORY)
    if interface is not None:
        store, label = " ".join(interface), interface[1]
    return {
        "adapter": str(adapter) if adapter else None,
        "store": str(store) if store else target,
        "label": str(label or "unknown"),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(terse=True),
        "backends": _option(config, "--backends") or os.environ.get("NOMNESIA_BACKENDS", "auto"),
        "engines": engines,
        "seed": str(seed) if seed is not None else None,
        "pytest": pytest.__version__,
        "argv": list(config.invocation_params.args),
        "workers": workers if isinstance(workers, int) else None,
        "executable": sys.executable,
        "profile": profile,
        "loop": settings.event_loop,
    }


def cpu_split(config: pytest.Config) -> dict[str, Any]:
    """Where a run's CPU went: this pytest process, each engine, every other child process.

    A run's cost is judged on what the suite itself spends (the ``pytest`` part), against
    the engines' own floor (issue 47): ``children`` is every process this one started and
    waited for (engines included; initdb, Milvus Lite, the nemesis's workers), so
    ``children`` minus the engines is what the rest of them cost.
    """
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    engines = config.stash.get(ENGINE_CPU, {})
    return {"pytest": round(own.ru_utime + own.ru_stime, 3),
            "children": round(kids.ru_utime + kids.ru_stime, 3),
            "engines": {name: round(spent, 3) for name, spent in sorted(engines.items())}}


def cpu_seconds() -> float:
    """CPU time (user + system) of this run and of every process it started and waited for.

    Engines the run started are stopped and waited for before the report is written,
    so a run's engines count too: what one leaf of the matrix costs a machine
    (``bench/bench_matrix.py`` prints it per leaf). A process left running counts not.
    """
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def build_report(config: pytest.Config, tests: list[dict[str, Any]], *, started: float,
                 duration: float, exitstatus: int) -> dict[str, Any]:
    """The whole report of a session: meta, summary, verdicts, causes and every test."""
    tests = sorted(tests, key=lambda t: str(t["nodeid"]))
    summary: dict[str, int] = {}
    for test in tests:
        summary[test["outcome"]] = summary.get(test["outcome"], 0) + 1
    return {
        "format": FORMAT,
        "meta": {**run_metadata(config), "started": _iso(started),
                 "finished": _iso(time.time()), "duration": round(duration, 3),
                 "cpu_seconds": round(cpu_seconds(), 3), "cpu": cpu_split(config),
                 "exitstatus": exitstatus},
        "summary": summary,
        "guarantees": guarantee_verdicts(tests, judged=_judged(config)),
        "causes": group_causes((t["nodeid"], t.get("causes", ())) for t in tests
                               if t.get("outcome") in ("failed", "error")),
        "tests": tests,
    }


def _judged(config: pytest.Config) -> list[str] | None:
    profile = config.stash.get(PROFILE_INFO, None)
    return list(profile["judged"]) if profile else None


def add_options(group: pytest.OptionGroup) -> None:
    """Add ``--nomnesia-json PATH``; safe to call twice (plugin.py and ``-p`` both may)."""
    parser = getattr(group, "parser", None)
    if parser is not None:
        if getattr(parser, "_nomnesia_json_added", False):
            return
        parser._nomnesia_json_added = True
    with contextlib.suppress(ValueError):  # same group, added by the other entry point
        group.addoption("--nomnesia-json", metavar="PATH", default=None,
                        help="write the suite's per-test JSON report (read by `nomnesia report`)")


def configure(config: pytest.Config) -> None:
    """Register the reporter when ``--nomnesia-json`` is given (on the controller only)."""
    path = _option(config, "--nomnesia-json")
    if not path or config.pluginmanager.has_plugin(ANNOTATOR_NAME):
        return
    config.pluginmanager.register(Annotator(), ANNOTATOR_NAME)
    if not hasattr(config, "workerinput"):  # an xdist worker only annotates
        config.pluginmanager.register(JsonReporter(config, path), PLUGIN_NAME)


# Loaded on its own with ``-p nomnesia.suite.reporting`` (which re-exports these two).

def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser.getgroup("nomnesia"))


def pytest_configure(config: pytest.Config) -> None:
    configure(config)
