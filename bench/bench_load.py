"""Load benchmark: many users, large contents, mixed calls at concurrency 32, judged by the checker.

    python bench/bench_load.py [--out DIR] [--stacks fragile,memory,pgvector,redis]
                               [--users 10000] [--ops N | --duration S] [--concurrency 32]
                               [--mix append=0.62,read=0.18] [--seed N] [--quick]

One row per stack: the seed's ``FragileMemoryStore`` (``fragile``, the suite's
positive control) and every stack of the registry, each on a fresh embedded
provider of its own so that its engines' RSS is its own. A stack that cannot
run here still gets a row, with the reason.

The workload. ``--concurrency`` clients on one event loop make ``--ops`` calls
(or run for ``--duration`` seconds) over ``--users`` user ids. Users are drawn
Zipf-like (weight 1/rank, ranks shuffled by the seed): a long tail of users seen
once or twice, and a few hot users whose histories grow, compact and race, which
is where the anomalies a checker can prove live. Ids are ``u0`` .. ``u9999``
(``u1`` is a prefix of ``u10``: a store that filters by prefix leaks) plus the
suite's hostile ids (quotes, ``*``, ``:``, braces, emoji). Calls follow the
suite's :class:`~nomnesia.suite.core.workload.Mix` (append dominant; appends with a
``message_id``, retried, and retried with other content). Contents are mostly
short, some medium, some large up to SPEC's 65,536 code points (and some exactly
that), and carry NUL, emoji and CJK; each starts with a unique tag so that
searching for it is an exact-content search (SPEC G4).

What is measured:

- **anomalies per 1,000 operations**, the headline: every call goes through the
  suite's recorder (:meth:`History.record`), the suite's quiescent phase
  (``recover``, full reads, searches and ``consistent_state``, G11) runs on the
  ``--final-users`` most active users, and the suite's checker
  (:func:`nomnesia.suite.core.checker.check`) judges the whole history. "Operations"
  are the calls in the history (invokes, the quiescent phase included). The
  checker reports at most three anomalies of one kind per user, so the figure is
  a floor on a broken store's damage, and exactly 0 on a correct one. Contents
  longer than 256 code points are recorded as a digest (length + blake2b): the
  checker compares contents and queries only for equality, so this changes no
  verdict and keeps the recorded history from dominating the bench's own memory.
- **latency** (p50, p99) and **throughput** per call type during the storm.
- **RSS** of every engine (its process tree, as bench/report_parts.py's ``engine_rss``
  reads it) and of the store process (this one: the client, the in-process
  indexes, the history), sampled every ``rss_interval`` seconds from the store's
  opening to its closing: peak and end.
- **peak memory per call type**, by tracemalloc, in a sequential probe after the
  storm: for each call type, ``probe_reps`` calls at the largest sizes (65,536
  code point contents, a 65,536 code point query, compaction of a dozen such
  entries), each one's peak of the Python memory allocated while it ran (traced
  for that call only). tracemalloc and not an RSS delta because RSS is
  page-granular and the allocator rarely returns memory, so an RSS delta of one
  call is mostly zero or noise; tracemalloc sees every Python allocation of the
  call (the client's buffers, the embedding, the decoded rows), exactly, though
  not the engines' (their RSS above covers those). It runs sequentially and after
  the storm because its peak is process-wide (concurrent calls would blur into
  one another) and because tracing slows every allocation, which would distort
  the latencies.

Seeded: the seed (``--seed``, or ``NOMNESIA_SEED``, else random) fixes every
client's choices and is printed with the replay command. With a deterministic
in-process store it also fixes the interleaving; on engines the timing differs.

Not a test: it prints numbers and asserts nothing (tests/test_bench_load.py runs
``--quick``). bench/report.py folds the same rows into its report's "Load" table.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import asdict, fields, replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from load_storm import (  # noqa: E402
    DEFAULT_OPS,
    LOAD_MIX,
    OPS,
    QUICK,
    SPEC_MAX,
    Contents,
    LoadConfig,
    storm,
)
from report_parts import engine_rss, short, table  # noqa: E402

from nomnesia.adapters import ADAPTERS, open_store  # noqa: E402
from nomnesia.adapters.engines import get_provider  # noqa: E402
from nomnesia.adapters.fragile import FragileMemoryStore  # noqa: E402
from nomnesia.suite.core.workload import (  # noqa: E402
    Mix,
    resolve_seed,
)

FRAGILE = "fragile"
"""The seed's store: ``nomnesia.adapters.fragile.FragileMemoryStore``."""
# -- memory -----------------------------------------------------------------------

class RssSampler:
    """Samples ``engine_rss`` in a thread: peak and last RSS per engine and for this process."""

    STORE = "store process (bench: client, in-process indexes, history)"

    def __init__(self, provider: Any, interval: float) -> None:
        self.provider = provider
        self.interval = interval
        self.rows: dict[str, dict[str, Any]] = {}
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def sample(self) -> None:
        for r in engine_rss(self.provider):
            name = self.STORE if r["engine"].startswith("bench process") else r["engine"]
            row = self.rows.setdefault(name, {"peak_mib": 0.0, "start_mib": r["rss_mib"]})
            row["peak_mib"] = max(row["peak_mib"], r["rss_mib"])
            row["end_mib"] = r["rss_mib"]
            row["processes"] = r["processes"]
        self.samples += 1

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> RssSampler:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()  # the end: everything done, the store still open

    def table(self) -> list[dict[str, Any]]:
        return [{"engine": name, "processes": r["processes"],
                 "start_mib": round(r["start_mib"], 1), "peak_mib": round(r["peak_mib"], 1),
                 "end_mib": round(r["end_mib"], 1)}
                for name, r in self.rows.items()]


async def probe_memory(store: Any, reps: int) -> dict[str, Any]:
    """Peak traced Python memory of one call, per call type, at the largest sizes (MiB)."""
    contents = Contents(reps)
    big = [contents.make(f"probe {i}", i * 997 % SPEC_MAX, SPEC_MAX) for i in range(reps + 8)]
    keep = int(store.keep_last)
    out: dict[str, Any] = {}

    async def traced(f: str, make: Callable[[int], Awaitable[Any]]) -> None:
        # Tracing only while the call runs: setup calls stay fast, and the peak is the
        # call's own (memory allocated before start() is not traced, so no baseline).
        peaks = []
        for i in range(reps):
            tracemalloc.start()
            try:
                await make(i)
                peaks.append(tracemalloc.get_traced_memory()[1] / 2**20)
            finally:
                tracemalloc.stop()
        peaks.sort()
        out[f] = {"max_mib": round(peaks[-1], 2), "p50_mib": round(peaks[len(peaks) // 2], 2)}

    user = "probe ✓ mem"
    await traced("append", lambda i: store.append_message(user, "user", big[i]))
    await traced("read", lambda i: store.get_history(user, 10))
    await traced("search", lambda i: store.search(user, big[i], 5))
    for i in range(reps):
        for j in range(keep + 8):
            await store.append_message(f"{user} c{i}", "user", big[(i + j) % len(big)])
    await traced("compact", lambda i: store.compact(f"{user} c{i}"))
    await traced("forget", lambda i: store.forget(f"{user} c{i}" if i else user))
    return out


# -- stacks -----------------------------------------------------------------------

@contextlib.asynccontextmanager
async def open_stack(name: str, provider: Any, cfg: LoadConfig) -> AsyncIterator[Any]:
    if name == FRAGILE:
        async with FragileMemoryStore(seed=cfg.seed) as store:
            yield store
        return
    ADAPTERS[name].load()  # MissingDependency names the extra to install
    async with open_store(name, provider=provider) as store:
        yield store


def stack_names(names: list[str] | None = None) -> list[str]:
    """``fragile`` first (the seed's store), then the registry's stacks, in registry order."""
    return names or [FRAGILE, *(n for n in ADAPTERS if n != FRAGILE)]


async def bench_stack(name: str, cfg: LoadConfig) -> dict[str, Any]:
    """One row; a fresh provider per stack, so that engine RSS is this stack's alone."""
    started = time.perf_counter()
    engines = name != FRAGILE and name in ADAPTERS and bool(ADAPTERS[name].engines)
    provider = get_provider("embedded") if engines else None
    try:
        async with open_stack(name, provider, cfg) as store:
            opened = time.perf_counter() - started
            with RssSampler(provider, cfg.rss_interval) as rss:
                row = await storm(store, cfg)
                probed = time.perf_counter()
                row["memory_per_op"] = await probe_memory(store, cfg.probe_reps)
                row["probe_s"] = time.perf_counter() - probed
            row["rss"] = rss.table()
            row["rss_samples"] = rss.samples
            row["open_s"] = opened
    except Exception as exc:  # one broken stack must not hide the rest
        return {"skipped": short(exc), "error": f"{type(exc).__name__}: {exc}"[:2000],
                "wall_s": time.perf_counter() - started}
    finally:
        if provider is not None:
            await asyncio.to_thread(provider.close)
    row["wall_s"] = time.perf_counter() - started
    return row


def _config_json(cfg: LoadConfig) -> dict[str, Any]:
    return {**asdict(cfg), "mix": asdict(cfg.mix)}


def _config_of(data: dict[str, Any]) -> LoadConfig:
    return LoadConfig(**{**data, "mix": Mix(**data["mix"])})


async def run_stacks(names: list[str], cfg: LoadConfig,
                     timeout: float = 1800.0) -> dict[str, Any]:
    """The load section of a report: the workload, then one row per stack.

    Each stack runs in a fresh interpreter (this file with ``--row``): the store
    process's RSS is then that stack's alone, not the heap that earlier stacks left
    behind, and a stack that crashes or hangs costs its own row only.
    """
    rows: dict[str, Any] = {}
    for name in names:
        if name != FRAGILE and name not in ADAPTERS:
            rows[name] = {"skipped": f"unknown stack; known: {', '.join(stack_names())}"}
        else:
            rows[name] = await asyncio.to_thread(_row_in_subprocess, name, cfg, timeout)
        print(f"load {name}: {_brief(rows[name])}", file=sys.stderr, flush=True)
    return {"config": _config_json(cfg),
            "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": f"{os.cpu_count()} cores, shared with other jobs", "stacks": rows}


def _row_in_subprocess(name: str, cfg: LoadConfig, timeout: float) -> dict[str, Any]:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="nomnesia-load-") as tmp:
        out = Path(tmp) / "row.json"
        try:  # stderr inherited: the child's progress and errors show as they happen
            proc = subprocess.run(
                [sys.executable, str(Path(__file__).resolve()), "--row", name, "--config",
                 json.dumps(_config_json(cfg)), "--row-out", str(out)],
                stdout=subprocess.DEVNULL, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return {"skipped": f"timed out after {timeout:g} s",
                    "wall_s": time.perf_counter() - started}
        if proc.returncode != 0 or not out.exists():
            return {"skipped": f"bench process exited with {proc.returncode}",
                    "wall_s": time.perf_counter() - started}
        row: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return row


def _brief(row: dict[str, Any]) -> str:
    if "skipped" in row:
        return f"skipped: {row['skipped']}"
    return (f"{row['calls']} calls, {row['anomalies']} anomalies "
            f"({row['anomalies_per_1k']:.1f}/1k), {row['calls_per_s']:.0f} calls/s; "
            f"{row['wall_s']:.0f} s = open {row['open_s']:.0f} + storm {row['storm_s']:.0f} + "
            f"quiesce {row['quiesce_s']:.0f} + check {row['check_s']:.0f} + "
            f"probe {row['probe_s']:.0f}")


# -- output -----------------------------------------------------------------------

def _ms(op: dict[str, Any]) -> str:
    if not op["count"]:
        return "-"
    return f"{op['p50_ms']:.1f} / {op['p99_ms']:.1f}"


def markdown(load: dict[str, Any]) -> str:
    """The "Load" section: headline, latency, RSS and per-call memory tables."""
    cfg = load["config"]
    bound = (f"{cfg['ops']:,} calls" if cfg["ops"] is not None else "") + (
        f"{' or ' if cfg['ops'] is not None else ''}{cfg['duration']:g} s"
        if cfg["duration"] else "")
    mix = ", ".join(f"{k} {cfg['mix'][k]:g}" for k in OPS)
    parts = [f"## Load\n\n{cfg['users']:,} users (Zipf-like), {bound} by {cfg['concurrency']} "
             f"concurrent clients; mix {mix} (message_id {cfg['mix']['message_id']:g}, retry "
             f"{cfg['mix']['retry']:g}, conflict {cfg['mix']['conflict']:g}); contents up to "
             f"65,536 code points ({cfg['medium']:g} medium, {cfg['large']:g} large, "
             f"{cfg['at_max']:g} at the maximum, NUL and emoji in {cfg['odd']:g} of short ones); "
             f"seed {cfg['seed']} (replay: `python bench/bench_load.py --seed {cfg['seed']}`). "
             f"{load['when']}, {load['machine']}: the figures move with the machine's load.\n",
             "### Anomalies per 1,000 operations: the seed's store against ours\n\n"
             "Every call recorded and judged by the suite's checker (suite/checker.py), the "
             "suite's quiescent phase included (calls counts it too); users = distinct users "
             "the storm touched; `fragile` is the seed's FragileMemoryStore. The checker "
             "reports at most three anomalies of one kind per user: a broken store's figure "
             "is a floor.\n"]
    rows = []
    for name, r in load["stacks"].items():
        if "skipped" in r:
            rows.append([name, f"skipped: {r['skipped']}"] + [""] * 7)
            continue
        errors = sum(o["errors"] for o in r["ops"].values())
        rows.append([name, f"{r['calls']:,}", f"{r['users_touched']:,}", str(r["anomalies"]),
                     f"{r['anomalies_per_1k']:.2f}",
                     ", ".join(f"{k} {v}" for k, v in r["by_guarantee"].items()) or "-",
                     str(errors), f"{r['calls_per_s']:,.0f}", f"{r['wall_s']:.0f}"])
    parts.append(table(["stack", "calls", "users", "anomalies", "per 1,000", "by guarantee",
                         "errors", "calls/s", "wall s"], rows))
    errors = [f"- {name} {f}: {o['errors']} x {o['first_error']}"
              for name, r in load["stacks"].items() for f, o in r.get("ops", {}).items()
              if o["errors"]]
    if errors:
        parts.append("\nerrors = calls that raised something other than ValueError or "
                     "TypeError: indeterminate, which the checker allows (no faults are "
                     "injected here, so each is worth a look); wall s = the stack's whole row "
                     "(engines' start, storm, quiescent phase, check, memory probe).\n\n"
                     + "\n".join(errors))
    parts.append("\n### Latency under load, ms (p50 / p99) and calls/s\n")
    rows = []
    for name, r in load["stacks"].items():
        if "skipped" not in r:
            rows.append([name] + [f"{_ms(r['ops'][f])} ({r['ops'][f]['per_s']:,.0f}/s)"
                                  for f in OPS])
    parts.append(table(["stack", *OPS], rows))
    parts.append("\n### RSS under load, MiB, per engine and for the store process\n\n"
                 "Each stack in a fresh bench process on engines of its own; sampled from the "
                 "store's opening (start) to its closing (end). The store process is that "
                 "bench process (client, in-process indexes, the recorded history); an engine's "
                 "RSS sums its process tree, so PostgreSQL's shared buffers count once per "
                 "backend.\n")
    rows = []
    for name, r in load["stacks"].items():
        for e in r.get("rss", []):
            rows.append([name, e["engine"], str(e["processes"]),
                         f"{e['start_mib']:,.1f} / {e['peak_mib']:,.1f} / {e['end_mib']:,.1f}"])
    parts.append(table(["stack", "engine", "processes", "RSS MiB start / peak / end"], rows))
    parts.append("\n### Peak memory of one call in the store process, MiB (max / p50)\n\n"
                 "tracemalloc, one call at a time after the storm, at the largest sizes "
                 "(65,536 code point contents and query); engines' memory is in the RSS above.\n")
    rows = []
    for name, r in load["stacks"].items():
        mem = r.get("memory_per_op")
        if mem:
            rows.append([name] + [f"{mem[f]['max_mib']:.2f} / {mem[f]['p50_mib']:.2f}"
                                  for f in OPS])
    parts.append(table(["stack", *OPS], rows))
    return "\n".join(parts) + "\n"


def parse_mix(text: str) -> Mix:
    """``append=0.6,read=0.2`` over LOAD_MIX; any field of suite.workload.Mix."""
    known = {f.name for f in fields(Mix)}
    changes: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        key = "yield_" if key.strip() == "yield" else key.strip()
        if not sep or key not in known:
            raise argparse.ArgumentTypeError(f"--mix wants key=weight with keys {sorted(known)}")
        changes[key] = float(value)
    return replace(LOAD_MIX, **changes)


def add_arguments(parser: argparse.ArgumentParser, prefix: str = "") -> None:
    """The workload's options; bench/report.py adds them with ``prefix="load-"``."""
    p = f"--{prefix}"
    parser.add_argument(f"{p}users", type=int, default=None, help="distinct user ids (10000)")
    parser.add_argument(f"{p}ops", type=int, default=None,
                        help=f"calls in the storm ({DEFAULT_OPS}); 0 with --duration: no cap")
    parser.add_argument(f"{p}duration", type=float, default=None, help="seconds the storm runs")
    parser.add_argument(f"{p}concurrency", type=int, default=None, help="clients (32)")
    parser.add_argument(f"{p}mix", type=parse_mix, default=None,
                        help="weights over the default, e.g. append=0.5,compact=0.2,forget=0.05")
    parser.add_argument(f"{p}seed", type=int, default=None, help="replay a run (printed)")
    parser.add_argument(f"{p}quick", action="store_true", help="a small run, for tests")


def config_from(args: argparse.Namespace, prefix: str = "") -> LoadConfig:
    def get(name: str) -> Any:
        return getattr(args, f"{prefix}{name}".replace("-", "_"))

    cfg = LoadConfig(seed=resolve_seed(get("seed")))
    if get("quick"):
        cfg = replace(cfg, **QUICK)  # type: ignore[arg-type]
    for name in ("users", "concurrency", "mix", "duration"):
        if get(name) is not None:
            cfg = replace(cfg, **{name: get(name)})
    ops = get("ops")
    if ops is not None:
        cfg = replace(cfg, ops=ops or None)
    elif cfg.duration:
        cfg = replace(cfg, ops=None)
    if cfg.ops is None and not cfg.duration:
        raise SystemExit("--ops 0 needs --duration")
    return cfg


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write DIR/load.json and DIR/load.md here")
    parser.add_argument("--stacks", default="",
                        help=f"comma-separated; default: {FRAGILE} and every registry stack")
    parser.add_argument("--stack-timeout", type=float, default=1800.0,
                        help="seconds one stack may take before its row says so")
    add_arguments(parser)
    # One stack's row in this (fresh) process, for run_stacks: not for use by hand.
    parser.add_argument("--row", help=argparse.SUPPRESS)
    parser.add_argument("--config", help=argparse.SUPPRESS)
    parser.add_argument("--row-out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.row:
        row = asyncio.run(bench_stack(args.row, _config_of(json.loads(args.config))))
        args.row_out.write_text(json.dumps(row), encoding="utf-8")
        return 0
    cfg = config_from(args)
    print(f"seed {cfg.seed} (replay with --seed {cfg.seed})", flush=True)
    names = stack_names([s for s in args.stacks.split(",") if s])
    load = asyncio.run(run_stacks(names, cfg, args.stack_timeout))
    load["command"] = "python bench/bench_load.py " + " ".join(argv or sys.argv[1:])
    text = markdown(load)
    if args.out is not None:
        out: Path = args.out.resolve()
        out.mkdir(parents=True, exist_ok=True)
        (out / "load.json").write_text(json.dumps(load, indent=2) + "\n", encoding="utf-8")
        (out / "load.md").write_text(text, encoding="utf-8")
    print(text, flush=True)
    print(f"seed {cfg.seed} (replay with --seed {cfg.seed})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
