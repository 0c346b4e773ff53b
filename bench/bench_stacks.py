"""Each stack's suite, one run after another, wall and CPU split by process (issue 47).

Targets: every stack's suite at most 30 s wall on a quiet 2-core machine (``redis-cluster``
included), Milvus Lite at most 45 s, the Milvus server at most 75 s, and every engine
stack's pytest process at most 1.5x the ``redis`` run's, measured in the same run.

Give one Python per tree to compare (each a venv with that tree's nomnesia installed, with
the stacks' extras and pytest-asyncio): the runs alternate between them stack by stack, so
a machine that drifts during the run moves both alike. Each tree gets its own bytecode
cache, primed by an unmeasured ``redis`` run, as a user's Python keeps one.

    python bench/bench_stacks.py --python NEW/bin/python [--python OLD/bin/python]
                                 [--stack NAME]... [--seed N] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_matrix import cpu_model, split

STACKS = ("memory", "redis", "valkey", "redis-search", "pgvector", "qdrant", "qdrant-edge",
          "pgvector-ha", "redis-cluster", "milvus", "milvus-server")
WALL_TARGET = {"milvus": 45.0, "milvus-server": 75.0}  # seconds; every other stack: 30
DEFAULT_WALL = 30.0
PYTEST_RATIO = 1.5


def run(python: str, stack: str, seed: int, cache: Path, report: Path) -> dict[str, Any]:
    """One suite run; its report's meta (wall from outside too, the whole process)."""
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(cache)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    command = [python, "-m", "pytest", "--pyargs", "nomnesia.suite", "--adapter", stack, "-q",
               "-p", "no:cacheprovider", "-p", "no:langsmith_plugin",
               f"--nomnesia-seed={seed}", f"--nomnesia-json={report}"]
    started = time.monotonic()
    code = subprocess.call(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    meta: dict[str, Any] = (json.loads(report.read_text(encoding="utf-8"))["meta"]
                            if report.exists() else {})
    return {**meta, "exit": code, "wall": time.monotonic() - started}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", action="append", required=True,
                        help="a tree's venv Python; repeat to compare trees back to back")
    parser.add_argument("--stack", action="append", default=None, help="default: every stack")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="write the runs as JSON here")
    args = parser.parse_args()
    stacks = args.stack or list(STACKS)
    print(f"{cpu_model()}, {os.cpu_count()} CPUs; seed {args.seed}", flush=True)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="nomnesia-bench-stacks-") as tmp:
        caches = {p: Path(tmp, f"pycache-{i}") for i, p in enumerate(args.python)}
        for python in args.python:  # prime each tree's bytecode cache
            run(python, "redis", args.seed, caches[python], Path(tmp, "prime.json"))
        print(f"  {'stack':14} {'tree':>4} {'exit':>4} {'wall s':>7} {'CPU s':>7} {'pytest':>7} "
              f"{'engines':>8} {'x redis':>8}  loop", flush=True)
        for stack in stacks:
            for i, python in enumerate(args.python):
                report = Path(tmp, f"{i}-{stack}.json")
                meta = run(python, stack, args.seed, caches[python], report)
                own, engines, _ = split(meta)
                redis = next((r["pytest"] for r in rows
                              if r["stack"] == "redis" and r["tree"] == i), None)
                ratio = own / redis if own is not None and redis else None
                row = {"stack": stack, "tree": i, "python": python, "exit": meta["exit"],
                       "wall": meta["wall"], "cpu": meta.get("cpu_seconds"), "pytest": own,
                       "engines": engines, "ratio": ratio, "loop": meta.get("loop", "asyncio"),
                       "split": meta.get("cpu")}
                rows.append(row)
                target = WALL_TARGET.get(stack, DEFAULT_WALL)
                over = [f"over {target:g} s"] if row["wall"] > target else []
                if ratio is not None and ratio > PYTEST_RATIO and stack != "memory":
                    over.append(f"pytest over {PYTEST_RATIO:g}x redis")

                def num(value: float | None, width: int = 7) -> str:
                    return f"{value:{width}.1f}" if value is not None else f"{'?':>{width}}"

                print(f"  {stack:14} {i:>4} {meta['exit']:>4} {row['wall']:7.1f} "
                      f"{num(row['cpu'])} {num(own)} {num(engines, 8)} "
                      f"{(f'{ratio:8.2f}' if ratio is not None else ' ' * 8)}  {row['loop']}"
                      f"{'  (' + '; '.join(over) + ')' if over else ''}", flush=True)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "bench_stacks.json").write_text(
            json.dumps({"cpu": cpu_model(), "seed": args.seed, "pythons": args.python,
                        "runs": rows}, indent=2) + "\n", encoding="utf-8")
    return 0 if all(r["exit"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
