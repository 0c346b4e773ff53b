"""Redis's loss window under a partition and a Sentinel failover, per replication setting.

    python bench/bench_loss_window.py [--engine redis-sentinel]
        [--settings default,min-replicas,wait] [--runs N] [--json PATH]

One client appends to a list through redis-py's ``Sentinel.master_for`` (the way a
store that trusts a plain ``RPUSH`` writes) as fast as the primary answers; each
reply is an acknowledgement. Then the provider cuts the primary off from its
replicas and Sentinels (``EmbeddedProvider.cut_primary``: the client still reaches
it), the Sentinels elect another primary, the cut heals, and the Sentinels demote the
old primary, whose writes made alone are discarded. The list is then read from the
new primary: every acknowledged append missing from it is lost, and printed by id.

Settings, as Redis documents them (https://redis.io/docs/latest/operate/oss_and_stack/management/replication/
"Allow writes only with N attached replicas", and the WAIT command's page):

- ``default``: asynchronous replication, nothing else;
- ``min-replicas``: ``min-replicas-to-write 1``, ``min-replicas-max-lag 1`` on every
  node: a primary that has heard from no replica for over a second refuses writes
  (``NOREPLICAS``), which bounds the window by the lag setting; it does not close it;
- ``wait``: each ``RPUSH`` followed by ``WAIT 1 100`` and counted as acknowledged
  only when at least one replica has it (Redis: WAIT "does not make Redis a strongly
  consistent store"; a replica that acknowledged may still not be the one promoted).

Jepsen's Redis analysis (https://aphyr.com/posts/283-jepsen-redis) is the classic
account of this window. Not a test: ``tests/test_loss_window.py`` keeps the default
setting's loss caught.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from redis import Redis
from redis.exceptions import RedisError
from redis.sentinel import Sentinel

from nomnesia.adapters.engines import EmbeddedProvider

SETTINGS = ("default", "min-replicas", "wait")
CUT_AFTER_S = 1.0
"""Appends acknowledged before the cut: replicated, the baseline that must never go."""
ALONE_S = 1.5
"""How long the old primary stays cut off once the Sentinels have promoted another."""


@dataclass
class Window:
    """One run: what the client had acknowledged, and what the group kept."""

    engine: str
    setting: str
    acknowledged: int = 0
    before_cut: int = 0
    """Appends acknowledged before the cut (replicated: none of them may be lost)."""
    refused: int = 0
    lost: list[int] = field(default_factory=list)
    promoted_s: float = 0.0
    cpu: str = ""


def _configure(part: Any, setting: str) -> None:
    """Apply ``setting`` on every data node, through its proxy port (as a client would)."""
    for node in part._nodes:
        client = Redis(port=node.port, socket_timeout=2)
        if setting == "min-replicas":
            client.config_set("min-replicas-to-write", 1)
            client.config_set("min-replicas-max-lag", 1)
        else:
            client.config_set("min-replicas-to-write", 0)
        client.close()


def measure(provider: EmbeddedProvider, engine: str, setting: str, key: str) -> Window:
    """Cut the primary off under load, let the Sentinels fail over, heal; what was lost."""
    provider.url(engine)
    part = provider._parts[engine]  # the bench drives the topology it started
    _configure(part, setting)
    sentinel = Sentinel([("127.0.0.1", s.port) for s in part._sentinels], socket_timeout=1.0)
    primary = sentinel.master_for("nomnesia", socket_timeout=1.0)
    window = Window(engine, setting, cpu=_cpu())
    acked: list[int] = []
    stop = threading.Event()

    def write() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            try:
                primary.rpush(key, n)
                if setting == "wait" and int(primary.execute_command("WAIT", 1, 100)) < 1:
                    window.refused += 1
                    continue
                acked.append(n)
            except RedisError:
                window.refused += 1
                time.sleep(0.01)  # a refused write: the client backs off, as a store would

    writer = threading.Thread(target=write, name="loss-window-writer")
    writer.start()
    try:
        time.sleep(CUT_AFTER_S)  # the load itself: appends before the cut
        window.before_cut = len(acked)
        began = time.monotonic()
        provider.cut_primary(engine)  # returns once the Sentinels promoted another
        window.promoted_s = round(time.monotonic() - began, 2)
        time.sleep(ALONE_S)  # the old primary keeps acknowledging alone for this long
    finally:
        provider.heal_links(engine)
        stop.set()
        writer.join(10)
    kept = {int(v) for v in sentinel.master_for("nomnesia", socket_timeout=2.0).lrange(key, 0, -1)}
    window.acknowledged = len(acked)
    window.lost = [n for n in acked if n not in kept]
    return window


def _cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", default="redis-sentinel",
                        choices=("redis-sentinel", "valkey-sentinel"))
    parser.add_argument("--settings", default=",".join(SETTINGS))
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    chosen = [s.strip() for s in args.settings.split(",") if s.strip()]
    unknown = sorted(set(chosen) - set(SETTINGS))
    if unknown:
        parser.error(f"unknown settings {', '.join(unknown)}; known: {', '.join(SETTINGS)}")
    results: list[Window] = []
    with EmbeddedProvider() as provider:
        for setting in chosen:
            for run in range(args.runs):
                window = measure(provider, args.engine, setting, f"loss:{setting}:{run}")
                results.append(window)
                shown = ", ".join(map(str, window.lost[:12])) + (" ..." if len(window.lost) > 12
                                                                 else "")
                print(f"{args.engine} {setting:<12} acknowledged {window.acknowledged:>6} "
                      f"({window.before_cut} before the cut)  "
                      f"lost {len(window.lost):>5}  refused {window.refused:>5}  "
                      f"promoted after {window.promoted_s:g} s"
                      + (f"  lost ids: {shown}" if window.lost else ""), flush=True)
    print(f"CPU: {_cpu()}; cut after {CUT_AFTER_S:g} s of load, old primary alone "
          f"{ALONE_S:g} s after the promotion")
    if args.json:
        args.json.write_text(json.dumps([asdict(w) for w in results], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
