"""mypy: strict on nomnesia.suite and nomnesia.adapters (pyproject), then noxfile.py and ci/.

The packages are checked under their installed names (``nomnesia.suite``), through a
directory of links made for the run: checked as ``suite.*``, mypy would miss them
(pyproject's strict override names ``nomnesia.*``). Exits 1 when mypy found anything.

    python ci/typecheck.py [mypy options]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="nomnesia-mypy-") as tmp:
        shadow = Path(tmp)
        (shadow / "nomnesia").mkdir()
        for package in ("suite", "adapters"):
            (shadow / "nomnesia" / package).symlink_to(ROOT / package)
        # suite/testing/ installs as nomnesia.testing (pyproject's package-dir): checked
        # under that name, and left out of nomnesia.suite (one file, one module name).
        (shadow / "nomnesia" / "testing").symlink_to(ROOT / "suite" / "testing")
        failed = False
        env = {**os.environ, "MYPYPATH": str(shadow)}
        for args in (["-p", "nomnesia.suite", "-p", "nomnesia.adapters", "-p", "nomnesia.testing",
                      "--exclude", "nomnesia/suite/testing/"], ["noxfile.py", "ci"]):
            done = subprocess.run([sys.executable, "-m", "mypy", *args, *argv], cwd=ROOT, env=env,
                                  capture_output=True, text=True, check=False)
            text = (done.stdout + done.stderr).replace(f"{shadow}/nomnesia/", "")
            print(text, end="", flush=True)  # this tree's paths, not the links'
            failed = failed or "Success:" not in text
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
