"""Run every cause's standalone reproduction and check it still fails for its stated reason.

Each cause that is not a contract gap has a script, ``docs/ecosystem/repro/<key>.py``
(what a script must do: that directory's README). This runner starts the
engines the scripts ask for (``# needs: postgres`` / ``# needs: redis``), runs
each in a process of its own with the engines' addresses in its environment,
and reads the outcome:

- ``reproduces``: it exited 1 and printed a line matching the cause's ``shows``;
- ``fixed``: it exited 0 (the defect did not show); ``report`` marks the cause fixed;
- ``broken``: anything else (a crash, a timeout, exit 1 for another reason), or
  the script is missing: the reproduction itself needs fixing, and this command
  fails.

::

    python -m nomnesia.adapters.ecosystem.repro [--results DIR] [--dir DIR]
        [--audits NAME ...] [KEY ...]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from . import AUDITS
from ._engines import provider
from .causes import CAUSES, Cause, repro_dir

__all__ = ["ENGINES", "Outcome", "main", "needs", "run_one"]

ENGINES = {"postgres": ("postgres", "NOMNESIA_REPRO_POSTGRES"),
           "redis": ("redis-search", "NOMNESIA_REPRO_REDIS")}
"""``# needs:`` name → (the provider's engine, the variable that carries its URL)."""
TIMEOUT = 120.0
_NEEDS = re.compile(r"^# needs: (.+)$", re.M)


@dataclass
class Outcome:
    key: str
    outcome: str
    """``reproduces``, ``fixed`` or ``broken``."""
    seconds: float
    output: str
    """The script's last lines (stdout and stderr), what the report quotes."""


def needs(script: Path) -> set[str]:
    """The engines a script asks for in its ``# needs:`` lines."""
    found = {name for line in _NEEDS.findall(script.read_text(encoding="utf-8"))
             for name in line.replace(",", " ").split()}
    unknown = found - ENGINES.keys()
    if unknown:
        raise ValueError(f"{script.name}: unknown engine(s) {sorted(unknown)}; "
                         f"known: {sorted(ENGINES)}")
    return found


def run_one(cause: Cause, script: Path, env: dict[str, str]) -> Outcome:
    started = time.monotonic()
    if not script.exists():
        return Outcome(cause.key, "broken", 0.0, f"no reproduction script {script}")
    try:
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              timeout=TIMEOUT, env=env, cwd=script.parent, check=False)
    except subprocess.TimeoutExpired:
        return Outcome(cause.key, "broken", TIMEOUT, f"no answer within {TIMEOUT:.0f} s")
    output = (proc.stdout + proc.stderr).strip()
    tail = "\n".join(output.splitlines()[-12:])
    if proc.returncode == 0:
        outcome = "fixed"
    elif proc.returncode == 1 and cause.shows and re.search(cause.shows, proc.stdout, re.M):
        outcome = "reproduces"
    else:
        outcome = "broken"
        tail = f"exit {proc.returncode}; expected a line matching {cause.shows!r}\n{tail}"
    return Outcome(cause.key, outcome, round(time.monotonic() - started, 2), tail)


def run(causes: Sequence[Cause], directory: Path) -> list[Outcome]:
    """Every script of ``causes``, with the engines they need started once for all."""
    scripts = {c.key: directory / str(c.repro) for c in causes}
    wanted: set[str] = set()
    for script in scripts.values():
        if script.exists():
            wanted |= needs(script)
    env = dict(os.environ)
    for name in sorted(wanted):
        engine, variable = ENGINES[name]
        env[variable] = provider().url(engine)
    outcomes = []
    for cause in causes:
        outcome = run_one(cause, scripts[cause.key], env)
        print(f"{outcome.key}: {outcome.outcome} ({outcome.seconds:.1f} s)"
              + ("" if outcome.outcome == "reproduces" else f"\n  {outcome.output}"), flush=True)
        outcomes.append(outcome)
    return outcomes


def venv_audit(cause: Cause) -> str | None:
    """The audit whose venv of its own runs ``cause``'s script, or None: this venv does.

    A script needs the libraries of the audits it shows up in; when every one of them
    has a venv of its own (``Audit.requires``), ``run.py`` runs the script there, with
    ``--only-audit``, and the run without it leaves the script out. One rule, here, for both.
    """
    own = [a for a in cause.audits if a in AUDITS and AUDITS[a].requires]
    return own[0] if own and len(own) == len(cause.audits) else None


def _selected(keys: Iterable[str], audits: Iterable[str] | None = None,
              only_audit: str | None = None) -> list[Cause]:
    keys, audits = list(keys), None if audits is None else set(audits)
    if only_audit is not None:
        with_repro = [c for c in CAUSES if c.repro and venv_audit(c) == only_audit]
    else:
        with_repro = [c for c in CAUSES if c.repro and venv_audit(c) is None
                      and (audits is None or audits & set(c.audits))]
    unknown = set(keys) - {c.key for c in with_repro}
    if unknown:
        raise SystemExit(f"no reproduction for {sorted(unknown)} (contract gaps have none)")
    return [c for c in with_repro if not keys or c.key in keys]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nomnesia.adapters.ecosystem.repro")
    parser.add_argument("keys", nargs="*", help="cause keys (default: every reproduction)")
    parser.add_argument("--dir", type=Path, default=repro_dir())
    parser.add_argument("--audits", nargs="*", default=None,
                        help="only the causes of these audits (default: every cause)")
    parser.add_argument("--only-audit", default=None, metavar="NAME",
                        help="the causes of this audit alone, which runs in its own venv")
    parser.add_argument("--results", type=Path, default=None,
                        help="write repro.json (NAME.repro.json) there, for the report")
    args = parser.parse_args(argv)
    outcomes = run(_selected(args.keys, args.audits, args.only_audit), args.dir)
    if args.results is not None:
        args.results.mkdir(parents=True, exist_ok=True)
        name = f"{args.only_audit}.repro.json" if args.only_audit else "repro.json"
        (args.results / name).write_text(json.dumps(
            {o.key: asdict(o) for o in outcomes}, indent=1, ensure_ascii=False) + "\n",
            encoding="utf-8")
    counts = {k: sum(o.outcome == k for o in outcomes) for k in ("reproduces", "fixed", "broken")}
    print(", ".join(f"{v} {k}" for k, v in counts.items()))
    return 1 if counts["broken"] else 0


if __name__ == "__main__":
    sys.exit(main())
