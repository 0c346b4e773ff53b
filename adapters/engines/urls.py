"""The URLs of the replicated Redis topologies: a Sentinel group and a Cluster, as one string.

The engines that start a topology write these URLs and the clients that reach one
(``nomnesia.adapters.resp``) read them, so the scheme is defined once, here, below both:

- ``redis+sentinel://host:port,host:port,host:port/service?db=N``: the primary of the
  Sentinel-monitored group ``service``, found through any of the Sentinels listed;
- ``redis+cluster://host:port,host:port,.../0``: a Redis Cluster, found through any of
  its seed nodes (database 0 only).

redis-py parses neither; the Sentinel form is the one other clients use (Celery's
``sentinel://``, Sidekiq, Spring's ``redis-sentinel://``), the cluster form follows it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

__all__ = ["CLUSTER_SCHEME", "SENTINEL_SCHEME", "SentinelAddress", "cluster_url", "is_cluster_url",
           "parse_cluster_url", "parse_sentinel_url", "sentinel_url"]

SENTINEL_SCHEME = "redis+sentinel"
CLUSTER_SCHEME = "redis+cluster"


@dataclass(frozen=True)
class SentinelAddress:
    """What a ``redis+sentinel://`` URL names: the Sentinels, the service and the db."""

    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int = 0


def sentinel_url(sentinels: Sequence[tuple[str, int]], service: str, db: int = 0) -> str:
    """The URL of ``service`` watched by ``sentinels`` (``[(host, port), ...]``)."""
    hosts = ",".join(f"{host}:{port}" for host, port in sentinels)
    return f"{SENTINEL_SCHEME}://{hosts}/{service}?db={db}"


def parse_sentinel_url(url: str) -> SentinelAddress:
    """The Sentinels, service and db of a ``redis+sentinel://`` URL; ValueError if malformed."""
    parts = urlsplit(url)
    if parts.scheme != SENTINEL_SCHEME:
        raise ValueError(f"not a {SENTINEL_SCHEME}:// URL: {url!r}")
    sentinels = _host_ports(url, parts.netloc, "Sentinel")
    service = parts.path.strip("/")
    if not service:
        raise ValueError(f"{url!r} names no service: {SENTINEL_SCHEME}://host:port,.../service")
    db = parse_qs(parts.query).get("db", ["0"])[0]
    if not db.isdigit():
        raise ValueError(f"{url!r}: db must be a number, not {db!r}")
    return SentinelAddress(sentinels, service, int(db))


def cluster_url(nodes: Sequence[tuple[str, int]]) -> str:
    """The URL of a Redis Cluster reached through the seed ``nodes`` (``[(host, port)]``)."""
    return f"{CLUSTER_SCHEME}://" + ",".join(f"{host}:{port}" for host, port in nodes) + "/0"


def is_cluster_url(url: str) -> bool:
    """Whether ``url`` names a Redis Cluster: its users must keep each call in one slot."""
    return url.startswith(f"{CLUSTER_SCHEME}://")


def parse_cluster_url(url: str) -> tuple[tuple[str, int], ...]:
    """The seed nodes of a ``redis+cluster://`` URL; ValueError if malformed, or if it
    names a database other than 0 (a cluster has no other)."""
    parts = urlsplit(url)
    if parts.scheme != CLUSTER_SCHEME:
        raise ValueError(f"not a {CLUSTER_SCHEME}:// URL: {url!r}")
    nodes = _host_ports(url, parts.netloc, "seed node")
    if parts.path.strip("/") not in ("", "0"):
        raise ValueError(f"{url!r}: a Redis Cluster has database 0 only, not "
                         f"{parts.path.strip('/')!r}")
    return nodes


def _host_ports(url: str, netloc: str, what: str) -> tuple[tuple[str, int], ...]:
    found: list[tuple[str, int]] = []
    for hostport in netloc.rpartition("@")[2].split(","):
        host, _, port = hostport.strip().rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"{url!r}: each {what} must be host:port, not {hostport!r}")
        found.append((host.strip("[]"), int(port)))
    return tuple(found)
