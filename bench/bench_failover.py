"""Failovers of the embedded PostgreSQL pairs: how long each takes, and that nothing is lost.

    python bench/bench_failover.py [--failovers N]

For ``postgres-ha`` (synchronous standby) and ``postgres-ha-async``: N times, one
acknowledged INSERT through the pair's multi-host URL, then a failover by the
provider (SIGKILL of the primary, promotion of the standby, pg_rewind and restart
of the old primary as its standby). Prints, per topology, the time to promotion
and to a rejoined standby (p50 and max), and whether every acknowledged row is
still there. Quiet failovers (the standby caught up) lose nothing in either mode;
``tests/test_topologies.py`` shows the asynchronous pair losing a row when its
standby is behind. Not a test: it prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics

import psycopg

from nomnesia.adapters.engines import EmbeddedProvider


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--failovers", type=int, default=10)
    args = parser.parse_args()
    provider = EmbeddedProvider()
    try:
        for engine in ("postgres-ha", "postgres-ha-async"):
            url = provider.url(engine)
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("CREATE TABLE acknowledged (x int)")
            promoted, rejoined = [], []
            for i in range(args.failovers):
                with psycopg.connect(url, autocommit=True) as conn:
                    conn.execute("INSERT INTO acknowledged VALUES (%s)", (i,))
                figures = provider.failover(engine)
                promoted.append(figures["promoted_s"])
                rejoined.append(figures["rejoined_s"])
            with psycopg.connect(url, autocommit=True) as conn:
                rows = [r[0] for r in conn.execute("SELECT x FROM acknowledged ORDER BY x")]
            lost = sorted(set(range(args.failovers)) - set(rows))
            print(f"{engine}: {args.failovers} failovers; promoted p50 "
                  f"{statistics.median(promoted):.3f} s, max {max(promoted):.3f} s; standby "
                  f"rejoined p50 {statistics.median(rejoined):.3f} s, max {max(rejoined):.3f} s;"
                  f" acknowledged rows lost: {len(lost)} {lost if lost else ''}", flush=True)
    finally:
        provider.close()


if __name__ == "__main__":
    main()
