"""Run the conformance suite on one adapter; leave pytest's exit code beside its junit XML.

nox's ``session.run`` does not return a command's exit code, and the matrix
table must tell "no tests" (5) and a usage error (4) from failed guarantees (1);
so a leaf runs pytest through this script, which records the code and passes
it on. Usage: ``python ci/run_leaf.py STEM ADAPTER [pytest args...]`` writes
``STEM.xml`` (junit), ``STEM.json`` (the suite's report) and ``STEM.exit``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    stem, adapter, *extra = argv
    xml, exit_file = Path(stem + ".xml"), Path(stem + ".exit")  # a stem holds dots: 3.12
    report = Path(stem + ".json")  # the guarantees' verdicts: "not reached" needs them
    for old in (xml, exit_file, report):
        old.unlink(missing_ok=True)
    command = [
        sys.executable, "-m", "pytest", "--pyargs", "nomnesia.suite", "--adapter", adapter,
        "-p", "no:cacheprovider", f"--junitxml={xml}", "-o", "junit_family=xunit2",
        f"--nomnesia-json={report}", *extra,
    ]
    code = subprocess.call(command)
    exit_file.write_text(f"{code}\n", encoding="utf-8")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
