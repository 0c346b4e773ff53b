"""Where one matrix leaf's CPU and wall time go: a profile per leaf, as a table and a chart.

``bench_matrix.py`` times whole leaves; this splits a leaf into what it is made of, so
that speed work is decided from a profile, not from totals (issue 35):

1. ``venv+install``: a fresh venv (``uv venv``) and ``uv pip install -e .[extras]
   pytest-asyncio``, as nox's uv backend makes a leaf's venv (warm uv cache: the
   figure is what a fresh clone pays on a machine that has run the matrix before);
2. ``start``: Python, imports, plugins and collection of ``pytest --pyargs nomnesia.suite
   --adapter NAME -p no:cacheprovider`` (a leaf's very command) in that venv;
3. ``engines``: the adapter's engines started (``leaf_probe.py`` starts them before the
   first test, through the suite's engine session; a leaf starts the same ones lazily);
4. one phase per suite module, in the order pytest runs them;
5. ``teardown``: the suite stopping its engines, then the interpreter's exit.

Every phase has wall seconds, the pytest process's own CPU-seconds (suite, store and any
in-process engine), and the engine processes' CPU-seconds (what they burn while the
suite works or waits: ticks, checkpoints, background threads). The CPU is named, since
the machines that run this differ. ``--chart`` draws the CPU and wall of every leaf,
phase by phase (matplotlib, in the ``dev`` extra).

    python bench/bench_leaf.py --adapter redis --adapter milvus [--python 3.12]
                               [--out DIR] [--chart FILE.png] [--keep-venv]

The venvs live in a temp dir that is removed on exit (``--keep-venv DIR`` keeps them
there and reuses one that exists, for repeated runs: its install is then not timed).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import runpy
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_matrix import cpu_model  # noqa: E402  (a sibling script, not a package)

ADAPTERS: dict[str, Any] = runpy.run_path(str(ROOT / "adapters" / "registry.py"))["ADAPTERS"]
PROBE_ENV = "NOMNESIA_LEAF_PROBE"


def _children_cpu() -> float:
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return kids.ru_utime + kids.ru_stime


def timed(command: list[str], *, env: dict[str, str] | None = None,
          log: Path | None = None) -> tuple[float, float, int]:
    """(wall s, CPU-s of the command and every process it waited for, exit code)."""
    before, start = _children_cpu(), time.monotonic()
    with (log.open("a", encoding="utf-8") if log else open(os.devnull, "w")) as out:
        code = subprocess.call(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    return time.monotonic() - start, _children_cpu() - before, code


def make_venv(adapter: str, python: str, venvs: Path,
              log: Path | None) -> tuple[Path, dict[str, Any]]:
    """The leaf's venv (made and timed unless it exists), and its install phase."""
    venv = venvs / f"{python}-{adapter}"
    interpreter = venv / "bin" / "python"
    if interpreter.exists():
        return interpreter, {"phase": "venv+install", "wall_s": 0.0, "own_cpu_s": 0.0,
                             "engine_cpu_s": 0.0, "reused": True}
    uv = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    extras = ",".join(ADAPTERS[adapter].extras)
    target = f"{ROOT}[{extras}]" if extras else str(ROOT)
    wall1, cpu1, code = timed([uv, "venv", "-q", "--python", python, str(venv)], log=log)
    if code:
        raise SystemExit(f"uv venv --python {python} failed (exit {code})")
    wall2, cpu2, code = timed([uv, "pip", "install", "-q", "--python", str(interpreter), "-e",
                               target, "pytest-asyncio", "psutil"], log=log)
    if code:
        raise SystemExit(f"installing {target} failed (exit {code})")
    return interpreter, {"phase": "venv+install", "wall_s": round(wall1 + wall2, 3),
                         "own_cpu_s": round(cpu1 + cpu2, 3), "engine_cpu_s": 0.0}


def profile_leaf(adapter: str, python: str, venvs: Path, out: Path) -> dict[str, Any]:
    """Every phase of one leaf, and its totals."""
    log = out / f"leaf-{python}-{adapter}.log"
    log.unlink(missing_ok=True)
    interpreter, install = make_venv(adapter, python, venvs, log)
    probe = out / f"leaf-{python}-{adapter}.json"
    probe.unlink(missing_ok=True)
    # The leaf's environment as noxfile.install sets it: a bytecode cache in the venv
    # (a fresh venv's first leaf compiles into it), whatever PYTHONDONTWRITEBYTECODE says.
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTEST_ADDOPTS", "PYTHONDONTWRITEBYTECODE", "VIRTUAL_ENV")}
    env["PYTHONPYCACHEPREFIX"] = str(interpreter.parent.parent / "pycache")
    env[PROBE_ENV] = str(probe)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parent),
                                         *filter(None, [env.get("PYTHONPATH")])])
    command = [str(interpreter), "-m", "pytest", "--pyargs", "nomnesia.suite", "--adapter",
               adapter, "-p", "no:cacheprovider", "-p", "leaf_probe", "-q"]
    load = os.getloadavg()[0]
    wall, cpu, code = timed(command, env=env, log=log)
    recorded = json.loads(probe.read_text(encoding="utf-8")) if probe.exists() else {
        "phases": []}
    phases: list[dict[str, Any]] = [install, *recorded["phases"]]
    # What the probe could not see: after its last hook, the interpreter's exit.
    seen_wall = sum(p["wall_s"] for p in recorded["phases"])
    seen_cpu = sum(p["own_cpu_s"] + p["engine_cpu_s"] for p in recorded["phases"])
    if recorded["phases"]:
        last = phases[-1]
        last["wall_s"] = round(last["wall_s"] + max(wall - seen_wall, 0.0), 3)
        last["own_cpu_s"] = round(last["own_cpu_s"] + max(cpu - seen_cpu, 0.0), 3)
    return {"adapter": adapter, "python": python, "exit": code, "load_1min": round(load, 2),
            "tests": recorded.get("tests"), "descendants_left": recorded.get("descendants_left"),
            "suite_wall_s": round(wall, 3), "suite_cpu_s": round(cpu, 3),
            "wall_s": round(wall + install["wall_s"], 3),
            "cpu_s": round(cpu + install["own_cpu_s"], 3), "phases": phases}


def table(leaves: list[dict[str, Any]]) -> str:
    """A markdown table: a row per phase of every leaf (wall, own CPU, engines' CPU)."""
    lines = ["| leaf | phase | wall s | CPU-s (pytest process) | CPU-s (engine processes) |",
             "|---|---|---:|---:|---:|"]
    for leaf in leaves:
        name = f"{leaf['python']} {leaf['adapter']}"
        for p in leaf["phases"]:
            lines.append(f"| {name} | {p['phase']} | {p['wall_s']:.1f} | {p['own_cpu_s']:.1f} | "
                         f"{p['engine_cpu_s']:.1f} |")
        lines.append(f"| **{name}** | **total** (exit {leaf['exit']}, load {leaf['load_1min']}) "
                     f"| **{leaf['wall_s']:.1f}** | **{leaf['cpu_s']:.1f}** (both) | |")
    return "\n".join(lines)


def chart(leaves: list[dict[str, Any]], path: Path, cpu: str) -> None:
    """Two stacked bar charts, CPU-seconds and wall seconds, a bar per leaf, a colour per
    phase; the engines' CPU during the suite's modules is its own hatched segment."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    order: list[str] = []
    for leaf in leaves:
        for p in leaf["phases"]:
            if p["phase"] not in order:
                order.append(p["phase"])
    fixed = {"venv+install", "start", "engines", "teardown"}
    segments = [*order, "engines idle/busy during tests"]
    palette = plt.get_cmap("tab20")
    colours = {segment: palette(i % 20) for i, segment in enumerate(segments)}
    names = [f"{leaf['python']} {leaf['adapter']}\n(load {leaf['load_1min']:.1f})"
             for leaf in leaves]
    fig, axes = plt.subplots(1, 2, figsize=(15, 1.6 + 0.5 * len(leaves)), sharey=True)
    for ax, what in zip(axes, ("CPU-seconds", "wall seconds"), strict=True):
        left = [0.0] * len(leaves)
        for segment in segments:
            widths = []
            for leaf in leaves:
                total = 0.0
                for p in leaf["phases"]:
                    if what == "wall seconds":
                        total += p["wall_s"] if p["phase"] == segment else 0.0
                    elif segment == "engines idle/busy during tests":
                        total += p["engine_cpu_s"] if p["phase"] not in fixed else 0.0
                    elif p["phase"] == segment:
                        total += p["own_cpu_s"] + (p["engine_cpu_s"] if segment in fixed
                                                   else 0.0)
                widths.append(total)
            if not any(widths):
                continue
            ax.barh(names, widths, left=left, color=colours[segment], label=segment,
                    hatch="//" if segment.startswith("engines idle") else None,
                    edgecolor="white", linewidth=0.5)
            left = [a + b for a, b in zip(left, widths, strict=True)]
        ax.set_xlabel(what)
        ax.invert_yaxis()
        ax.grid(axis="x", alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center right", fontsize=8, frameon=False)
    fig.suptitle(f"One conformance leaf, phase by phase ({cpu}, {os.cpu_count()} CPUs; "
                 "load: 1-minute average as the leaf started)", fontsize=10)
    fig.tight_layout(rect=(0, 0, 0.84, 0.95))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adapter", action="append", default=[], choices=sorted(ADAPTERS),
                        help="a leaf's adapter; repeat for several")
    parser.add_argument("--python", default=f"{sys.version_info[0]}.{sys.version_info[1]}",
                        help="the leaf's Python (default: this one)")
    parser.add_argument("--out", type=Path, default=None, help="directory for JSON and logs")
    parser.add_argument("--chart", type=Path, default=None, help="write the PNG chart here")
    parser.add_argument("--keep-venv", type=Path, default=None, metavar="DIR",
                        help="make (or reuse) the venvs in DIR and keep them")
    parser.add_argument("--replot", type=Path, default=None, metavar="JSON",
                        help="only draw --chart from an earlier run's bench_leaf.json")
    args = parser.parse_args()
    if args.replot:
        done = json.loads(args.replot.read_text(encoding="utf-8"))
        chart(done["leaves"], args.chart or Path("bench-leaf.png"), done["cpu"])
        return 0
    cpu = cpu_model()
    with tempfile.TemporaryDirectory(prefix="nomnesia-leaf-") as tmp:
        out = args.out or Path(tmp) / "out"
        out.mkdir(parents=True, exist_ok=True)
        venvs = args.keep_venv or Path(tmp) / "venvs"
        venvs.mkdir(parents=True, exist_ok=True)
        print(f"{cpu}, {os.cpu_count()} CPUs; Python {args.python}", flush=True)
        leaves = []
        for adapter in args.adapter:
            leaf = profile_leaf(adapter, args.python, venvs, out)
            leaves.append(leaf)
            print(f"{args.python} {adapter}: exit {leaf['exit']}, {leaf['wall_s']:.1f} s wall, "
                  f"{leaf['cpu_s']:.1f} CPU-s (load {leaf['load_1min']})", flush=True)
        print(table(leaves))
        result = {"cpu": cpu, "cpus": os.cpu_count(), "python": args.python, "leaves": leaves}
        (out / "bench_leaf.json").write_text(json.dumps(result, indent=2) + "\n",
                                             encoding="utf-8")
        if args.chart:
            chart(leaves, args.chart, cpu)
            print(f"chart: {args.chart}")
    return 0 if all(leaf["exit"] == 0 for leaf in leaves) else 1


if __name__ == "__main__":
    sys.exit(main())
