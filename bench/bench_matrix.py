"""Wall time of ``nox -s matrix``, and each leaf's CPU-seconds, split by process.

The targets (issue 47): every leaf green; the whole matrix in at most 1,350 CPU-seconds
with ``-j 2`` on 2 cores; and the pytest process of every engine stack at most 1.5x the
pytest process of the ``redis`` leaf on the same Python. A leaf's CPU is what its report
records (``meta.cpu``): the pytest process itself, each engine the run started (read
from ``/proc`` just before the engine stopped) and every other child (initdb, Milvus
Lite's server), so it is measured inside the run, not guessed from wall time. The
engines' part is their floor, which the suite cannot lower; the pytest part is what it
spends itself.

Venvs are built first (``--install-only``) so that the timed runs measure the
suite, not pip. ``--serial`` adds a ``-j 1`` run for comparison (about 30 min).

    python bench/bench_matrix.py [--jobs N]... [--serial] [--session S]... [--rounds R]
                                 [--out DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / ".nox" / "_results"
TARGET_SECONDS = 600.0
TARGET_CPU_SECONDS = 1350.0  # all leaves together (issue 47)
TARGET_PYTEST_RATIO = 1.5  # a stack's pytest process over the redis leaf's (issue 47)
NO_ENGINES = ("memory",)  # in-process stores: no engine stack to compare


def cpu_model() -> str:
    """The CPU the figures were measured on (the machines that run this differ)."""
    model, flags = platform.processor() or "unknown CPU", set[str]()
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
                break
    return f"{model} ({'AVX-512' if 'avx512f' in flags else 'no AVX-512'})"


def nox(args: list[str], run: str, log: Path | None) -> tuple[float, int]:
    """Run nox from this tree, its leaves reporting to ``RESULTS/run``; (wall s, exit code)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOMNESIA_NOX_")}
    env["NOMNESIA_NOX_RUN"] = run
    command = [sys.executable, "-m", "nox", "-f", str(ROOT / "noxfile.py"), *args]
    start = time.monotonic()
    with (log.open("w", encoding="utf-8") if log else open(os.devnull, "w")) as out:
        code = subprocess.call(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    return time.monotonic() - start, code


def leaves(run: str) -> dict[tuple[str, str], dict[str, Any]]:
    """(adapter, python) -> the leaf's report meta, read from the run's results."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted((RESULTS / run).glob("conformance-*.json")):
        meta = json.loads(path.read_text(encoding="utf-8")).get("meta", {})
        python, _, adapter = path.stem.removeprefix("conformance-").partition("-")
        found[(adapter, python)] = meta
    return found


def split(meta: dict[str, Any]) -> tuple[float | None, float | None, float | None]:
    """(pytest process, engines, other children) CPU-s of a leaf; None where not recorded."""
    cpu = meta.get("cpu")
    if not isinstance(cpu, dict):
        return None, None, None
    engines = sum(float(v) for v in cpu.get("engines", {}).values())
    return float(cpu["pytest"]), engines, max(0.0, float(cpu["children"]) - engines)


def cpu_table(found: dict[tuple[str, str], dict[str, Any]]) -> tuple[list[str], bool]:
    """Lines of the per-leaf table, and whether every stack's pytest process is in target."""
    lines = [f"  {'leaf':28} {'exit':>4} {'wall s':>8} {'CPU s':>8} {'pytest':>8} "
             f"{'engines':>8} {'other':>7} {'x redis':>8}  engines"]
    within = True
    for (adapter, python), meta in sorted(found.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        cpu = meta.get("cpu_seconds")
        own, engines, other = split(meta)
        redis = split(found.get(("redis", python), {}))[0]
        ratio = own / redis if own is not None and redis else None
        flag = ""
        if adapter not in NO_ENGINES:
            ok = ratio is not None and ratio <= TARGET_PYTEST_RATIO
            within = within and ok
            flag = "" if ok else f"  (over {TARGET_PYTEST_RATIO:g}x)"

        def num(value: float | None, width: int = 8) -> str:
            return f"{value:{width}.1f}" if value is not None else f"{'?':>{width}}"

        each = ", ".join(f"{k} {v:.1f}" for k, v in meta.get("cpu", {}).get("engines", {}).items())
        ratio_s = f"{ratio:8.2f}" if ratio is not None else f"{'':>8}"
        lines.append(f"  {python + ' ' + adapter:28} {meta.get('exitstatus', '?'):>4} "
                     f"{float(meta.get('duration', 0.0)):8.1f} "
                     f"{num(cpu if isinstance(cpu, float) else None)} {num(own)} "
                     f"{num(engines)} {num(other, 7)} {ratio_s}  {each}{flag}")
    return lines, within


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, action="append", default=None,
                        help="parallel leaves; repeat to compare several (default: one per CPU)")
    parser.add_argument("--serial", action="store_true", help="also time -j 1, for comparison")
    parser.add_argument("--rounds", type=int, default=1, help="timed runs of each mode")
    parser.add_argument("--session", action="append", default=None,
                        help="session(s) to time (default: matrix); repeat for a subset, "
                             "e.g. --session 'adapter(memory)' --session 'adapter(redis)'")
    parser.add_argument("--out", type=Path, default=None,
                        help="directory for the JSON result and the nox logs")
    parser.add_argument("nox_args", nargs="*", help="more nox arguments (after --)")
    args = parser.parse_args()
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)

    def log(name: str) -> Path | None:
        return args.out / f"{name}.log" if args.out else None

    stamp = f"{time.strftime('%Y%m%d-%H%M%S')}-bench{os.getpid()}"
    sessions = args.session or ["matrix"]
    base = ["-s", *sessions, *args.nox_args]
    jobs_list = args.jobs or [os.cpu_count() or 2]
    setup, code = nox([*base, "-j", str(max(jobs_list)), "--install-only"], f"{stamp}-install",
                      log("install"))
    print(f"{cpu_model()}, {os.cpu_count()} CPUs; venvs ready in {setup:.1f} s (exit {code})",
          flush=True)
    modes = ([("serial", 1)] if args.serial else []) + [(f"j{j}", j) for j in jobs_list]
    result: dict[str, Any] = {"sessions": sessions, "cpu": cpu_model(), "cpus": os.cpu_count(),
                              "install_s": setup, "runs": []}
    met, green = False, True
    for r in range(args.rounds):
        for mode, jobs in modes:
            run = f"{stamp}-{mode}-{r}"
            wall, code = nox([*base, "-j", str(jobs)], run, log(f"{mode}-{r}"))
            found = leaves(run)
            lines, within = cpu_table(found)
            all_green = code == 0 and bool(found) and all(
                m.get("exitstatus") == 0 for m in found.values())
            fast = wall < TARGET_SECONDS
            cpu = sum(float(m.get("cpu_seconds", 0.0)) for m in found.values())
            cheap = cpu <= TARGET_CPU_SECONDS
            green = green and all_green
            met = met or (jobs > 1 and cheap and within and all_green)
            print(f"\nnox -s {' '.join(sessions)} -j {jobs}: {wall:.1f} s wall (nox exit {code}), "
                  f"{cpu:.0f} CPU-s in {len(found)} leaves", flush=True)
            print("\n".join(lines), flush=True)
            print(f"  targets: <= {TARGET_CPU_SECONDS:.0f} CPU-s {'met' if cheap else 'MISSED'}; "
                  f"pytest process <= {TARGET_PYTEST_RATIO:g}x redis's "
                  f"{'met' if within else 'MISSED'};"
                  f" every leaf green {'yes' if all_green else 'NO'}; "
                  f"< {TARGET_SECONDS:.0f} s wall {'met' if fast else 'missed'}", flush=True)
            result["runs"].append({"mode": mode, "jobs": jobs, "round": r, "wall_s": wall,
                                   "cpu_s": cpu, "exit": code,
                                   "leaves": {f"{p}-{a}": m for (a, p), m in found.items()}})
    result["targets_met"] = met
    if args.out:
        (args.out / "bench_matrix.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0 if green else 1


if __name__ == "__main__":
    sys.exit(main())
