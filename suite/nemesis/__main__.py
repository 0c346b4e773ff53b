"""``python -m nomnesia.suite.nemesis --adapter pgvector --faults 200 --kinds all --out r.json``.

``--html PATH`` draws the run: latency over time with the fault windows shaded.

``--store MODULE:FACTORY`` (or an interface option, ``--openai-session MODULE:FACTORY``)
runs it on your store: its engines are those it asks ``engine_url`` for (docs/faults.md).

``--adapter pgvector-ha --engine-map postgres-ha=postgres-ha-async --lag 1 --cascade`` is
the failover positive control: the archive on the asynchronous pair, its standby cut off
before each failover, must lose acknowledged appends (docs/nemesis.md).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
from collections.abc import Sequence
from pathlib import Path

from ..interfaces import INTERFACES
from .commands import parse_commands
from .failover import FAILOVER_SHARE, FREEZE_SHARE, parse_assignments
from .report_html import write
from .runner import KINDS, NemesisConfig, kinds_of, run_nemesis
from .user_store import describe


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nomnesia.suite.nemesis",
                                     description="Faults beyond the process, judged by the "
                                     "history checker (docs/nemesis.md).")
    parser.add_argument("--adapter", default=None,
                        help="a built-in stack (nomnesia.adapters registry; default pgvector)")
    parser.add_argument("--store", default="", metavar="MODULE:FACTORY",
                        help="your store, as the suite's --store takes it: its engines come "
                        "from nomnesia.suite.engines.engine_url (docs/faults.md)")

    for known in INTERFACES:
        parser.add_argument(known.option, dest=known.dest, default="",
                            metavar="MODULE:FACTORY", help=f"{known.takes}, as the suite's "
                            f"{known.option} takes it")
    parser.add_argument("--faults", type=int, default=200)
    parser.add_argument("--kinds", default="all",
                        help=f"comma-separated subset of {','.join(KINDS)}, or all (default): "
                        "every kind that applies to the stack (failover: a replicated engine)")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=1.0, help="the store's backend timeout")
    parser.add_argument("--out", type=Path, default=None, help="write the report as JSON")
    parser.add_argument("--history", type=Path, default=None, metavar="FILE.jsonl",
                        help="write the merged history in the history file format "
                             "(docs/history-format.md): `nomnesia check FILE` judges it again")
    parser.add_argument("--html", type=Path, default=None,
                        help="write the report as one HTML page: latency over time with the "
                        "fault windows shaded, availability per kind (docs/nemesis.md)")
    parser.add_argument("--kill-targets", default="",
                        help="engines the kill fault may hit, e.g. postgres (default: all)")
    parser.add_argument("--failover-targets", default="",
                        help="replicated engines the failover fault may hit, e.g. postgres-ha "
                        "(default: all)")
    parser.add_argument("--failover-share", type=float, default=FAILOVER_SHARE,
                        help="share of the faults that are failovers when failover is among "
                        f"other kinds (default {FAILOVER_SHARE:.3f})")
    parser.add_argument("--freeze-share", type=float, default=FREEZE_SHARE,
                        help="share of the failovers that freeze the primary (SIGSTOP past "
                        "the failure detection, thawed after the promotion: a split brain) "
                        f"instead of killing it (default {FREEZE_SHARE:g})")
    parser.add_argument("--engine-map", default="",
                        help="substitute engine kinds in the stack, e.g. "
                        "postgres-ha=postgres-ha-async (the stack opener's engine_map)")
    parser.add_argument("--lag", type=float, default=0.0,
                        help="before each failover, cut the standby off and load the primary "
                        "alone for SECONDS (the asynchronous pair's positive control)")
    parser.add_argument("--cascade", action="store_true",
                        help="a failover fails every replicated engine of the stack over, the "
                        "drawn one first (a lost zone); with --lag, the control's loss shows "
                        "as lost appends")
    parser.add_argument("--mix", default="",
                        help="workload weights to change, e.g. forget=0 (a forget that may "
                        "follow an append excuses its loss; the async control uses this)")
    parser.add_argument("--factory", default="",
                        help="module:callable opening the store instead of the registry "
                        "(e.g. nomnesia.suite.nemesis.broken:open_late_tiers)")
    parser.add_argument("--replicas", type=int, default=1,
                        help="load workers on the namespace at once (stores get shared=True)")
    parser.add_argument("--backends", default="embedded", choices=("embedded", "external"),
                        help="embedded (default: the nemesis starts the engines) or external "
                        "(your servers from NOMNESIA_*_URL; wire faults through the proxy, "
                        "the rest through --fault-command)")
    parser.add_argument("--fault-command", action="append", default=[], metavar="KIND=COMMAND",
                        help="your command for a fault the nemesis cannot cause on your "
                        "deployment: failover, pause and resume, kill and restart; {engine} "
                        "and {url} are replaced (repeat the option; docs/faults.md)")
    parser.add_argument("--async-commit", action="store_true",
                        help="leave PostgreSQL's synchronous_commit off (the embedded default)")
    args = parser.parse_args(argv)
    interfaces = [f"{i.option}={getattr(args, i.dest)}" for i in INTERFACES
                  if getattr(args, i.dest)]
    chosen = [c for c in (args.adapter, args.store, *interfaces) if c]
    if len(chosen) > 1:
        parser.error("give one of --adapter, --store or an interface option, not "
                     + " and ".join(chosen))
    interface = interfaces[0] if interfaces else ""
    if args.store or interface:
        target = f"store={describe(args.store, interface)}"
    else:
        args.adapter = args.adapter or "pgvector"
        target = f"adapter={args.adapter}"
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    print(f"nemesis: {target} faults={args.faults} kinds={args.kinds} "
          f"replicas={args.replicas} "
          + (f"engine-map={args.engine_map} " if args.engine_map else "")
          + (f"lag={args.lag:g} " if args.lag else "")
          + ("cascade " if args.cascade else "")
          + (f"mix={args.mix} " if args.mix else "")
          + f"seed={seed} (replay with --seed {seed})", flush=True)
    targets = {kind: tuple(t.strip() for t in text.split(",") if t.strip())
               for kind, text in (("kill", args.kill_targets),
                                  ("failover", args.failover_targets)) if text}
    try:
        commands = parse_commands(args.fault_command)
        engine_map = parse_assignments(args.engine_map)
        mix = {name: float(value) for name, value in parse_assignments(args.mix).items()}
    except ValueError as exc:
        parser.error(str(exc))
    cfg = NemesisConfig(adapter=args.adapter or "", store=args.store, interface=interface,
                        faults=args.faults, kinds=kinds_of(args.kinds),
                        seed=seed, timeout=args.timeout, durable_postgres=not args.async_commit,
                        store_factory=args.factory, replicas=args.replicas, targets=targets,
                        failover_share=args.failover_share, engine_map=engine_map,
                        freeze_share=args.freeze_share,
                        lag=args.lag, cascade=args.cascade, mix=mix,
                        backends=args.backends, commands=commands,
                        history=str(args.history) if args.history is not None else "",
                        log=lambda line: print(line, flush=True))
    try:
        report = asyncio.run(run_nemesis(cfg))
    except ValueError as exc:  # a kind, target, option or store this run cannot take
        print(f"{parser.prog}: {exc}", file=sys.stderr)  # one sentence, not the usage
        return 2
    print(report.summary(), flush=True)
    if args.out is not None:
        args.out.write_text(report.dumps(), encoding="utf-8")
    if args.html is not None:
        write(report, args.html)
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
