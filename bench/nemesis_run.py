"""The nemesis bar of issue 8, measured: 200 faults per stack, nothing lost, back within 5 s.

Run:  python bench/nemesis_run.py [--stacks pgvector,redis,valkey] [--faults 200] [--seed N]
                                  [--kinds crash,pause,kill,net] [--json DIR]

Each stack gets embedded engines of its own and one nemesis run
(``nomnesia.suite.nemesis``): worker processes run the seeded workload while
the runner kills them, pauses and kills PostgreSQL and Redis/Valkey, and breaks
the network through a proxy. The table shows, per stack: faults injected,
operations by outcome, acknowledged appends lost, duplicates, anomalies found
by the history checker, and the time until the store answered again after each
fault (bar: 5 s). Exit status 1 if any stack misses the bar.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from pathlib import Path

from nomnesia.suite.nemesis.report import RECOVERY_BAR, NemesisReport
from nomnesia.suite.nemesis.runner import KINDS, NemesisConfig, kinds_of, run_nemesis


def _row(report: NemesisReport) -> str:
    rec = report.recovery
    ops = report.operations
    return (f"{report.adapter:<10} {len(report.faults):>6} {ops.get('ok', 0):>7} "
            f"{ops.get('fail', 0):>5} {ops.get('info', 0):>5} {report.acknowledged_appends:>7} "
            f"{len(report.lost):>5} {len(report.duplicates):>5} {len(report.anomalies):>9} "
            f"{rec['p50']!s:>7} {rec['max']!s:>7} {rec['over_bar']:>5} {report.seconds:>6.0f}  "
            f"{'PASS' if report.passed else 'FAIL'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stacks", default="pgvector,redis,valkey")
    parser.add_argument("--faults", type=int, default=200)
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--json", type=Path, default=None, help="write DIR/nemesis-<stack>.json")
    parser.add_argument("--replicas", type=int, default=1,
                        help="load workers on one namespace at once (stores get shared=True)")
    args, _ = parser.parse_known_args()  # `nox -s bench` passes its options to every script
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    kinds = kinds_of(args.kinds)
    print(f"nemesis bench: {args.faults} faults per stack, kinds {','.join(kinds)}, "
          f"seed {seed} (replay with --seed {seed}); bar: 0 lost, 0 duplicates, 0 anomalies, "
          f"answered again within {RECOVERY_BAR:g} s", flush=True)
    reports: list[NemesisReport] = []
    started = time.monotonic()
    for stack in [s.strip() for s in args.stacks.split(",") if s.strip()]:
        cfg = NemesisConfig(adapter=stack, faults=args.faults, kinds=kinds, seed=seed,
                            replicas=args.replicas,
                            log=lambda line, stack=stack: print(f"  [{stack}] {line.strip()}",
                                                                 flush=True))
        report = asyncio.run(run_nemesis(cfg))
        print(report.summary(), flush=True)
        reports.append(report)
        if args.json is not None:
            args.json.mkdir(parents=True, exist_ok=True)
            (args.json / f"nemesis-{stack}.json").write_text(report.dumps(), encoding="utf-8")
    print()
    print(f"{'stack':<10} {'faults':>6} {'ok':>7} {'fail':>5} {'info':>5} {'acked':>7} "
          f"{'lost':>5} {'dups':>5} {'anomalies':>9} {'p50 s':>7} {'max s':>7} {'>5s':>5} "
          f"{'secs':>6}")
    for report in reports:
        print(_row(report))
    print(f"total {time.monotonic() - started:.0f} s; faults by kind: " + "; ".join(
        f"{r.adapter} {json.dumps(r.faults_by_kind)}" for r in reports))
    return 0 if all(r.passed for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
