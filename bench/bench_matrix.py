"""Wall time of ``nox -s matrix`` with parallel leaves against ``-j 1``.

The issue's target: the whole matrix in under 10 minutes on 2 cores, and
parallel leaves at least 1.5x faster than one at a time. Venvs are built first
(``--install-only``) so that both timed runs measure the suite, not pip; the
runs then alternate so neither gets a warmer disk cache.

    python bench/bench_matrix.py [--jobs N] [--rounds R] [--out DIR] [-- nox args...]
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
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2,
                        help="parallel leaves (default: one per CPU)")
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
    setup, code = nox([*base, "-j", str(args.jobs), "--install-only"], log("install"))
    print(f"venvs ready in {setup:.1f} s (exit {code})", flush=True)
    times: dict[str, list[float]] = {"parallel": [], "serial": []}
    codes: dict[str, list[int]] = {"parallel": [], "serial": []}
    for r in range(args.rounds):
        for mode, jobs in (("serial", 1), ("parallel", args.jobs)):
            wall, code = nox([*base, "-j", str(jobs)], log(f"{mode}-{r}"))
            times[mode].append(wall)
            codes[mode].append(code)
            print(f"{mode:8} -j {jobs}: {wall:7.1f} s  (nox exit {code})", flush=True)

    serial, parallel = min(times["serial"]), min(times["parallel"])
    speedup = serial / parallel if parallel else 0.0
    print(f"\nnox -s {' '.join(sessions)}: parallel -j {args.jobs} {parallel:.1f} s, "
          f"-j 1 {serial:.1f} s, speedup {speedup:.2f}x "
          f"(targets: < {TARGET_SECONDS:.0f} s, >= {TARGET_SPEEDUP}x)")
    met = parallel < TARGET_SECONDS and speedup >= TARGET_SPEEDUP
    print("targets met" if met else "targets NOT met")
    if args.out:
        result = {"sessions": sessions, "jobs": args.jobs, "cpus": os.cpu_count(),
                  "install_s": setup, "parallel_s": times["parallel"],
                  "serial_s": times["serial"], "speedup": speedup, "exit_codes": codes,
                  "targets_met": met}
        (args.out / "bench_matrix.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0 if all(c == 0 for cs in codes.values() for c in cs) else 1


if __name__ == "__main__":
    sys.exit(main())
