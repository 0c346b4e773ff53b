"""What an audit run found: its failing tests read into causes, per guarantee.

Its own module because reading results is apart from writing the document: the
inputs are the suite's JSON report and pytest's JUnit XML of one audited library
(the full failure texts), and the output is a ``Findings`` (causes, and the tests
each guarantee failed), which ``report.py`` renders and compares with
``expected.json`` (``diff_findings``).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nomnesia.suite.contract import Guarantee

from .causes import CAUSES, Attribution, classify

__all__ = ["RACY", "RECORDED", "Findings", "diff_findings", "failure_parts", "findings_of",
           "load_results", "short_id"]


RECORDED: dict[str, Attribution] = {}
"""Attributions the probes recorded where an audit ran (``load_results`` fills it)."""


def short_id(nodeid: str) -> str:
    """``suite/test_x.py::T::test_y[p]`` → ``test_x.py::T::test_y[p]``, wherever the suite lives."""
    path, sep, rest = nodeid.partition("::")
    return f"{Path(path).name}{sep}{rest}"


@dataclass
class Findings:
    """One library's findings: its causes (with the tests that showed each) and its verdicts."""

    audit: str
    causes: dict[str, list[str]] = field(default_factory=dict)
    """Cause key → short ids of the failing tests it explains ("probe" for a probe)."""
    evidence: dict[str, str] = field(default_factory=dict)
    messages: dict[str, str] = field(default_factory=dict)
    failed_on: dict[str, list[str]] = field(default_factory=dict)
    """Test short id → the guarantees its failure named."""
    broken: dict[str, set[str]] = field(default_factory=dict)
    """Cause key → the guarantee columns its violations were reported under."""
    verdicts: dict[str, str] = field(default_factory=dict)
    versions: str = ""
    summary: dict[str, int] = field(default_factory=dict)

    @property
    def keys(self) -> list[str]:
        return sorted(self.causes)


def _junit_texts(path: Path) -> dict[str, str]:
    """Test short id → the full failure text, from pytest's JUnit XML."""
    if not path.exists():
        return {}
    texts: dict[str, str] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        failure = case.find("failure")
        if failure is None:
            failure = case.find("error")
        if failure is None:
            continue
        cls = str(case.get("classname", ""))
        module, _, klass = cls.rpartition(".")
        key = f"{module.rpartition('.')[2]}.py::{klass}::{case.get('name')}"
        # The element text is the whole report; the message attribute only its first lines.
        texts[key] = failure.text or str(failure.get("message", ""))
    return texts


_HEAD = re.compile(r"^(" + "|".join(re.escape(str(g)) for g in Guarantee) + r"): ", re.M)
_TRAILER = re.compile(r"^\S+\.py:\d+: in \w+", re.M)
"""Where pytest's traceback starts after a suite message (``test_inputs.py:129: in test_x``)."""


def failure_parts(text: str) -> list[tuple[str, str]]:
    """A failure's text cut into its violations: (guarantee column, that violation's text).

    The suite reports every failing input of a test (and every anomaly of a
    concurrency run) as a block that starts, at the beginning of a line, with
    its guarantee (``G9 isolation: user id '*': ...``). Each block is classified
    on its own, so one test can show several causes, and a cause's patterns are
    never satisfied by pieces of two different blocks.
    """
    trailer = _TRAILER.search(text)
    body = text[: trailer.start()] if trailer else text
    heads = list(_HEAD.finditer(body))
    if not heads:
        return [("", body)] if body.strip() else []
    parts = []
    for head, after in zip(heads, [*heads[1:], None], strict=True):
        name = head.group(1)
        column = "Inputs" if name == "Inputs" else name.split()[0]
        parts.append((column, body[head.start(): after.start() if after else len(body)]))
    return parts


_MEANWHILE = re.compile(r"^\(meanwhile, (.*\bblocked the event loop\b.*)\)\s*$", re.M)
"""The sentence the suite appends to a failure when a store call also blocked the event loop
(``nomnesia.suite.core.loop``: the failure's own guarantee leads, the block follows)."""


def _blocked_loop(text: str) -> tuple[str, list[tuple[str, str]]]:
    """``text`` without its "(meanwhile, ... blocked the event loop ...)" sentence, and that
    sentence as a G12 violation of its own.

    A concurrency failure is classified from its anomalies, which do not carry the sentence,
    and any other failure would glue it to its last block: either way a blocked loop (SPEC
    G12) would go unseen or be counted under another guarantee.
    """
    found = _MEANWHILE.search(text)
    if found is None:
        return text, []
    rest = text[: found.start()] + text[found.end():]
    return rest, [("G12", f"{Guarantee.ERRORS}: {found.group(1)}")]


def findings_of(audit: str, report: Mapping[str, Any], texts: Mapping[str, str] | None = None,
                probes: Mapping[str, str | None] | None = None) -> Findings:
    """Classify every violation of every failing test of one suite report; add the probes.

    The full text comes from the JUnit XML when there is one, else from the
    report's message; a concurrency failure's anomalies come from the report, which
    keeps all of them. A violation no cause explains is ``unclassified:<test>``.
    """
    texts = texts or {}
    found = Findings(audit, summary=dict(report.get("summary", {})))
    meta = report.get("meta", {})
    found.versions = str(meta.get("library_versions", ""))
    for test in report.get("tests", ()):
        if test.get("outcome") not in ("failed", "error"):
            continue
        tid = short_id(str(test["nodeid"]))
        text = texts.get(tid) or str(test.get("message", ""))
        named = [str(g) for g in test.get("failed_guarantees", ())]
        # A concurrency failure prints its first anomalies (--nomnesia-anomalies); the JSON
        # keeps every one, each a block headed by its guarantee: classify them all.
        anomalies = [str(a) for a in test.get("anomalies", ())]
        text, blocked = _blocked_loop(text)
        parts = failure_parts("\n\n".join(anomalies)) if anomalies else failure_parts(text)
        parts += blocked
        for column, part in parts or [("", text)]:
            keys = classify(audit, part) or [f"unclassified:{tid}"]
            for key in keys:
                tests = found.causes.setdefault(key, [])
                if tid not in tests:
                    tests.append(tid)
                found.broken.setdefault(key, set()).update([column] if column else named)
                if key.startswith("unclassified:"):
                    found.messages.setdefault(tid, part.strip().splitlines()[0] if part.strip()
                                              else "")
        found.messages.setdefault(tid, str(test.get("message", "")))
        found.failed_on[tid] = named
    for key, evidence in (probes or {}).items():
        if evidence:
            found.causes.setdefault(key, []).append("probe")
            found.evidence[key] = evidence
    for key, cell in report.get("guarantees", {}).items():
        found.verdicts[key] = str(cell.get("verdict", ""))
    return found


RACY: frozenset[str] = frozenset(c.key for c in CAUSES if c.racy)


def diff_findings(expected: Mapping[str, Iterable[str]], actual: Mapping[str, Iterable[str]],
                  racy: frozenset[str] = RACY) -> list[str]:
    """Lines naming every cause that appeared or went away, per library; empty: unchanged.

    A racy cause (shown only by concurrent timing) is declared for the libraries it
    concerns, traced and graded: a run that missed it is not a fix, and a run that
    caught it is no news. So the check stays green across seeds and timings, and
    red for anything untraced or any deterministic cause that changed.
    """
    lines = []
    for audit in sorted(actual):
        want, got = set(expected.get(audit, ())), set(actual[audit])
        lines += [f"{audit}: new finding {k}" for k in sorted(got - want - racy)]
        lines += [f"{audit}: fixed (expected but not found) {k}"
                  for k in sorted(want - got - racy)]
    return lines


def load_results(results: Path, audits: Iterable[str]) -> dict[str, Findings]:
    out = {}
    for name in audits:
        path = results / f"{name}.json"
        if not path.exists():
            continue
        report = json.loads(path.read_text(encoding="utf-8"))
        probes_path = results / f"{name}.probes.json"
        probes = json.loads(probes_path.read_text(encoding="utf-8")) if probes_path.exists() \
            else {}
        for function, where in probes.get("attributions", {}).items():
            if isinstance(where, list):
                RECORDED[function] = Attribution(function, *where)
        found = findings_of(name, report, _junit_texts(results / f"{name}.xml"),
                            probes.get("probes", {}))
        found.versions = str(probes.get("versions", "")) or found.versions
        out[name] = found
    return out
