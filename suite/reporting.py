"""The suite's machine-readable report: one JSON file per run, read by ``nomnesia report``.

A red test is only useful across adapters if it says which promise broke, so
every test is recorded with the guarantees it exercises (what it declares with
``@pytest.mark.guarantee(G1, G7, ...)``, read from the collected item) and the
guarantees its failure names (suite failure messages start with
``G7 atomic compaction:`` or ``Inputs:``).

Under pytest-xdist the workers run the tests and the controller writes the
file: workers annotate each report's ``user_properties`` (which xdist forwards),
and the controller's ``pytest_runtest_logreport`` sees every forwarded report.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import platform
import re
import resource
import sys
import time
from collections.abc import Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .contract import Guarantee
from .fresh import scrub

__all__ = [
    "FORMAT",
    "GUARANTEE_KEYS",
    "JsonReporter",
    "add_options",
    "annotate",
    "cause_key",
    "cause_lines",
    "configure",
    "declared",
    "failed_guarantees",
    "failure_text",
    "group_causes",
    "guarantee_key",
    "verdict_text",
]

FORMAT = "nomnesia-suite-report/1"
PLUGIN_NAME = "nomnesia-json-report"
ANNOTATOR_NAME = "nomnesia-json-annotator"
PROPERTY = "nomnesia_guarantees"
CAUSES = "nomnesia_causes"
"""user_properties key: the causes of a failed test (``annotate``), one per failing input."""
ANOMALIES = "nomnesia_anomalies"
"""user_properties key: every anomaly of a concurrency failure, however many were printed."""
MARK = "guarantee"
"""The one mark a suite test declares what it checks with (registered by plugin.py)."""

_NUMBERED = sorted((g for g in Guarantee if g.number), key=lambda g: g.number)
GUARANTEE_KEYS: tuple[str, ...] = (*(f"G{g.number}" for g in _NUMBERED), "Inputs")
"""Column order of every matrix: G1..G12, then the Inputs section."""

_TITLES = {g.number: g.title for g in _NUMBERED}
# A failure message starts with the guarantee; in a traceback it follows "E   "
# and possibly the exception type ("AssertionError: G7 atomic compaction: ...").
_MESSAGE = re.compile(
    r"^(?:E\s+)?(?:\|\s*)?(?:(?:[a-z_]\w*\.)*[A-Z]\w*: )?(?:G(\d{1,2}) ([a-z ]+)|(Inputs)):", re.M)
_WORKER = re.compile(r"^\[gw\d+\] ")


def guarantee_key(value: object) -> str | None:
    """``"G7"`` or ``"Inputs"`` for a Guarantee, number or label; None if it names none."""
    if isinstance(value, Guarantee):
        return f"G{value.number}" if value.number else "Inputs"
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return f"G{value}" if value in _TITLES else ("Inputs" if value == 0 else None)
    if isinstance(value, str):
        text = value.strip()
        if text.lower().startswith("inputs"):
            return "Inputs"
        match = re.match(r"G?(\d{1,2})\b", text, re.I)
        if match and int(match.group(1)) in _TITLES:
            return f"G{int(match.group(1))}"
        for g in _NUMBERED:
            if text.lower() == g.title or text.upper() == g.name:
                return f"G{g.number}"
    return None


def _ordered(keys: Iterable[str]) -> list[str]:
    present = set(keys)
    return [k for k in GUARANTEE_KEYS if k in present]


def failed_guarantees(text: str) -> list[str]:
    """The guarantees a failure's text names, in column order.

    Only a line that *starts* a message counts, and the title must be the
    guarantee's own, so a printed history or a source line cannot fake one.
    """
    found: set[str] = set()
    for match in _MESSAGE.finditer(text):
        if match.group(3):
            found.add("Inputs")
            continue
        number = int(match.group(1))
        if _TITLES.get(number) == match.group(2).strip():
            found.add(f"G{number}")
    return _ordered(found)


def failure_text(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    parts: list[str] = []
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None and getattr(crash, "message", None):
        parts.append(str(crash.message))
    if isinstance(longrepr, str):
        parts.append(longrepr)
    else:
        parts.append(report.longreprtext)
    return "\n".join(parts)


def _first_line(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    message = str(getattr(crash, "message", "") or "")
    if not message:
        message = report.longreprtext.strip()
    if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        message = str(report.longrepr[2])  # a skip: (path, line, reason)
    # xdist prefixes a plain-text longrepr with the worker ("[gw0] linux -- Python ...").
    lines = [ln for ln in message.strip().splitlines() if ln.strip() and not _WORKER.match(ln)]
    return lines[0][:500] if lines else ""


def declared(item: pytest.Item) -> list[str] | None:
    """The guarantees ``item`` declares it checks, in column order; None if it declares nothing.

    A test declares them with ``@pytest.mark.guarantee(G1, G7, ...)`` (the names
    ``nomnesia.suite.contract`` exports); marks add up, so a parametrized case
    can add its own (``pytest.param("compact", marks=pytest.mark.guarantee(G7))``).
    A test of the suite itself declares ``none="why"`` and gets ``[]``.
    Anything else in the mark is a ``pytest.UsageError``: a misspelt declaration
    would otherwise quietly turn a guarantee's column into "not exercised".
    """
    marks = [*item.iter_markers(MARK), *_overridden_marks(item)]
    if not marks:
        return None
    keys: set[str] = set()
    reasons: list[object] = []
    for mark in marks:
        unknown = sorted(set(mark.kwargs) - {"none"})
        bad = [a for a in mark.args if not isinstance(a, Guarantee)]
        if unknown or bad:
            raise pytest.UsageError(
                f"{item.nodeid}: @pytest.mark.{MARK} takes Guarantee members "
                f"(nomnesia.suite.contract.G1 ... G12, INPUTS) and none='why', not "
                f"{', '.join([*map(repr, bad), *(f'{k}=' for k in unknown)])}")
        keys.update(k for g in mark.args if (k := guarantee_key(g)))
        if "none" in mark.kwargs:
            reasons.append(mark.kwargs["none"])
    if (reasons and keys) or any(not isinstance(r, str) or not r.strip() for r in reasons):
        raise pytest.UsageError(
            f"{item.nodeid}: @pytest.mark.{MARK}(none='why') declares that the test checks no "
            "guarantee: give a reason, and no guarantees beside it")
    if not keys and not reasons:
        raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.{MARK}() names no guarantee; "
                                "a test of the suite itself says none='why'")
    return _ordered(keys)


def _overridden_marks(item: pytest.Item) -> list[pytest.Mark]:
    """The marks of the suite test that ``item`` overrides in a user's subclass, if any.

    A store's test class may override a suite test only to mark it
    ``xfail(reason=...)``; the override has no guarantee mark of its own, and
    without the original's the report would lose which guarantees that xfail
    gives up on.
    """
    cls, name = getattr(item, "cls", None), getattr(item, "originalname", None)
    for base in (cls.__mro__[1:] if cls is not None and name else ()):
        original = base.__dict__.get(name)
        if original is not None:
            return [m for m in getattr(original, "pytestmark", ()) if m.name == MARK]
    return []


_DECLARED = pytest.StashKey[list[str]]()


# --------------------------------------------------------------------------- causes
#
# One root cause (a store that trims user ids) turns a dozen tests red with
# messages that differ only in the ids and numbers they quote. A cause is the
# guarantee, the kind of the first wrong operation, and the message with every
# quoted value, id and number blanked out: the same bug in another test, or
# for another input, gives the same key.

_CALLS = ("append_message", "get_history", "search", "compact", "forget", "consistent_state",
          "recover")
_HISTORY_CALLS = {"append": "append_message", "read": "get_history"}
_CALL = re.compile(r"\b(" + "|".join(_CALLS) + r")\b")
# A Python repr of a string, whole or as the suite shortens it ('abc...(300 chars)').
# An apostrophe inside a word ("user's") opens nothing.
_QUOTED = re.compile(r"""(?<!\w)'(?:[^'\\\n]|\\.)*?(?:'|\\?\.\.\.\(\d+ chars\))"""
                     r"""|(?<!\w)"(?:[^"\\\n]|\\.)*?(?:"|\\?\.\.\.\(\d+ chars\))""")
_BRACKETED = re.compile(r"\[[^\[\]\n]*\]|\{[^{}\n]*\}|<[^<>\n]*>")
_HEXISH = re.compile(r"\b(?=[0-9a-f-]*\d)[0-9a-f][0-9a-f-]{7,}\b")
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?s?\b")
_HINT = re.compile(r"\s*\((?:seed \d+: replay|replay with)[^)]*\)")
_CAUSE_WIDTH = 140


def normalise(text: str) -> str:
    """A message's first line with the values blanked: what stays the same across inputs."""
    line = next((ln.strip() for ln in text.strip().splitlines() if ln.strip()), "")
    line = scrub(line)  # a fresh id's token (fresh.Namespace), if a store's message quotes it
    line = _HINT.sub("", line)
    line = _QUOTED.sub("…", line)
    for _ in range(3):  # nested brackets, innermost first
        line = _BRACKETED.sub(lambda m: m.group(0)[0] + "…" + m.group(0)[-1], line)
    line = _HEXISH.sub("…", line)
    line = _NUMBER.sub("N", line)
    line = re.sub(r"…(?:, …)+(?: \.\.\.)?", "…", line)  # a list of blanked values is one
    line = re.sub(r"\s+", " ", line).strip(" :")
    return line if len(line) <= _CAUSE_WIDTH else line[:_CAUSE_WIDTH - 1] + "…"


def cause_key(guarantee: str, op: str | None, detail: str) -> str:
    """``G9 get_history: get_history(…) returned an entry of user …``: stable across inputs.

    ``op`` is the kind of the first wrong operation: the first store method the
    message names, else the last call before the check failed.
    """
    named = _CALL.search(detail.strip().splitlines()[0] if detail.strip() else "")
    kind = named.group(1) if named else (op or "-")
    return f"{guarantee} {kind}: {normalise(detail)}"


def _cause(guarantee: Guarantee | str, op: str | None, detail: str,
           label: str | None = None) -> dict[str, Any]:
    key = guarantee_key(guarantee) or "unlabelled"
    cause = {"key": cause_key(key, op, detail), "guarantee": key,
             "message": (detail.strip().splitlines() or [""])[0][:500]}
    if label:
        cause["input"] = label
    return cause


def violation_causes(exc: BaseException) -> list[dict[str, Any]]:
    """The causes of a suite failure: one per failing input, anomaly kind, or the failure."""
    guarantee = getattr(exc, "guarantee", None)
    if not isinstance(guarantee, Guarantee):
        return [_cause(_guarantee_of_text(str(exc)), None, f"{type(exc).__name__}: {exc}")]
    parts = getattr(exc, "parts", None) or []
    if parts:
        return [_cause(v.guarantee, v.op, v.detail, label) for label, v in parts]
    anomalies = [a for a in getattr(exc, "anomalies", None) or []
                 if isinstance(getattr(a, "guarantee", None), Guarantee)]
    if anomalies:  # a concurrency failure: one cause per kind of anomaly in the history
        return [_anomaly_cause(a) for a in anomalies]
    return [_cause(guarantee, getattr(exc, "op", None), str(getattr(exc, "detail", exc)))]


def _anomaly_cause(anomaly: Any) -> dict[str, Any]:
    """The checker's own stable kind (``missing``, ``search-miss``...) is the cause: its
    messages quote history indexes and short ids that no blanking makes equal."""
    key = guarantee_key(anomaly.guarantee) or "unlabelled"
    kind = str(getattr(anomaly, "kind", "") or "").split(":", 1)[0]
    cause = _cause(anomaly.guarantee, _anomaly_op(anomaly), str(anomaly.message))
    if kind:
        cause["key"] = f"{key} {_anomaly_op(anomaly) or '-'}: {kind}"
        cause["kind"] = kind
    return cause


def _anomaly_op(anomaly: Any) -> str | None:
    ops = getattr(anomaly, "ops", None) or []
    f = getattr(ops[-1], "f", None) if ops else None
    return _HISTORY_CALLS.get(str(f), str(f)) if f else None


def _guarantee_of_text(text: str) -> str:
    named = failed_guarantees(text)
    return named[0] if named else "unlabelled"


def annotate(report: pytest.TestReport, excinfo: pytest.ExceptionInfo[BaseException] | None
             ) -> None:
    """Attach a failed suite test's causes (and every anomaly) to its report.

    ``user_properties`` travel with the report to an xdist controller, where
    the terminal summary and the JSON report read them.
    """
    if not report.failed or any(key == CAUSES for key, _ in report.user_properties):
        return
    if excinfo is not None:
        causes = violation_causes(excinfo.value)
        anomalies = [str(a) for a in getattr(excinfo.value, "anomalies", None) or []]
    else:
        text = failure_text(report)
        causes, anomalies = [_cause(_guarantee_of_text(text), None, _first_line(report))], []
    if report.when != "call":
        for cause in causes:
            cause["key"] = f"{cause['key']} (in {report.when})"
    report.user_properties.append((CAUSES, causes))
    if anomalies:
        report.user_properties.append((ANOMALIES, anomalies))


def report_causes(report: pytest.TestReport) -> list[dict[str, Any]]:
    for key, value in report.user_properties:
        if key == CAUSES and isinstance(value, list):
            return [c for c in value if isinstance(c, dict)]
    return []


def group_causes(failures: Iterable[tuple[str, Iterable[Mapping[str, Any]]]]
                 ) -> list[dict[str, Any]]:
    """Failures (nodeid, causes) grouped by cause, the cause with most tests first."""
    groups: dict[str, dict[str, Any]] = {}
    for nodeid, causes in failures:
        for cause in causes:
            key = str(cause.get("key", ""))
            group = groups.setdefault(key, {
                "cause": key, "guarantee": cause.get("guarantee", "unlabelled"),
                "example": cause.get("message", ""), "tests": [], "inputs": []})
            if cause.get("kind"):
                group["kind"] = cause["kind"]
            if nodeid not in group["tests"]:
                group["tests"].append(nodeid)
            if cause.get("input") and cause["input"] not in group["inputs"]:
                group["inputs"].append(cause["input"])
    return sorted(groups.values(), key=lambda g: (-len(g["tests"]), -len(g["inputs"]),
                                                  _order(g["guarantee"]), g["cause"]))


def _order(key: str) -> int:
    return GUARANTEE_KEYS.index(key) if key in GUARANTEE_KEYS else len(GUARANTEE_KEYS)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def cause_lines(groups: list[dict[str, Any]], failed: int, *, examples: int = 2,
                most: int = 20) -> list[str]:
    """The summary by cause: one line when one cause explains every failure.

    At most ``most`` causes, those behind the most tests first; the JSON report has all.
    """
    if not groups:
        return []
    head = f"{_plural(failed, 'failed test')}, {_plural(len(groups), 'cause')}"
    if len(groups) == 1 and not groups[0].get("kind"):
        return [f"{head}: {_cause_text(groups[0])}"]
    lines = [f"{head}:"]
    width = len(_plural(max(len(g["tests"]) for g in groups), "test"))
    for group in groups[:most]:
        count = _plural(len(group["tests"]), "test").rjust(width)
        lines.append(f"  {count}  {_cause_text(group)}")
        shown = [t.rsplit("::", 1)[-1] for t in group["tests"][:examples]]
        more = len(group["tests"]) - len(shown)
        lines.append(f"  {'':{width}}  e.g. {', '.join(shown)}"
                     + (f" and {more} more" if more > 0 else ""))
        if group.get("kind"):  # a checker's kind says little alone: show one of its messages
            lines.append(f"  {'':{width}}  {str(group['example'])[:_CAUSE_WIDTH]}")
    if len(groups) > most:
        lines.append(f"  ... and {_plural(len(groups) - most, 'more cause')} (every one is in "
                     "the --nomnesia-json report)")
    return lines


def _cause_text(group: Mapping[str, Any]) -> str:
    text = str(group["cause"])
    inputs = list(group.get("inputs") or [])
    if inputs:
        listed = ", ".join(inputs[:3]) + (f" (+{len(inputs) - 3} more)" if len(inputs) > 3 else "")
        text += f" [{listed}]"
    return text



class JsonReporter:
    """Collects every test's outcome on the process that owns the session's output."""

    def __init__(self, config: pytest.Config, path: str | os.PathLike[str]) -> None:
        self.config = config
        self.path = Path(path)
        self.tests: dict[str, dict[str, Any]] = {}
        self.started = time.time()
        self.clock = time.monotonic()

    # pytest hooks -------------------------------------------------------

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
                entry["guarantees"] = _ordered([*entry["guarantees"], *map(str, value)])
            elif key == CAUSES and isinstance(value, list):
                entry.setdefault("causes", []).extend(value)
            elif key == ANOMALIES and isinstance(value, list):
                entry["anomalies"] = [str(a) for a in value]  # all of them, however many shown
        outcome = _outcome(report)
        if outcome is None:
            return
        if _RANK[outcome] >= _RANK[entry["outcome"]]:
            entry["outcome"] = outcome
            entry["message"] = "" if outcome == "passed" else _first_line(report)
            if outcome == NOT_APPLICABLE:
                entry["message"] = skip_reason(report)
        if report.failed:
            named = failed_guarantees(failure_text(report))
            entry["failed_guarantees"] = _ordered([*entry["failed_guarantees"], *named])
            entry["guarantees"] = _ordered([*entry["guarantees"], *named])

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


RAN_OUTCOMES: frozenset[str] = frozenset({"passed", "failed", "error", "xpassed"})
"""Outcomes of tests that ran: only these exercise a guarantee."""
NOT_APPLICABLE = "not applicable"
"""The outcome of a test the store's profile cannot be judged by (SPEC.md, "Profiles")."""
_RANK = {"passed": 0, "skipped": 1, "xfailed": 1, NOT_APPLICABLE: 1, "xpassed": 2,
         "failed": 3, "error": 4}


def skip_reason(report: pytest.TestReport) -> str:
    """A skipped report's reason, without pytest's ``Skipped: `` prefix ("" if none)."""
    longrepr = report.longrepr
    reason = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else ""
    return reason.removeprefix("Skipped: ")


def is_not_applicable(report: pytest.TestReport) -> bool:
    """Whether a skip is the profile's not applicable (``profiles.not_applicable``)."""
    return bool(report.skipped) and skip_reason(report).startswith(NOT_APPLICABLE)


def _outcome(report: pytest.TestReport) -> str | None:
    """The phase's contribution to the test's outcome; None for a passing setup/teardown."""
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    if is_not_applicable(report):
        return NOT_APPLICABLE
    if report.when == "call":
        return str(report.outcome)
    if report.failed:
        return "error"
    if report.skipped:
        return "skipped"
    return None


def not_applicable_lines(reports: Sequence[pytest.TestReport], *, examples: int = 2
                         ) -> list[str]:
    """The terminal's account of not-applicable tests, grouped by what they need."""
    if not reports:
        return []
    groups: dict[str, list[str]] = {}
    for report in reports:
        reason = skip_reason(report)
        needs = reason.partition(": needs ")[2].partition(" (")[0] or reason
        groups.setdefault(needs, []).append(report.nodeid.rsplit("::", 1)[-1])
    lines = [f"{_plural(len(reports), 'test')} not applicable (never counted as a pass), by "
             "what they need that the profile lacks:"]
    width = max(len(needs) for needs in groups)
    for needs, names in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        shown = ", ".join(names[:examples]) + (f" and {len(names) - examples} more"
                                               if len(names) > examples else "")
        lines.append(f"  {len(names):>3}  {needs:<{width}}  e.g. {shown}")
    return lines


def _iso(stamp: float) -> str:
    return _dt.datetime.fromtimestamp(stamp, _dt.timezone.utc).isoformat(timespec="seconds")


def _option(config: pytest.Config, name: str) -> Any:
    try:
        return config.getoption(name)
    except ValueError:
        return None


INTERFACE_INFO = pytest.StashKey["tuple[str, str]"]()
"""The interface option and factory of a run on a library's own object, from the plugin."""
PROFILE_INFO = pytest.StashKey["dict[str, Any]"]()
"""The run's profile (``profiles.Resolved.to_json``), put here by the plugin."""
ADAPTER_INFO = pytest.StashKey["tuple[list[str], str | None]"]()
"""The built-in adapter's engines and factory, put here by the plugin: the report is
part of the suite's core, which never imports adapters (docs/architecture.md)."""


def run_metadata(config: pytest.Config) -> dict[str, Any]:
    """Who was tested, where, and with what: the row label of ``nomnesia report``."""
    adapter = _option(config, "--adapter")
    store = _option(config, "--store")
    seed = _option(config, "--nomnesia-seed")
    if seed is None:
        seed = getattr(sys.modules.get(f"{__package__}._run"), "settings", None)
        seed = getattr(seed, "seed", None) or os.environ.get("NOMNESIA_SEED")
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
    }


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
    tests = sorted(tests, key=lambda t: str(t["nodeid"]))
    summary: dict[str, int] = {}
    for test in tests:
        summary[test["outcome"]] = summary.get(test["outcome"], 0) + 1
    return {
        "format": FORMAT,
        "meta": {**run_metadata(config), "started": _iso(started),
                 "finished": _iso(time.time()), "duration": round(duration, 3),
                 "cpu_seconds": round(cpu_seconds(), 3), "exitstatus": exitstatus},
        "summary": summary,
        "guarantees": guarantee_verdicts(tests, judged=_judged(config)),
        "causes": group_causes((t["nodeid"], t.get("causes", ())) for t in tests
                               if t.get("outcome") in ("failed", "error")),
        "tests": tests,
    }


def _judged(config: pytest.Config) -> list[str] | None:
    profile = config.stash.get(PROFILE_INFO, None)
    return list(profile["judged"]) if profile else None


def guarantee_verdicts(tests: Iterable[Mapping[str, Any]], *,
                       judged: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
    """Per guarantee: tests that exercised it, how many failed on it, the first to fail.

    A guarantee is ``pass`` only if a test that exercises it passed: when
    every such test failed on another guarantee first (every search crashed
    the engine, so no G4 check ran), it is ``not reached``; when they were
    all skipped, ``skipped``; when the store's profile is not judged on it
    (``judged``: the keys it is judged on) or every test of it was not
    applicable, ``not applicable``. ``passed``, ``skipped``, ``not_reached``
    and ``not_applicable`` count the tests behind that.
    """
    verdicts: dict[str, dict[str, Any]] = {
        key: {"verdict": "not exercised", "tests": 0, "failed": 0, "first_failure": None,
              "passed": 0, "skipped": 0, "not_reached": 0, "not_applicable": 0}
        for key in GUARANTEE_KEYS}
    for test in tests:
        outcome = test.get("outcome")
        failed = set(test.get("failed_guarantees", ()))
        keys = set(test.get("guarantees", ())) | failed
        if outcome == NOT_APPLICABLE:
            for key in keys & verdicts.keys():
                verdicts[key]["not_applicable"] += 1
            continue
        if outcome not in RAN_OUTCOMES:
            for key in keys & verdicts.keys():
                verdicts[key]["skipped"] += 1  # a skipped test exercised nothing
            continue
        for key in keys:
            cell = verdicts[key]
            cell["tests"] += 1
            if key in failed:
                cell["failed"] += 1
                cell["first_failure"] = cell["first_failure"] or test["nodeid"]
            elif outcome in ("failed", "error"):
                cell["unattributed_failures"] = cell.get("unattributed_failures", 0) + 1
                cell["not_reached"] += 1
            else:
                cell["passed"] += 1
    outside = set() if judged is None else set(GUARANTEE_KEYS) - set(judged)
    for key, cell in verdicts.items():
        if cell["failed"]:
            cell["verdict"] = "fail"
        elif key in outside:
            cell["verdict"] = NOT_APPLICABLE
        elif cell["passed"]:
            cell["verdict"] = "pass"
        elif cell["not_reached"]:
            cell["verdict"] = "not reached"
        elif cell["skipped"]:
            cell["verdict"] = "skipped"
        elif cell["not_applicable"]:
            cell["verdict"] = NOT_APPLICABLE
    return verdicts


def verdict_text(failed: int, passed: int, skipped: int, not_reached: int,
                 not_applicable: int = 0) -> str:
    """A matrix cell: ``FAIL (2)``, ``pass``, ``pass (6 of 59, 53 skipped)``, ``not reached``,
    ``n/a``.

    A plain ``pass`` means a test that exercises the guarantee passed and none
    was skipped; skips are counted, and a guarantee that no test got to check
    (all failed on another guarantee first, all skipped, or all not applicable
    to the store's profile) never reads as a pass.
    """
    if failed:
        return f"FAIL ({failed})"
    if not passed:
        if not_reached:
            return "not reached" + (f" ({not_reached})" if not_reached > 1 else "")
        if skipped:
            return f"skipped ({skipped})"
        return NA_TEXT if not_applicable else NOT_EXERCISED
    # A test that failed on another guarantee may well have checked this one first,
    # so beside a passing test it does not qualify the pass; a skipped test checked nothing.
    return f"pass ({passed} of {passed + skipped}, {skipped} skipped)" if skipped else "pass"


NOT_EXERCISED = "—"
NA_TEXT = "n/a"
"""A cell whose guarantee the store's profile is not judged on."""


# Worker side: annotate every report with the guarantees its test declares.


def _item_judged(item: pytest.Item) -> set[str] | None:
    """The guarantee keys the profile a test ran under is judged on (None: not known)."""
    run = sys.modules.get(f"{__package__}._run")
    resolved = item.stash.get(run.ITEM_PROFILE, None) if run is not None else None
    if resolved is None:
        return None
    return {guarantee_key(g) or "" for g in resolved.profile.judged}

class _Annotator:
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            item.stash[_DECLARED] = declared(item) or []

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]
                                  ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if report.when == "setup":
            keys = item.stash.get(_DECLARED, None)
            if keys is None:  # added after collection by another plugin
                keys = declared(item) or []
            judged = _item_judged(item)
            if judged is not None and not is_not_applicable(report):
                keys = [k for k in keys if k in judged]  # a seed store is not judged on G4
            if keys:
                report.user_properties.append((PROPERTY, keys))
        return report


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
    config.pluginmanager.register(_Annotator(), ANNOTATOR_NAME)
    if not hasattr(config, "workerinput"):  # an xdist worker only annotates
        config.pluginmanager.register(JsonReporter(config, path), PLUGIN_NAME)


# Loaded on its own with ``-p nomnesia.suite.reporting``.

def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser.getgroup("nomnesia"))


def pytest_configure(config: pytest.Config) -> None:
    configure(config)


# --------------------------------------------------------------------------- the nox matrix
#
# Every leaf of ``nox -s matrix`` (one adapter on one Python) writes this JSON
# report; the text table, the GitHub Actions job summary and the HTML page are
# all built from those files, by ``python -m nomnesia.suite.reporting``:
#
#     python -m nomnesia.suite.reporting matrix DIR --adapters a,b --pythons 3.12,3.13
#     python -m nomnesia.suite.reporting leaf REPORT --exit CODE --label a --python 3.12
#
# ``leaf`` records the exit code that pytest really returned, so that a pytest
# that crashed (or never started) before writing its report still reads as an
# ERROR with its code, instead of a cell that silently did not run.

_LOOSE_GUARANTEE = re.compile(r"\b(G\d{1,2})(?: [a-z][a-z -]*[a-z])?|\bInputs\b")
_RAISED = re.compile(r"(?:\w+\.)*([A-Z]\w*(?:Error|Exception|Unavailable|Timeout|Lost|Closed))\b")
LEGEND: dict[str, str] = {guarantee_key(g) or "": str(g) for g in Guarantee}
"""``"G7"`` -> ``"G7 atomic compaction"``: the table's legend names every guarantee it lists."""


def guarantee_of(message: str, testname: str = "") -> str:
    """The one label of a failure the report could not attribute to a guarantee.

    Looser than ``failed_guarantees``: any ``G7`` in the message, then a ``test_g7``
    name, then the exception class it raised (a setup error, a missing engine ...).
    """
    for text in (message, testname):
        if m := _LOOSE_GUARANTEE.search(text):
            return m.group(1) or "Inputs"
        if m := re.search(r"test_g(\d{1,2})(?:_|\b)", text):
            return f"G{int(m.group(1))}"
    m = _RAISED.match(message)
    return m.group(1) if m else "unlabelled"


def label_order(label: str) -> tuple[int, str]:
    """G1..G12 by number, then Inputs and other labels, ``unlabelled`` last."""
    m = re.fullmatch(r"G(\d+)", label)
    return (int(m.group(1)), "") if m else (100 if label == "unlabelled" else 99, label)


@dataclass
class LeafCell:
    """One leaf's outcome, as a cell of the adapter x Python table."""

    status: str  # pass | fail | error | no tests | skipped | not run
    tests: int = 0
    skipped: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    """Failed tests per guarantee their failure names."""
    detail: str = ""
    unreached: list[str] = field(default_factory=list)
    """Guarantees every test of which stopped on another failure first."""
    untested: list[str] = field(default_factory=list)
    """Guarantees every test of which was skipped."""
    not_applicable: int = 0
    """Tests the store's profile cannot be judged by (counted apart from skips)."""
    profile: str = ""
    """The store's profile, when it is not the full one."""

    @property
    def ok(self) -> bool:
        return self.status in ("pass", "no tests", "skipped")

    def text(self) -> str:
        """Never a bare "pass" for what did not run: skips are counted, and a guarantee
        whose tests all stopped early on another failure reads "not reached"."""
        if self.status == "pass":
            ran = self.tests - self.skipped - self.not_applicable
            return f"pass ({ran}" + (
                f", {self.skipped} skipped" if self.skipped else "") + (
                f", {self.not_applicable} n/a ({self.profile})" if self.not_applicable else "") + (
                f"; {' '.join(self.untested)} skipped" if self.untested else "") + ")"
        if self.status == "skipped":
            return f"skipped ({self.skipped})"
        if self.status == "fail":
            return "FAIL " + " ".join(sorted(self.failed, key=label_order)) + (
                f" ({' '.join(self.unreached)} not reached)" if self.unreached else "")
        if self.status == "error":
            return f"ERROR ({self.detail})"
        return self.status


def leaf_cell(report: Mapping[str, Any]) -> LeafCell:
    """A leaf's cell from its JSON report; ``meta.exitstatus`` is pytest's exit code."""
    code = report.get("meta", {}).get("exitstatus")
    if code == 5:
        return LeafCell("no tests")
    if code not in (0, 1):
        return LeafCell("error", detail=f"pytest exit {code}")
    cell = LeafCell("pass")
    profile = report.get("meta", {}).get("profile") or {}
    cell.profile = str(profile.get("name") or "")
    for test in report.get("tests", ()):
        outcome = test.get("outcome")
        cell.tests += 1
        cell.skipped += outcome in ("skipped", "xfailed")  # as junit counted them
        cell.not_applicable += outcome == NOT_APPLICABLE
        if outcome in ("failed", "error"):
            labels = list(test.get("failed_guarantees") or ()) or [
                guarantee_of(str(test.get("message", "")), str(test.get("nodeid", "")))]
            for label in labels:
                cell.failed[label] = cell.failed.get(label, 0) + 1
    if code == 1 or cell.failed:
        cell.status = "fail"
        cell.failed = cell.failed or {"unlabelled": 1}
    elif cell.tests and cell.skipped + cell.not_applicable == cell.tests:
        cell.status = "skipped"  # e.g. an engine this machine cannot run: see the leaf's log
    verdicts = report.get("guarantees") or {}
    states = {k: str(v.get("verdict")) for k, v in verdicts.items() if isinstance(v, Mapping)}
    order = sorted(states, key=label_order)
    cell.unreached = [k for k in order if states[k] == "not reached"]
    cell.untested = [k for k in order if states[k] == "skipped"]
    return cell


def minor(version: str) -> str:
    """``3.12.1`` -> ``3.12``: a leaf is named by the Python its classifier names."""
    return ".".join(version.split(".")[:2])


def read_reports(directory: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every suite report in ``directory``; other JSON files and torn writes are left out."""
    reports = []
    for path in sorted(Path(directory).glob("*.json")):
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data, dict) and data.get("format") == FORMAT:
                reports.append(data)
    return reports


def matrix_cells(reports: Iterable[Mapping[str, Any]], adapters: Iterable[str],
                 pythons: Iterable[str], missing: Iterable[str] = ()
                 ) -> dict[tuple[str, str], LeafCell]:
    """(adapter, Python) -> cell; a leaf without a report did not run (``missing``:
    the Pythons no interpreter was found for, which says why)."""
    by_leaf = {(str(r.get("meta", {}).get("label")), minor(str(r.get("meta", {}).get("python"))))
               : r for r in reports}
    absent = set(missing)
    return {(a, p): leaf_cell(by_leaf[(a, p)]) if (a, p) in by_leaf else
            LeafCell("not run", detail=f"no Python {p}" if p in absent else "")
            for a in adapters for p in pythons}


def render_table(cells: Mapping[tuple[str, str], LeafCell], adapters: Sequence[str],
                 pythons: Sequence[str], guarantees: Mapping[str, str] | None = None) -> str:
    """One table, adapter x Python, then what each failed guarantee is."""
    names = LEGEND if guarantees is None else guarantees
    header = ["adapter", *pythons]
    rows = [[a, *(cells[(a, p)].text() for p in pythons)] for a in adapters]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(row: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()

    out = [line(header), line(["-" * w for w in widths]), *map(line, rows)]
    labels = sorted({g for c in cells.values() for g in c.failed}, key=label_order)
    if labels:
        out.append("")
        out.append("failures, by the guarantee they name:")
        for label in labels:
            where = [f"{a}@{p} ({cells[(a, p)].failed[label]})" for a in adapters for p in pythons
                     if label in cells[(a, p)].failed]
            out.append(f"  {names.get(label, label)}: {', '.join(where)}")
    notes = [f"  {a}@{p}: {c.status}{' - ' + c.detail if c.detail else ''}"
             for (a, p), c in cells.items() if c.status == "not run" and c.detail]
    if notes:
        out.extend(["", "other outcomes:", *notes])
    return "\n".join(out)


def record_exit(path: str | os.PathLike[str], code: int, label: str, python: str
                ) -> dict[str, Any]:
    """Make the report at ``path`` say pytest's real exit code, writing one if pytest
    wrote none (it crashed, or stopped on a usage error); return the report."""
    target = Path(path)
    try:
        report: dict[str, Any] = json.loads(target.read_text(encoding="utf-8"))
        if report.get("format") != FORMAT:
            raise ValueError(target)
    except (OSError, ValueError):
        report = {"format": FORMAT, "meta": {"label": label, "adapter": label,
                                             "python": python}, "summary": {},
                  "guarantees": {}, "causes": [], "tests": []}
    if report["meta"].get("exitstatus") != code:
        report["meta"]["exitstatus"] = code
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n",
                          encoding="utf-8")
    return report


def job_summary(table: str, reports: list[dict[str, Any]]) -> str:
    """Markdown for a CI job summary: the table as text, then the guarantee matrix."""
    from .report_html import build_matrix, render_markdown

    return f"```text\n{table}\n```\n\n{render_markdown(build_matrix(reports))}\n"


def _append(path: str | None, text: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)


def _csv(text: str) -> list[str]:
    return [part for part in text.split(",") if part]


def main(argv: Sequence[str] | None = None) -> int:
    """``matrix``: print the table of a run directory (exit 1 unless every cell is
    green), write table.txt and matrix.html beside it; ``leaf``: record a leaf's
    exit code and print its cell."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m nomnesia.suite.reporting",
                                     description=main.__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    table = sub.add_parser("matrix", help="the adapter x Python table of a directory of reports")
    table.add_argument("directory", type=Path)
    table.add_argument("--adapters", type=_csv, required=True, help="rows, comma-separated")
    table.add_argument("--pythons", type=_csv, required=True, help="columns, comma-separated")
    table.add_argument("--missing", type=_csv, default=[],
                       help="Pythons without an interpreter (their cells say so)")
    table.add_argument("--summary", help="append Markdown to this file ($GITHUB_STEP_SUMMARY)")
    leaf = sub.add_parser("leaf", help="record one leaf's pytest exit code, print its cell")
    leaf.add_argument("report", type=Path)
    leaf.add_argument("--exit", type=int, required=True, dest="code")
    leaf.add_argument("--label", required=True, help="the adapter")
    leaf.add_argument("--python", required=True, help="the leaf's Python, e.g. 3.12")
    leaf.add_argument("--summary", help="append Markdown to this file ($GITHUB_STEP_SUMMARY)")
    ns = parser.parse_args(argv)

    if ns.command == "leaf":
        report = record_exit(ns.report, ns.code, ns.label, ns.python)
        cell = leaf_cell(report)
        print(cell.text())
        _append(ns.summary, job_summary(render_table(
            {(ns.label, ns.python): cell}, [ns.label], [ns.python]), [report]))
        return 0 if cell.ok else 1

    from .report_html import build_matrix, render_html

    reports = read_reports(ns.directory)
    cells = matrix_cells(reports, ns.adapters, ns.pythons, ns.missing)
    text = render_table(cells, ns.adapters, ns.pythons)
    (ns.directory / "table.txt").write_text(text + "\n", encoding="utf-8")
    (ns.directory / "matrix.html").write_text(render_html(build_matrix(reports)),
                                              encoding="utf-8")
    _append(ns.summary, job_summary(text, reports))
    print(f"\nnomnesia conformance, results in {ns.directory}\n\n{text}\n", flush=True)
    if all(c.status == "no tests" for c in cells.values()):
        print("warning: the suite collected no tests on any cell", file=sys.stderr)
    bad = [f"{a}@{p}" for (a, p), c in cells.items() if not c.ok]
    if bad:
        print(f"{len(bad)} of {len(cells)} cells not green: {', '.join(bad)}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
