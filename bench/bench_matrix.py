"""Wall time of ``nox -s matrix`` with parallel leaves against ``-j 1``.

The issue's target: the whole matrix in under 10 minutes on 2 cores, and
parallel leaves at least 1.5x faster than one at a time. Venvs are built first
(``--install-only``) so that both timed runs measure the suite, not pip; the
runs then alternate so neither gets a warmer disk cache.

    python bench/bench_matrix.py [--jobs N]... [--session S]... [--rounds R] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_SECONDS = 600.0
TARGET_SPEEDUP = 1.5


def nox(args: list[str], log: Path | None) -> tuple[float, int]:
    """Run nox from this tree as a run of its own; return (wall seconds, exit code)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOMNESIA_NOX_")}
    command = [sys.executable, "-m", "nox", "-f", str(ROOT / "noxfile.py"), *args]
    start = time.monotonic()
    if log is None:
        code = subprocess.call(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.STDOUT)
    else:
        with log.open("w", encoding="utf-8") as f:
            code = subprocess.call(command, cwd=ROOT, env=env, stdout=f,
                                   stderr=subprocess.STDOUT)
    return time.monotonic() - start, code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, action="append", default=None,
                        help="parallel leaves; repeat to compare several (default: one per CPU)")
    parser.add_argument("--rounds", type=int, default=1, help="timed runs of each mode")
    parser.add_argument("--session", action="append", default=None,
                        help="session(s) to time (default: matrix); repeat for a subset, "
                             "e.g. --session 'adapter(memory)' --session 'adapter(pgvector)'")
    parser.add_argument("--out", type=Path, default=None,
                        help="directory for the JSON result and the nox logs")
    parser.add_argument("nox_args", nargs="*", help="more nox arguments (after --)")
    args = parser.parse_args()
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)

    def log(name: str) -> Path | None:
        return args.out / f"{name}.log" if args.out else None

    sessions = args.session or ["matrix"]
    base = ["-s", *sessions, *args.nox_args]
    jobs_list = args.jobs or [os.cpu_count() or 2]
    setup, code = nox([*base, "-j", str(max(jobs_list)), "--install-only"], log("install"))
    print(f"venvs ready in {setup:.1f} s (exit {code})", flush=True)
    modes = [("serial", 1)] + [(f"parallel-j{j}", j) for j in jobs_list]
    times: dict[str, list[float]] = {mode: [] for mode, _ in modes}
    codes: dict[str, list[int]] = {mode: [] for mode, _ in modes}
    for r in range(args.rounds):
        for mode, jobs in modes:
            wall, code = nox([*base, "-j", str(jobs)], log(f"{mode}-{r}"))
            times[mode].append(wall)
            codes[mode].append(code)
            print(f"{mode:12} -j {jobs}: {wall:7.1f} s  (nox exit {code})", flush=True)

    serial = min(times["serial"])
    print(f"\nnox -s {' '.join(sessions)} on {os.cpu_count()} CPUs "
          f"(targets: < {TARGET_SECONDS:.0f} s, >= {TARGET_SPEEDUP}x over -j 1)")
    print(f"  -j 1: {serial:.1f} s")
    met = False
    speedups: dict[str, float] = {}
    for mode, jobs in modes[1:]:
        best = min(times[mode])
        speedups[mode] = serial / best if best else 0.0
        ok = best < TARGET_SECONDS and speedups[mode] >= TARGET_SPEEDUP
        met = met or ok
        print(f"  -j {jobs}: {best:.1f} s, {speedups[mode]:.2f}x {'(targets met)' if ok else ''}")
    if args.out:
        result = {"sessions": sessions, "cpus": os.cpu_count(), "install_s": setup,
                  "wall_s": times, "speedup": speedups, "exit_codes": codes,
                  "targets_met": met}
        (args.out / "bench_matrix.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0 if all(c == 0 for cs in codes.values() for c in cs) else 1


if __name__ == "__main__":
    sys.exit(main())
