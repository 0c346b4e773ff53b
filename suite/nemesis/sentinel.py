"""Fail a Sentinel group over by its URL: a ready ``--fault-command`` for your own Redis.

    python -m nomnesia.suite.nemesis.sentinel failover 'redis+sentinel://h1:26379,h2:26379/mymaster'

Asks the first Sentinel that answers for ``SENTINEL FAILOVER <service>`` (a failover
without the other Sentinels' agreement, as Redis documents it), then waits (bounded)
until every Sentinel that answers names another primary. Exits 0 then, 1 with one
sentence otherwise. In the nemesis::

    --fault-command 'failover=python -m nomnesia.suite.nemesis.sentinel failover {url}'
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from redis import Redis
from redis.exceptions import RedisError

from nomnesia.adapters.engines.urls import parse_sentinel_url

__all__ = ["BOUND", "failover", "main"]

BOUND = 60.0
"""Seconds the Sentinels may take to name another primary."""


def _primaries(sentinels: Sequence[tuple[str, int]], service: str) -> set[tuple[str, int]]:
    named = set()
    for host, port in sentinels:
        try:
            with Redis(host=host, port=port, socket_timeout=2) as client:
                address = client.sentinel_get_master_addr_by_name(service)
        except RedisError:
            continue  # a Sentinel that does not answer has no say
        if address:
            named.add((str(address[0]), int(address[1])))
    return named


def failover(url: str, bound: float = BOUND) -> tuple[tuple[str, int], tuple[str, int]]:
    """Fail ``url``'s service over; (old primary, new primary). Raises RuntimeError."""
    address = parse_sentinel_url(url)
    before = _primaries(address.sentinels, address.service)
    if len(before) != 1:
        raise RuntimeError(f"the Sentinels of {url} do not agree on one primary: {before}")
    (old,) = before
    for host, port in address.sentinels:
        try:
            with Redis(host=host, port=port, socket_timeout=5) as client:
                client.execute_command("SENTINEL", "FAILOVER", address.service)
            break
        except RedisError as exc:
            last = exc
    else:
        raise RuntimeError(f"no Sentinel of {url} started a failover: {last}")
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        now = _primaries(address.sentinels, address.service)
        if len(now) == 1 and old not in now:
            return old, now.pop()
        time.sleep(0.1)  # bounded poll of the Sentinels' view
    raise RuntimeError(f"the Sentinels of {url} still name {old} after {bound:g} s")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nomnesia.suite.nemesis.sentinel",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("failover",))
    parser.add_argument("url", help="redis+sentinel://host:port,.../service")
    parser.add_argument("--bound", type=float, default=BOUND)
    args = parser.parse_args(argv)
    try:
        old, new = failover(args.url, args.bound)
    except (RuntimeError, ValueError) as exc:
        print(f"sentinel failover: {exc}", file=sys.stderr)
        return 1
    print(f"failed over: {old[0]}:{old[1]} -> {new[0]}:{new[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
