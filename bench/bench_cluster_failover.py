"""The embedded Redis Cluster: how long it takes to start, and each failover.

    python bench/bench_cluster_failover.py [--starts N] [--failovers N]

Starts ``redis-cluster`` N times (6 processes, made into 3 shards of a primary and a
replica, until every node agrees) and reports the time to a URL. Then, on one
cluster, N times: one acknowledged SET per shard through the cluster URL (redis-py's
``RedisCluster``), then a failover by the provider (SIGKILL of a primary, the
shards in turn; the cluster promotes its replica; the old node restarts and
rejoins as a replica). Prints the time to promotion and to a whole cluster again
(p50 and max), and whether every acknowledged SET is still there: quiet failovers
(the replica caught up) lose nothing, but replication is asynchronous, which is why
the log distrusts a failed-over shard (``tests/test_redis_cluster.py``). Not a test:
it prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import time

from redis.cluster import ClusterNode, RedisCluster

from nomnesia.adapters.engines import EmbeddedProvider
from nomnesia.adapters.engines.urls import parse_cluster_url

KEYS = ("{a}", "{b}", "{c}")
"""Hash tags in slots 15495, 3300 and 7365: one on each shard of 3."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--failovers", type=int, default=10)
    args = parser.parse_args()
    starts = []
    for _ in range(args.starts):
        with EmbeddedProvider() as provider:
            began = time.monotonic()
            provider.url("redis-cluster")
            starts.append(time.monotonic() - began)
    print(f"redis-cluster: started {args.starts} times; ready p50 "
          f"{statistics.median(starts):.3f} s, max {max(starts):.3f} s", flush=True)
    provider = EmbeddedProvider()
    try:
        url = provider.url("redis-cluster")
        seeds = [ClusterNode(host, port)  # type: ignore[no-untyped-call]
                 for host, port in parse_cluster_url(url)]
        client = RedisCluster(startup_nodes=seeds, socket_timeout=5.0)
        promoted, rejoined = [], []
        try:
            for i in range(args.failovers):
                for tag in KEYS:
                    client.set(f"{tag}:{i}", i)  # acknowledged
                figures = provider.failover("redis-cluster")
                promoted.append(figures["promoted_s"])
                rejoined.append(figures["rejoined_s"])
            lost = [f"{tag}:{i}" for i in range(args.failovers) for tag in KEYS
                    if client.get(f"{tag}:{i}") != str(i).encode()]
        finally:
            client.close()
    finally:
        provider.close()
    print(f"redis-cluster: {args.failovers} failovers; promoted p50 "
          f"{statistics.median(promoted):.3f} s, max {max(promoted):.3f} s; whole again "
          f"(old primary rejoined as a replica) p50 {statistics.median(rejoined):.3f} s, "
          f"max {max(rejoined):.3f} s; acknowledged SETs lost: {len(lost)} "
          f"{lost if lost else ''}", flush=True)


if __name__ == "__main__":
    main()
