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
from .causes import CAUSES, Cause, classify

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
    report's message. A violation no cause explains is ``unclassified:<test>``.
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
        for column, part in failure_parts(text) or [("", text)]:
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

    A racy cause (shown only by concurrent timing) that a run missed is not a fix.
    """
    lines = []
    for audit in sorted(actual):
        want, got = set(expected.get(audit, ())), set(actual[audit])
        lines += [f"{audit}: new finding {k}" for k in sorted(got - want)]
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


_ORDER = {c.key: n for n, c in enumerate(CAUSES, 1)}


def _index(key: str) -> str:
    return str(_ORDER.get(key, "?"))


def _one_line(text: str, limit: int = 220) -> str:
    text = re.sub(r"\s+", " ", text).strip().replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render(findings: Mapping[str, Findings]) -> str:
    """The whole of ``docs/ecosystem.md``."""
    out = [
        "# Ecosystem audits: the suite on memory stores we did not write",
        "",
        "Generated by `nox -s audits` (`python -m nomnesia.adapters.ecosystem.report render`);",
        "do not edit by hand. Each library sits behind the thinnest faithful adapter in",
        "`nomnesia.adapters.ecosystem` (its docstring says which behaviour is the library's and",
        "which the adapter's), and the whole conformance suite runs on it:",
        "",
        "```bash",
        "pip install 'nomnesia[ecosystem]'",
        "python -m pytest --pyargs nomnesia.suite --store nomnesia.adapters.ecosystem.mem0:factory",
        "```",
        "",
        "These failures are findings about the libraries, not failures of nomnesia:",
        "`nox -s audits` fails only when they change against `adapters/ecosystem/expected.json`",
        "(a new cause, or one that went away). A cause marked *mapping* is a gap the library",
        "leaves for the contract (no tombstones, no length limits) that the obvious adapter",
        "shows; every other cause is the library's own behaviour. *probe* means a targeted",
        "reproduction (`adapters/ecosystem/probes.py`) confirmed it on the library. A *racy*",
        "cause shows only under concurrent timing: a run that misses it does not count as a fix.",
        "The suite tries every input of a test on its own and reports each that fails as a",
        "block of its own; each block is traced to its cause separately, so one test can show",
        "several causes, and a cell names the causes reported under that guarantee.",
        "",
        "## Library × guarantee",
        "",
        "| library | versions | tests | " + " | ".join(COLUMNS) + " |",
        "|---|---|---|" + "---|" * len(COLUMNS),
    ]
    for name in AUDITS:
        if name not in findings:
            continue
        f = findings[name]
        tests = ", ".join(f"{v} {k}" for k, v in sorted(f.summary.items()))
        cells = " | ".join(_cell(f, c) for c in COLUMNS)
        out.append(f"| {AUDITS[name].title} | {f.versions or '?'} | {tests} | {cells} |")
    out += ["", "Numbers in a cell are the causes below (*?*: not yet traced, listed at the end);",
            "*–*: no test of the suite reached that guarantee.", ""]
    out += ["## Causes", ""]
    for cause in CAUSES:
        libs = [n for n in AUDITS if n in findings and cause.key in findings[n].causes]
        if not libs:
            continue
        out += [f"### {_index(cause.key)}. {cause.what[0].upper()}{cause.what[1:]}",
                f'<a id="{cause.key}"></a>', "",
                f"- **cause** `{cause.key}` ({cause.kind}{', racy' if cause.racy else ''}), "
                f"breaks {', '.join(cause.guarantees)}",
                f"- **library function:** `{cause.function}`",
                f"- **reproduction:** `{cause.reproduction}`"]
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

    module, _, attr = AUDITS[audit].factory.partition(":")
    factory = getattr(importlib.import_module(module), attr)
    probes = asyncio.run(run_probes(audit, factory))
    results.mkdir(parents=True, exist_ok=True)
    (results / f"{audit}.probes.json").write_text(json.dumps(
        {"versions": _versions(audit), "probes": probes}, indent=1, ensure_ascii=False) + "\n",
        encoding="utf-8")
    for key, evidence in probes.items():
        print(f"{audit}: {key}: {'reproduced: ' + evidence if evidence else 'not reproduced'}")
    return 0


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
            args.out.write_text(render(everything), encoding="utf-8")
            print(f"wrote {args.out}")
        else:
            print(f"{args.out} not written: results for every library are needed")
    changed = diff_findings(expected, actual)
    for line in changed:
        print(line, file=sys.stderr)
    if changed:
        print("the findings changed: re-check them, then rerun with --update to accept",
              file=sys.stderr)
    return 1 if changed or (missing and not args.update) else 0


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
