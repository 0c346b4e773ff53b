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
are findings, not failures of this command. Reading the results into findings
is ``findings.py``; this module probes, renders and compares.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nomnesia.suite.interfaces import by_option, store_factory

from . import AUDITS
from .causes import CAUSES, SEVERITIES, Attribution, Cause, attribute, causes_for
from .findings import (
    RACY,
    RECORDED,
    Findings,
    diff_findings,
    failure_parts,
    findings_of,
    load_results,
)
from .probes import run_probes

__all__ = ["Findings", "diff_findings", "failure_parts", "findings_of", "load_results", "main",
           "render"]

COLUMNS = ("G1", "G2", "G3", "G4", "G5", "G6", "G7", "G8", "G9", "G10", "G11", "G12", "Inputs")
FINDINGS_MARK = "<!-- findings (checked by tests/test_ecosystem.py against expected.json):"
_BY_KEY: dict[str, Cause] = {c.key: c for c in CAUSES}


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
    probes: dict[str, str | None] = {}
    module, _, attr = AUDITS[audit].factory.partition(":")
    factory = getattr(importlib.import_module(module), attr)
    if AUDITS[audit].option != "--store":
        # The probes call the suite's methods; an interface audit's factory makes the
        # library's object, which the option's own mapping opens, as in the suite run.
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
