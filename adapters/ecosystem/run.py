"""Run one audit: the whole suite on the library, then its probes, in the Python it needs.

Most audited libraries install together (the ``ecosystem`` extra), and run in
the Python that runs this. A library whose pins conflict with the others'
(``Audit.requires``: Microsoft Agent Framework's Redis provider caps redis-py and
redisvl below what the rest need) gets a venv of its own under the results
directory, made once and reused while its requirements are unchanged; the
suite, its probes (which attribute the library's functions where the library is
installed) and the reproductions of its own causes run there.

::

    python -m nomnesia.adapters.ecosystem.run NAME --results DIR [pytest options]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from . import AUDITS, Audit

__all__ = ["CRASHED", "main", "python_for"]

CRASHED = 3
"""This command's exit status when the suite itself crashed (a segfault in a library's native
code, an INTERNALERROR): ``nox -s audits`` goes on with the other audits and fails at the end."""

ROOT = Path(__file__).resolve().parents[2]
"""The checkout: audits run from one (``pip install -e``), as ``nox -s audits`` does."""


def python_for(audit: Audit, results: Path) -> str:
    """The Python to run ``audit`` with: this one, or its own venv's (made when missing)."""
    if not audit.requires:
        return sys.executable
    venv = results / "venvs" / audit.name
    python, stamp = venv / "bin" / "python", venv / ".nomnesia-requires"
    wanted = "\n".join((str(ROOT), *audit.requires))
    if python.exists() and stamp.exists() and stamp.read_text(encoding="utf-8") == wanted:
        return str(python)
    print(f"{audit.name}: a venv of its own ({', '.join(audit.requires)}) in {venv}",
          flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--pre", "-e",
                    f"{ROOT}[embedded]", "pytest-asyncio", *audit.requires], check=True)
    stamp.write_text(wanted, encoding="utf-8")
    return str(python)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nomnesia.adapters.ecosystem.run")
    parser.add_argument("audit", choices=list(AUDITS))
    parser.add_argument("--results", type=Path, required=True)
    args, pytest_args = parser.parse_known_args(argv)
    audit, results = AUDITS[args.audit], args.results.resolve()
    results.mkdir(parents=True, exist_ok=True)
    python = python_for(audit, results)
    for stale in (results / f"{audit.name}.json", results / f"{audit.name}.xml"):
        stale.unlink(missing_ok=True)  # a crashed run must leave no earlier run's findings
    # Suite failures are the findings (exit 1), not a failure of this command.
    suite = subprocess.run([python, "-m", "pytest", "--pyargs", "nomnesia.suite", *audit.argv,
                            "-q", "-p", "no:cacheprovider",
                            f"--nomnesia-json={results / audit.name}.json",
                            f"--junitxml={results / audit.name}.xml", *pytest_args],
                           cwd=results, check=False)
    if suite.returncode not in (0, 1):
        how = (f"was killed by signal {-suite.returncode}" if suite.returncode < 0
               else f"exited {suite.returncode}")
        print(f"{audit.name}: the suite {how}, so it judged nothing: no results are kept, and "
              "the render names it among those without results", file=sys.stderr)
        return CRASHED
    module = "nomnesia.adapters.ecosystem"
    commands = [[python, "-m", f"{module}.report", "probe", audit.name, "--results", str(results)]]
    if audit.requires:  # its own causes' reproductions need its own libraries
        commands.append([python, "-m", f"{module}.repro", "--only-audit", audit.name,
                         "--results", str(results)])
    for command in commands:
        done = subprocess.run(command, check=False)
        if done.returncode:
            return done.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
