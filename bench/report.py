"""The benchmark report: every stack on embedded engines, in one run, as JSON, Markdown and PNGs.

    python bench/report.py --out DIR [--stacks a,b] [--n 200] [--users 8]
                           [--checker-ops 20000] [--suite | --junit DIR]
                           [--no-load | --load-stacks a,b --load-ops N --load-seed N ...]

Writes DIR/report.json, DIR/report.md and DIR/*.png. Per stack: latency of
append / get_history / search / compact (p50, p99), append throughput with 1
and ``--users`` concurrent users, the raw engine writes an append is made of
and the overhead ratio (bench_tiered.py measures all of that), the time from an
append's acknowledgement until search finds it, and the RSS of every engine
process. Also the history checker's throughput and, with ``--suite`` (slow) or
``--junit``, the conformance suite's wall time per adapter. Then the load
benchmark (bench_load.py: 10,000 users, concurrency 32, contents up to 65,536
code points) on the seed's FragileMemoryStore and every stack, with anomalies
per 1,000 operations, RSS per engine and per call type; its options are
bench_load.py's with a ``--load-`` prefix, ``--no-load`` skips it. A stack that
cannot run here still gets a row, with the reason, so a missing engine is visible.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import bench_tiered  # noqa: E402
from report_parts import engine_rss, short, table  # noqa: E402

from nomnesia.adapters import ADAPTERS  # noqa: E402
from nomnesia.adapters.engines import get_provider  # noqa: E402
from nomnesia.suite.core.checker import check  # noqa: E402
from nomnesia.suite.core.history import History  # noqa: E402

LATENCY = ("append", "history", "search", "compact", "converge")


# -- measurements ---------------------------------------------------------------

async def bench_stacks(names: list[str], n: int, users: int) -> tuple[dict[str, Any], list[Any]]:
    """Rows per stack on one shared provider; RSS is read while every engine still runs."""
    provider = get_provider()
    rows: dict[str, Any] = {}
    try:
        for name in names:
            try:
                ADAPTERS[name].load()
                rows[name] = await bench_tiered.bench_stack(name, provider, n, users)
            except Exception as exc:  # one broken stack must not hide the rest
                rows[name] = {"skipped": short(exc), "error": f"{type(exc).__name__}: {exc}"}
            print(f"{name}: {rows[name]}", file=sys.stderr, flush=True)
        rss = await asyncio.to_thread(engine_rss, provider)
    finally:
        await asyncio.to_thread(provider.close)
    return rows, rss


def checker_throughput(ops: int, seed: int = 1) -> dict[str, float]:
    """ops/s of the history checker on a history of the real workload (tests/bench_checker.py)."""
    import bench_checker

    history = asyncio.run(bench_checker.record(max(1, int(ops / 2.1)), seed))
    history = History(history.ops[:ops])
    wall, cpu = time.perf_counter(), time.process_time()
    anomalies = check(history, keep_last=4, search_staleness=0.0)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"ops": len(history), "anomalies": len(anomalies), "wall_s": wall,
            "ops_per_s_wall": len(history) / wall, "ops_per_s_cpu": len(history) / max(cpu, 1e-9)}


def run_suite(names: list[str], out: Path, timeout: float) -> dict[str, Any]:
    """Wall time of the conformance suite per adapter, each in a fresh pytest."""
    results: dict[str, Any] = {}
    for name in names:
        junit = out / "junit" / f"{name}.xml"
        started = time.perf_counter()
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "pytest", "--pyargs", "nomnesia.suite", "--adapter", name,
                 "-q", "-p", "no:cacheprovider", f"--junitxml={junit}"],
                capture_output=True, text=True, timeout=timeout, check=False)
            code: int | str = proc.returncode
        except subprocess.TimeoutExpired:
            code = "timeout"
        results[name] = {"wall_s": time.perf_counter() - started, "exit": code,
                         **_junit_counts(junit)}
        print(f"suite {name}: {results[name]}", file=sys.stderr, flush=True)
    return results


def _junit_counts(path: Path) -> dict[str, Any]:
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return {}
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    counts = {k: sum(int(s.get(k, 0)) for s in suites)
              for k in ("tests", "failures", "errors", "skipped")}
    return {**counts, "junit_time_s": sum(float(s.get("time", 0.0)) for s in suites)}


def read_junit(directory: Path) -> dict[str, Any]:
    """Suite timings from junit files already made (e.g. by ``nox -s matrix``); the adapter is
    the longest adapter name in the file's path."""
    results: dict[str, Any] = {}
    for path in sorted(directory.rglob("*.xml")):
        matches = [name for name in ADAPTERS if name in str(path.relative_to(directory))]
        if matches:
            name = max(matches, key=len)
            counts = _junit_counts(path)
            if counts:
                results[f"{name} ({path.stem})" if name in results else name] = {
                    "wall_s": counts["junit_time_s"], **counts}
    return results


# -- output -----------------------------------------------------------------------

def _cell(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def markdown(report: dict[str, Any]) -> str:
    meta = report["meta"]
    stacks: dict[str, Any] = report["stacks"]
    parts = [f"# nomnesia benchmark\n\n{meta['when']} on {meta['machine']}, Python "
             f"{meta['python']}; n={meta['n']} operations per measurement, "
             f"{meta['users']} concurrent users; made by `{meta['command']}`.\n",
             "## Latency (ms)\n\nconverge = from append's acknowledgement until search returns "
             "that exact content.\n"]
    header = ["stack"] + [f"{op} {q}" for op in LATENCY for q in ("p50", "p99")]
    rows = []
    for name, row in stacks.items():
        if "skipped" in row:
            rows.append([name, f"skipped: {row['skipped']}"] + [""] * (len(header) - 2))
        else:
            rows.append([name] + [_cell(row.get(f"{op}_{q}")) for op in LATENCY
                                  for q in ("p50", "p99")])
    parts.append(table(header, rows))
    parts.append("\n## Throughput and overhead over the raw engine writes\n\nraw = the writes "
                 "one append is made of (PostgreSQL INSERT + log RPUSH + index upsert), timed "
                 "interleaved with the store's appends; ratio = append p50 / raw p50 "
                 "(target <= 1.5).\n")
    users = meta["users"]
    header = ["stack", "appends/s 1 user", f"appends/s {users} users", "raw/s 1 user",
              f"raw/s {users} users", "raw p50 ms (pg + log + index)", "ratio"]
    rows = []
    for name, row in stacks.items():
        if "skipped" in row:
            continue
        raw = (f"{row['raw_sum_p50']:.2f} ({row['raw_pg_p50']:.2f} + {row['raw_log_p50']:.2f}"
               f" + {row['raw_index_p50']:.2f})" if "raw_sum_p50" in row else "-")
        rows.append([name, _cell(row.get("append1_per_s"), 0), _cell(row.get("append_per_s"), 0),
                     _cell(row.get("raw1_per_s"), 0), _cell(row.get("raw_per_s"), 0), raw,
                     _cell(row.get("ratio"))])
    parts.append(table(header, rows))
    parts.append("\n## Memory (RSS) per engine (process and its children), all stacks' "
                 "engines running\n\nThe in-process indexes (qdrant local mode, qdrant-edge) "
                 "count in the bench process; an engine that lives only while its store is "
                 "open (Milvus Lite) is gone by the time this is read. The bench's other child "
                 "is the engines' watchdog.\n")
    parts.append(table(["engine", "processes", "RSS MiB"],
                        [[r["engine"], str(r["processes"]), _cell(r["rss_mib"], 1)]
                         for r in report["rss"]]))
    c = report.get("checker")
    if c:
        parts.append(f"\n## History checker\n\n{c['ops']:,} ops ({c['anomalies']} anomalies) "
                     f"checked at {c['ops_per_s_cpu']:,.0f} ops/s CPU, "
                     f"{c['ops_per_s_wall']:,.0f} ops/s wall.\n")
    suite = report.get("suite")
    if suite:
        parts.append("\n## Conformance suite wall time per adapter\n")
        parts.append(table(["adapter", "wall s", "tests", "failures", "errors", "skipped"],
                            [[name, _cell(s["wall_s"], 1)] + [_cell(s.get(k)) for k in
                             ("tests", "failures", "errors", "skipped")]
                             for name, s in suite.items()]))
    else:
        parts.append("\n(suite wall time not measured: pass `--suite` or `--junit DIR`)")
    if report.get("load"):
        import bench_load

        parts.append("\n" + bench_load.markdown(report["load"]))
    return "\n".join(parts) + "\n"


def plots(report: dict[str, Any], out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    stacks = {k: v for k, v in report["stacks"].items() if "skipped" not in v}
    names = list(stacks)
    made = []

    def save(fig: Any, name: str) -> None:
        fig.tight_layout()
        path = out / name
        fig.savefig(path, dpi=110)
        plt.close(fig)
        made.append(path)

    fig, axes = plt.subplots(1, len(LATENCY), figsize=(4 * len(LATENCY), 4))
    for ax, op in zip(axes, LATENCY, strict=True):
        x = range(len(names))
        ax.bar([i - 0.2 for i in x], [stacks[s][f"{op}_p50"] for s in names], 0.4, label="p50")
        ax.bar([i + 0.2 for i in x], [stacks[s][f"{op}_p99"] for s in names], 0.4, label="p99")
        ax.set_xticks(list(x), names, rotation=45, ha="right")
        ax.set_title(f"{op} (ms)")
    axes[0].legend()
    save(fig, "latency.png")

    users = report["meta"]["users"]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    series = [("append1_per_s", "store, 1 user"), ("append_per_s", f"store, {users} users"),
              ("raw1_per_s", "raw, 1 user"), ("raw_per_s", f"raw, {users} users")]
    width = 0.8 / len(series)
    for k, (key, label) in enumerate(series):
        ax.bar([i - 0.4 + width * (k + 0.5) for i in range(len(names))],
               [stacks[s].get(key, 0.0) for s in names], width, label=label)
    ax.set_xticks(list(range(len(names))), names, rotation=45, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("appends/s (log scale)")
    ax.set_title("append throughput")
    ax.legend()
    save(fig, "throughput.png")

    fig, ax = plt.subplots(figsize=(7, 4))
    rss = report["rss"]
    ax.barh([r["engine"] for r in rss], [r["rss_mib"] for r in rss])
    ax.set_xlabel("RSS (MiB)")
    ax.set_title("memory per engine")
    save(fig, "rss.png")
    return made


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--stacks", default="",
                        help="comma-separated; default: memory and every engine stack")
    parser.add_argument("--n", type=int, default=200, help="operations per measurement")
    parser.add_argument("--users", type=int, default=8, help="concurrent users for throughput")
    parser.add_argument("--checker-ops", type=int, default=20_000,
                        help="history size for the checker's throughput (0: skip)")
    suite = parser.add_mutually_exclusive_group()
    suite.add_argument("--suite", action="store_true",
                       help="run the conformance suite per adapter and time it (slow)")
    suite.add_argument("--junit", type=Path, help="read suite timings from junit XML here")
    parser.add_argument("--suite-timeout", type=float, default=1800.0)
    parser.add_argument("--no-load", action="store_true", help="skip the load benchmark")
    parser.add_argument("--no-extra", action="store_true",
                        help="skip the engine start-up and index benchmarks (OUT/<name>.txt)")
    parser.add_argument("--load-stacks", default="",
                        help="comma-separated; default: fragile (the seed's store) and --stacks")
    import bench_load  # here: the load benchmark is optional and slow to import

    bench_load.add_arguments(parser, prefix="load-")
    args = parser.parse_args(argv)
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    names = [s for s in args.stacks.split(",") if s] or list(ADAPTERS)

    started = time.perf_counter()
    stacks, rss = asyncio.run(bench_stacks(names, args.n, args.users))
    report: dict[str, Any] = {
        "meta": {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                 "machine": f"{platform.machine()}, {os.cpu_count()} cores",
                 "python": platform.python_version(), "n": args.n, "users": args.users,
                 "command": "python bench/report.py " + " ".join(argv or sys.argv[1:])},
        "stacks": stacks, "rss": rss}
    if args.checker_ops > 0:
        report["checker"] = checker_throughput(args.checker_ops)
    if args.suite:
        report["suite"] = run_suite(names, out, args.suite_timeout)
    elif args.junit is not None:
        report["suite"] = read_junit(args.junit)
    if not args.no_load:
        cfg = bench_load.config_from(args, prefix="load-")
        print(f"load: seed {cfg.seed} (replay with --load-seed {cfg.seed})", file=sys.stderr,
              flush=True)
        load_names = ([s for s in args.load_stacks.split(",") if s]
                      or [bench_load.FRAGILE, *names])
        report["load"] = asyncio.run(bench_load.run_stacks(load_names, cfg))
    report["meta"]["wall_s"] = time.perf_counter() - started

    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (out / "report.md").write_text(markdown(report), encoding="utf-8")
    made = plots(report, out)
    print(f"wrote {out / 'report.json'}, {out / 'report.md'}, "
          + ", ".join(p.name for p in made))
    if not args.no_extra:
        side_reports(out)
    return 0


def side_reports(out: Path) -> None:
    """The engine start-up and index benchmarks, each printed and kept as OUT/<name>.txt;
    one that fails spoils not the rest (its failure is the file's text)."""
    for name in ("bench_engines", "bench_indexes"):
        done = subprocess.run([sys.executable, str(Path(__file__).with_name(f"{name}.py"))],
                              capture_output=True, text=True, check=False)
        text = done.stdout if done.returncode == 0 else (
            f"{name}.py failed (exit {done.returncode}):\n{done.stdout}{done.stderr}")
        print(text, end="", flush=True)
        (out / f"{name}.txt").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
