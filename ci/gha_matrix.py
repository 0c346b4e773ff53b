"""Turn ``nox -l --json`` into the GitHub Actions job matrix: one job per runnable session.

The workflow names no adapter and no Python version: both come from the
noxfile, which reads them from the adapter registry and pyproject's classifiers.
Aggregate sessions (``matrix``, ``adapter(...)``, tagged ``aggregate``) are left
out, since their leaves already run as jobs of their own and the workflow's
gate job plays their part. A session that names no Python (lint, typecheck,
tests) runs on the newest Python of the leaves.

    nox -l --json | python ci/gha_matrix.py                  # print {"include": [...]}
    nox -l --json | python ci/gha_matrix.py --github-output  # also set `matrix=` for a step
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Mapping
from typing import Any

AGGREGATE_TAG = "aggregate"


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def build(sessions: Iterable[Mapping[str, Any]]) -> dict[str, list[dict[str, str]]]:
    """The ``{"include": [{session, python, adapter}, ...]}`` matrix, in nox's order."""
    listed = [s for s in sessions if AGGREGATE_TAG not in (s.get("tags") or [])]
    pythons = sorted({s["python"] for s in listed if isinstance(s.get("python"), str)},
                     key=_version_key)
    if not pythons:
        raise ValueError("no session of `nox -l --json` names a Python version")
    include = []
    for s in listed:
        python = s.get("python")
        include.append({
            "session": str(s["session"]),
            "python": python if isinstance(python, str) else pythons[-1],
            "adapter": str((s.get("call_spec") or {}).get("adapter", "")),
        })
    return {"include": include}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("listing", nargs="?", help="file with `nox -l --json` (default: stdin)")
    parser.add_argument("--github-output", action="store_true",
                        help="append `matrix=<json>` to $GITHUB_OUTPUT")
    args = parser.parse_args(argv)
    if args.listing:
        with open(args.listing, encoding="utf-8") as f:
            text = f.read()
    else:
        text = sys.stdin.read()
    matrix = json.dumps(build(json.loads(text)), separators=(",", ":"))
    print(matrix)
    if args.github_output:
        target = os.environ.get("GITHUB_OUTPUT")
        if not target:
            parser.error("--github-output needs $GITHUB_OUTPUT")
        with open(target, "a", encoding="utf-8") as f:
            f.write(f"matrix={matrix}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
