"""Show nox every Python of the matrix that pyenv has: prints a line for the shell to run.

pyenv's ``python3.X`` shims answer only for the versions pyenv selects
(PYENV_VERSION, a .python-version file, the global version), and nox's
interpreter discovery (python-discovery) resolves a shim the same way, so a
Python that pyenv has but does not select is "not found". pyenv's own way to
select several at once is ``pyenv shell A B``, that is ``PYENV_VERSION=A:B``;
this prints that line: the current selection first (``python`` stays what it
was), then the newest installed build of each Python in pyproject's classifiers
(read by nox, as the noxfile reads them). Nothing is created or linked.

    eval "$(python ci/pythons.py)" && python -m nox -s matrix
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _release(name: str) -> tuple[int, ...] | None:
    return tuple(map(int, name.split("."))) if re.fullmatch(r"\d+\.\d+\.\d+", name) else None


def select(current: Sequence[str], installed: Iterable[str], wanted: Iterable[str]
           ) -> tuple[list[str], list[str]]:
    """(PYENV_VERSION's entries, the wanted ``3.X`` that no installed build provides)."""
    newest: dict[str, tuple[int, ...]] = {}
    for name in installed:
        release = _release(name)
        minor = ".".join(name.split(".")[:2])
        if release and release > newest.get(minor, ()):
            newest[minor] = release
    chosen = [v for v in current if v and v != "system"]
    missing = []
    for minor in wanted:
        if minor not in newest:
            missing.append(minor)
        elif not any(v == minor or v.startswith(minor + ".") for v in chosen):
            chosen.append(".".join(map(str, newest[minor])))
    return chosen, missing


def _pyenv(*args: str) -> list[str]:
    out = subprocess.run(["pyenv", *args], capture_output=True, text=True, check=True).stdout
    return [line.strip() for line in out.splitlines() if line.strip()]


def main() -> int:
    import nox.project  # the Python that runs nox has it

    wanted = nox.project.python_versions(nox.project.load_toml(ROOT / "pyproject.toml"))
    try:
        current = ":".join(_pyenv("version-name")).split(":")
        installed = _pyenv("versions", "--bare", "--skip-aliases")
    except (OSError, subprocess.CalledProcessError):
        print("# no pyenv here: nox looks for python3.X on PATH")
        return 0
    chosen, missing = select(current, installed, wanted)
    for minor in missing:
        print(f"ci/pythons.py: pyenv has no Python {minor} (`pyenv install {minor}`); "
              "its leaves will be skipped", file=sys.stderr)
    print(f"export PYENV_VERSION={shlex.quote(':'.join(chosen))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
