"""Turn the audits' suite reports into findings, ``docs/ecosystem.md`` and a findings check.

Per audited library, the inputs are in one results directory:
``NAME.json`` (the suite's ``--nomnesia-json`` report), ``NAME.xml`` (pytest's
``--junitxml``, for the full failure texts) and ``NAME.probes.json`` (the
targeted reproductions of ``probes.py``). Commands::

    python -m nomnesia.adapters.ecosystem.report probe NAME --results DIR
    python -m nomnesia.adapters.ecosystem.report render --results DIR \\
        [--expected adapters/ecosystem/expected.json] [--out docs/ecosystem.md] [--update]

``render`` groups every failing test under its causes (``causes.py``), writes
the document when every audit has results, and exits 1 only when the findings
(the set of causes per library, an unexplained failure counting as a cause of
its own) differ from the expectation file, in either direction. Suite failures
are findings, not failures of this command.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import re
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nomnesia.suite.contract import Guarantee

from . import AUDITS
from .causes import CAUSES, SEVERITIES, Attribution, Cause, attribute, causes_for, classify

__all__ = ["Findings", "diff_findings", "failure_parts", "findings_of", "load_results", "main",
           "render"]

COLUMNS = ("G1", "G2", "G3", "G4", "G5", "G6", "G7", "G8", "G9", "G10", "G11", "G12", "Inputs")
FINDINGS_MARK = "<!-- findings (checked by tests/test_ecosystem.py against expected.json):"
_BY_KEY: dict[str, Cause] = {c.key: c for c in CAUSES}


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
        parts = failure_parts("\n\n".join(anomalies)) if anomalies else failure_parts(text)
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


def _cell(findings: Findings, column: str) -> str:
    """The causes of the tests that failed on ``column``, and of probes that break it."""
    broken: set[str] = set()
    for key, tests in findings.causes.items():
        by_test = column in findings.broken.get(key, ())
        by_probe = "probe" in tests and key in _BY_KEY and column in _BY_KEY[key].guarantees
        if by_test or by_probe:
            broken.add(key)
    if broken:
        ordered = sorted(broken, key=lambda k: _ORDER.get(k, len(_ORDER) + 1))
        return "**fail** " + ", ".join(
            "?" if k.startswith("unclassified:") else f"[{_index(k)}](#{k})" for k in ordered)
    verdict = findings.verdicts.get(column, "")
    return {"pass": "pass", "fail": "**fail**", "not exercised": "–"}.get(verdict, "–")


_ORDER = {c.key: n for n, c in enumerate(sorted(CAUSES, key=lambda c: c.rank), 1)}
"""Cause numbers in the document: worst severity first, then as defined."""


def _index(key: str) -> str:
    return str(_ORDER.get(key, "?"))


def _one_line(text: str, limit: int = 220) -> str:
    text = re.sub(r"\s+", " ", text).strip().replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


RECORDED: dict[str, Attribution] = {}
"""Attributions the probes recorded where an audit ran (``load_results`` fills it)."""


def attributions(cause: Cause) -> list[Attribution | str]:
    """Each function of ``cause``, attributed where it is installed (a str: why it cannot be):
    here, or as recorded by the probe of an audit that ran in a venv of its own."""
    found: list[Attribution | str] = []
    for function in cause.functions:
        try:
            found.append(attribute(function))
        except LookupError as exc:
            found.append(RECORDED.get(function) or str(exc))
    return found


def _where(cause: Cause) -> str:
    named = [f"{a}" if isinstance(a, Attribution) else f"`{a.partition(':')[0]}` (not "
             f"attributed here: {a.partition(': ')[2]})" for a in attributions(cause)]
    return "; ".join(named) or "–"


def _repro(cause: Cause, repro: Mapping[str, Mapping[str, Any]]) -> str:
    if cause.repro is None:
        return "none (a contract gap: the library leaves it to the caller)"
    link = f"[`repro/{cause.repro}`](ecosystem/repro/{cause.repro})"
    outcome = repro.get(cause.key, {}).get("outcome")
    said = {"reproduces": "fails as stated in the last `nox -s audits`",
            "fixed": "**no longer fails: fixed?** (the last `nox -s audits` saw it pass)",
            "broken": "**the script itself is broken** (see `nox -s audits`)"}
    return f"{link}: {said.get(str(outcome), 'not run yet')}"


def _headline(text: str) -> str:
    """``text`` with a capital, unless it starts with code (``aset_messages``, ``k``)."""
    first = text.split(maxsplit=1)[0]
    return text[0].upper() + text[1:] if first.isalpha() and len(first) > 1 else text


def _summary_cell(findings: Findings, severity: str) -> str:
    keys = sorted((k for k in findings.causes if k in _BY_KEY
                   and _BY_KEY[k].severity == severity), key=lambda k: _ORDER[k])
    return ", ".join(f"[{_index(k)}](#{k})" for k in keys) or "–"


def render(findings: Mapping[str, Findings],
           repro: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """The whole of ``docs/ecosystem.md``."""
    repro = repro or {}
    shown = [n for n in AUDITS if n in findings]
    out = [
        "# Ecosystem audits: the suite on memory stores we did not write",
        "",
        "Generated by `nox -s audits` (`python -m nomnesia.adapters.ecosystem.report render`);",
        "do not edit by hand. Each library configuration runs the whole conformance suite, either",
        "through one of the suite's interface options (`--openai-session`, `--adk-sessions`,",
        "`--langchain-history`, `--langgraph-store`: mappings that add nothing the library lacks)",
        "or behind the thinnest faithful adapter in `nomnesia.adapters.ecosystem` (`--store`; its",
        "docstring says which behaviour is the library's and which the adapter's):",
        "",
        "```bash",
        "pip install 'nomnesia[ecosystem]'",
        "python -m pytest --pyargs nomnesia.suite --store nomnesia.adapters.ecosystem.mem0:factory",
        "```",
        "",
        "These failures are findings about the libraries, not failures of nomnesia:",
        "`nox -s audits` fails only when they change against `adapters/ecosystem/expected.json`",
        "(a new cause, or one that went away), or when a reproduction script stops failing for",
        "its stated reason. Every cause is graded, worst first:",
        "",
        "| severity | meaning |",
        "|---|---|",
        *(f"| {name} | {meaning} |" for name, meaning in SEVERITIES.items()),
        "",
        "Every cause names the functions responsible with the distribution and version that ship",
        "them, found at run time from the installed files (so a cause cannot be filed against the",
        "wrong package), says whether the library documents the behaviour (then it is a *hazard*,",
        "not a defect) and under which conditions it happens. Every cause that is not a contract",
        "gap has a standalone reproduction, `docs/ecosystem/repro/<cause>.py`: the library's",
        "public API and an engine, no nomnesia import, exit 1 while the defect is present",
        "(`docs/ecosystem/repro/README.md`). A *racy* cause shows only under concurrent timing: a",
        "run that misses it does not count as a fix. The randomised tests run with a pinned seed",
        "per configuration (the *seed* column; replay with `--nomnesia-seed`).",
        "",
        "## Summary by library, worst first",
        "",
        "| library | versions | seed | " + " | ".join(SEVERITIES) + " |",
        "|---|---|---|" + "---|" * len(SEVERITIES),
    ]
    for name in shown:
        f = findings[name]
        cells = " | ".join(_summary_cell(f, sev) for sev in SEVERITIES)
        out.append(f"| {AUDITS[name].title} | {f.versions or '?'} | {AUDITS[name].seed} "
                   f"| {cells} |")
    out += ["", "Numbers are the causes below.", "",
            "## Library × guarantee",
            "",
            "| library | tests | " + " | ".join(COLUMNS) + " |",
            "|---|---|" + "---|" * len(COLUMNS)]
    for name in shown:
        f = findings[name]
        tests = ", ".join(f"{v} {k}" for k, v in sorted(f.summary.items()))
        cells = " | ".join(_cell(f, c) for c in COLUMNS)
        out.append(f"| {AUDITS[name].title} | {tests} | {cells} |")
    out += ["", "Numbers in a cell are the causes below (*?*: not yet traced, listed at the end);",
            "*–*: no test of the suite reached that guarantee.", ""]
    out += ["## Causes", ""]
    for cause in sorted(CAUSES, key=lambda c: _ORDER[c.key]):
        libs = [n for n in AUDITS if n in findings and cause.key in findings[n].causes]
        if not libs:
            continue
        out += [f"### {_index(cause.key)}. {_headline(cause.what)}",
                f'<a id="{cause.key}"></a>', "",
                f"- **{cause.severity}**: cause `{cause.key}` "
                f"({cause.kind}{', racy' if cause.racy else ''}), breaks "
                f"{', '.join(cause.guarantees)}",
                f"- **where:** `{cause.function}`",
                f"- **functions:** {_where(cause)}",
                f"- **documented:** {cause.documented or 'not that we found'}",
                *([f"- **known issue:** {'; '.join(cause.issues)}"] if cause.issues else []),
                f"- **conditions:** {cause.conditions}",
                f"- **reproduction:** `{cause.reproduction}`",
                f"- **script:** {_repro(cause, repro)}"]
        for name in libs:
            shown = [t for t in findings[name].causes[cause.key] if t != "probe"]
            line = f"- **{AUDITS[name].title}:** "
            unseen = cause.racy and not findings[name].causes[cause.key]
            line += ", ".join(f"`{t}`" for t in shown[:6]) or (
                "not seen in the last run (racy)" if unseen
                else f"the probe only (no suite test can reach it: {cause.unreachable})"
                if cause.unreachable else "the probe only (no suite test reached it yet)")
            if len(shown) > 6:
                line += f" and {len(shown) - 6} more"
            if cause.key in findings[name].evidence:
                line += f"; probe: {_one_line(findings[name].evidence[cause.key])}"
            out.append(line)
        out.append("")
    unexplained = [(n, k) for n in AUDITS if n in findings for k in findings[n].keys
                   if k.startswith("unclassified:")]
    if unexplained:
        out += ["## Not yet traced to a cause", ""]
        for name, key in unexplained:
            tid = key.partition(":")[2]
            out.append(f"- {AUDITS[name].title}: `{tid}`: "
                       f"{_one_line(findings[name].messages.get(tid, ''))}")
        out.append("")
    block = {n: findings[n].keys for n in AUDITS if n in findings}
    out += [FINDINGS_MARK, json.dumps(block, indent=1, sort_keys=True), "-->", ""]
    return "\n".join(out)


def findings_block(doc: str) -> dict[str, list[str]]:
    """The findings a rendered document states (its machine-readable block)."""
    start = doc.index(FINDINGS_MARK) + len(FINDINGS_MARK)
    return dict(json.loads(doc[start: doc.index("-->", start)]))


def _versions(audit: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    parts = []
    for dist in AUDITS[audit].distributions:
        try:
            parts.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            parts.append(f"{dist} (not installed)")
    return ", ".join(parts)


def _probe(audit: str, results: Path) -> int:
    from .probes import run_probes

    probes: dict[str, str | None] = {}
    module, _, attr = AUDITS[audit].factory.partition(":")
    factory = getattr(importlib.import_module(module), attr)
    if AUDITS[audit].option != "--store":
        # The probes call the suite's methods; an interface audit's factory makes the
        # library's object, which the option's own mapping opens, as in the suite run.
        from nomnesia.suite.interfaces import by_option, store_factory

        factory = store_factory(by_option(AUDITS[audit].option), factory)
    probes = asyncio.run(run_probes(audit, factory))
    # Where the library is installed, each cause's functions are attributed (and recorded:
    # an audit in a venv of its own has libraries the report's Python may not have).
    attributed = {a.function if isinstance(a, Attribution) else a.partition(":")[0]:
                  [a.distribution, a.version] if isinstance(a, Attribution) else a
                  for cause in causes_for(audit) for a in attributions(cause)}
    results.mkdir(parents=True, exist_ok=True)
    (results / f"{audit}.probes.json").write_text(json.dumps(
        {"versions": _versions(audit), "probes": probes, "attributions": attributed},
        indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for key, evidence in probes.items():
        print(f"{audit}: {key}: {'reproduced: ' + evidence if evidence else 'not reproduced'}")
    return 0


def _found_causes(findings: Findings) -> list[Cause]:
    return [_BY_KEY[k] for k in findings.causes if k in _BY_KEY]


def _render(args: argparse.Namespace) -> int:
    names = args.only or list(AUDITS)
    findings = load_results(args.results, names)
    missing = [n for n in names if n not in findings]
    if missing:
        print(f"no results for {', '.join(missing)} in {args.results}", file=sys.stderr)
    expected_path: Path = args.expected
    expected = json.loads(expected_path.read_text(encoding="utf-8")) \
        if expected_path.exists() else {}
    actual = {n: f.keys for n, f in findings.items()}
    for name, f in findings.items():
        print(f"{name}: {len(f.causes)} causes: {', '.join(f.keys)}")
        unseen = sorted(set(expected.get(name, ())) - set(f.keys) & RACY)
        if unseen:
            print(f"{name}: not seen in this run (racy, kept as expected): {', '.join(unseen)}")
    if args.update:
        # A racy cause this run missed stays expected: its absence proves nothing.
        expected.update({n: sorted(set(keys) | (set(expected.get(n, ())) & RACY))
                         for n, keys in actual.items()})
        expected_path.write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n",
                                 encoding="utf-8")
        print(f"wrote {expected_path}")
    if not missing or args.update:
        everything = load_results(args.results, AUDITS)
        for name, f in everything.items():  # a racy cause this run missed is still a finding
            for key in set(expected.get(name, ())) & RACY - set(f.keys):
                f.causes[key] = []
        if set(everything) == set(AUDITS):
            repro = {}  # repro.json, and NAME.repro.json of audits run in venvs of their own
            for path in sorted(args.results.glob("*repro.json")):
                repro.update(json.loads(path.read_text(encoding="utf-8")))
            args.out.write_text(render(everything, repro), encoding="utf-8")
            print(f"wrote {args.out}")
        else:
            print(f"{args.out} not written: results for every library are needed")
    unattributed = [f"{c.key}: {a}" for n in findings for c in _found_causes(findings[n])
                    for a in attributions(c) if not isinstance(a, Attribution)]
    for line in unattributed:
        print(f"cannot attribute {line}: fix the cause's functions", file=sys.stderr)
    changed = diff_findings(expected, actual)
    for line in changed:
        print(line, file=sys.stderr)
    if changed:
        print("the findings changed: re-check them, then rerun with --update to accept",
              file=sys.stderr)
    return 1 if changed or unattributed or (missing and not args.update) else 0


def main(argv: list[str] | None = None) -> int:
    here = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(prog="python -m nomnesia.adapters.ecosystem.report")
    sub = parser.add_subparsers(dest="command", required=True)
    probe = sub.add_parser("probe", help="run the targeted reproductions of one library")
    probe.add_argument("audit", choices=list(AUDITS))
    probe.add_argument("--results", type=Path, required=True)
    rend = sub.add_parser("render", help="classify, write docs/ecosystem.md, check findings")
    rend.add_argument("--results", type=Path, required=True)
    rend.add_argument("--expected", type=Path, default=here / "expected.json")
    rend.add_argument("--out", type=Path, default=Path("docs/ecosystem.md"))
    rend.add_argument("--only", nargs="*", choices=list(AUDITS), default=None)
    rend.add_argument("--update", action="store_true",
                      help="accept the findings: write them into the expectation file")
    args = parser.parse_args(argv)
    if args.command == "probe":
        return _probe(args.audit, args.results)
    return _render(args)


if __name__ == "__main__":
    sys.exit(main())
