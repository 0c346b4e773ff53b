"""The known-bugs table (``bench/known_bugs/bugs.toml``) and the verdicts read from a run.

What a row says and how a suite report is judged against it, apart from how the runner
(``known_bugs.py``) makes venvs and runs the suite: this half imports nothing but the
standard library and is what ``tests/test_known_bugs.py`` checks on made-up reports.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomllib

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "bench" / "known_bugs"
TABLE = HERE / "bugs.toml"
EXPECTED = HERE / "expected.json"
WORK = ROOT / ".nox" / "_known_bugs"
"""Venvs (one per library release), the suite's reports and the last run's results."""
PYTHON = "3.11"
"""The oldest Python every row's releases support; also what ``tomllib`` needs."""
SEED = 4405
"""One seed for every run, so that a verdict replays (the suite's own ``--nomnesia-seed``)."""
RUN_TIMEOUT = 1800.0
"""Seconds one suite run may take before it is stopped and judged an error. The suite
bounds every call itself (``--nomnesia-timeout``); this only bounds a wedged process."""
STAMP = ".nomnesia-known-bugs"
"""A venv's record of what was installed in it: reinstalled only when that changes."""
RELEASES = ("affected", "fixed")
UNFIXED = "unfixed"


class Unusable(Exception):
    """Something the user must change before the benchmark can run: one sentence, no
    traceback (a row that names no release on PyPI, a missing uv...)."""


@dataclass(frozen=True)
class Bug:
    """One row of bugs.toml."""

    name: str
    dist: str
    affected: str
    fixed: str
    tracker: str
    guarantee: str
    description: str
    option: str = ""
    factory: str = ""
    args: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    extras: tuple[str, ...] = ()
    suite_extras: tuple[str, ...] = ()
    """Extras of nomnesia itself (``embedded`` for a row on the suite's own PostgreSQL)."""
    match: str = ""
    """A regex a failure of ``guarantee`` must match (its message or cause), when the
    library also fails that guarantee for another, unrelated reason on both releases."""
    needs: str = ""
    """Why the row cannot run today (no option reaches the store): listed, never run."""

    def version(self, release: str) -> str:
        return self.affected if release == "affected" else self.fixed

    def pin(self, release: str) -> str:
        extras = f"[{','.join(self.extras)}]" if self.extras else ""
        return f"{self.dist}{extras}=={self.version(release)}"


_FIELDS = {"name", "dist", "affected", "fixed", "tracker", "option", "factory", "guarantee",
           "description", "args", "requires", "extras", "suite_extras", "match", "needs"}
_LISTS = {"args", "requires", "extras", "suite_extras"}
_REQUIRED = ("name", "dist", "affected", "fixed", "tracker", "guarantee", "description")


def parse_table(text: str) -> list[Bug]:
    """The rows of bugs.toml (``[[bug]]`` tables), checked: every required field present,
    no unknown field, unique names, a guarantee the suite names (``G1``..``G12``,
    ``Inputs``), and an option and factory unless the row says what it ``needs``."""

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise Unusable(f"{TABLE.relative_to(ROOT)} is not valid TOML ({exc}): fix it") from None
    bugs: list[Bug] = []
    for i, row in enumerate(data.get("bug", []), 1):
        where = f"bug #{i} ({row.get('name', '?')})"
        unknown = set(row) - _FIELDS
        missing = [f for f in _REQUIRED if not row.get(f)]
        if not row.get("needs"):
            missing += [f for f in ("option", "factory") if not row.get(f)]
        if unknown or missing:
            raise Unusable(f"{where} in bugs.toml: " + "; ".join(
                ([f"unknown field(s) {sorted(unknown)}"] if unknown else [])
                + ([f"missing {missing}"] if missing else [])))
        if not re.fullmatch(r"G(?:[1-9]|1[0-2])|Inputs", row["guarantee"]):
            raise Unusable(f"{where}: guarantee {row['guarantee']!r} is not G1..G12 or Inputs")
        fields: dict[str, Any] = {}
        for key, value in row.items():
            if key in _LISTS:
                if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                    raise Unusable(f"{where}: {key} must be a list of strings")
                fields[key] = tuple(value)
            elif not isinstance(value, str):
                raise Unusable(f"{where}: {key} must be a string")
            else:
                fields[key] = value
        try:
            re.compile(fields.get("match", ""))
        except re.error as exc:
            raise Unusable(f"{where}: match is not a regular expression ({exc})") from None
        bugs.append(Bug(**fields))
    names = [b.name for b in bugs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise Unusable(f"bugs.toml names {dupes} more than once: names must be unique")
    return bugs


# --------------------------------------------------------------------------- verdicts


def failures(report: dict[str, Any]) -> list[tuple[str, str]]:
    """``(guarantee, text)`` for every guarantee a failed test names: the test's
    ``failed_guarantees`` (read from its message) and its causes' guarantees, each with
    the text that said it (the message, or the cause's key)."""
    found: list[tuple[str, str]] = []
    for test in report.get("tests", []):
        if test.get("outcome") not in ("failed", "error"):
            continue
        message = f"{test.get('nodeid', '')}: {test.get('message', '')}"
        for g in test.get("failed_guarantees", []):
            found.append((str(g), message))
        for cause in test.get("causes", []) or []:
            if isinstance(cause, dict) and cause.get("guarantee"):
                found.append((str(cause["guarantee"]), f"{message} | {cause.get('key', '')}"))
    return found


def guarantees_seen(report: dict[str, Any]) -> list[str]:
    """Every guarantee the failures name, in the suite's order (G1..G12, Inputs)."""
    seen = {g for g, _ in failures(report)}
    order = [f"G{n}" for n in range(1, 13)] + ["Inputs"]
    return [g for g in order if g in seen] + sorted(seen - set(order))


def hit(bug: Bug, report: dict[str, Any]) -> bool:
    """Whether a failure of the report names the bug's guarantee (and matches its
    ``match``, when the row has one)."""
    pattern = re.compile(bug.match) if bug.match else None
    return any(g == bug.guarantee and (pattern is None or pattern.search(text))
               for g, text in failures(report))


def verdict(bug: Bug, release: str, report: dict[str, Any] | None, error: str = "") -> str:
    """found / missed on the affected release, ok / false alarm on the fixed one; a run
    that wrote no report (the suite could not start, or crashed: an INTERNALERROR) is an
    ``error`` on either release — never a miss or a false alarm, as nothing was judged."""
    if report is None:
        return "error"
    if release == "affected":
        return "found" if hit(bug, report) else "missed"
    return "false alarm" if hit(bug, report) else "ok"


def regressions(results: dict[str, dict[str, str]], expected: dict[str, dict[str, str]]
                ) -> list[str]:
    """Sentences for each verdict that got worse than expected.json says: a bug found last
    time and missed now, a fixed release ok last time and failing (or not running) now. A
    row absent from expected.json, or an improvement, is no regression."""
    out = []
    for name, now in results.items():
        before = expected.get(name, {})
        if before.get("affected") == "found" and now.get("affected") not in (None, "found"):
            out.append(f"{name}: the affected release was found, now {now['affected']}")
        if before.get("fixed") == "ok" and now.get("fixed") not in (None, "ok"):
            out.append(f"{name}: the fixed release was ok, now {now['fixed']}")
    return out


def improvements(results: dict[str, dict[str, str]], expected: dict[str, dict[str, str]]
                 ) -> list[str]:
    """Verdicts better than expected.json (or rows it lacks): record them with
    ``--update-expected``."""
    out = []
    for name, now in results.items():
        before = expected.get(name)
        if before is None:
            out.append(f"{name}: not in expected.json yet")
            continue
        for release, good in (("affected", "found"), ("fixed", "ok")):
            if now.get(release) == good and before.get(release) not in (None, good):
                out.append(f"{name}: the {release} release was {before[release]}, now {good}")
    return out
