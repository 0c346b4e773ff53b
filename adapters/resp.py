"""Redis-protocol clients from one URL: a single server, or a group watched by Sentinels.

The short-term log takes a URL, so a topology is a URL scheme, not another log:

- ``redis://host:port/db``: one server (``Redis.from_url``), Redis or Valkey;
- ``redis+sentinel://host:port,host:port,host:port/service?db=N``: the primary of the
  Sentinel-monitored group ``service``, found through any of the Sentinels listed
  (redis-py's ``Sentinel.master_for``). After a failover, the next connection asks the
  Sentinels again and reaches the promoted replica with no reconfiguration.

redis-py parses no Sentinel URL itself; this is the form other clients use (e.g.
Celery's ``sentinel://``, Sidekiq, the Spring ``redis-sentinel://``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from redis.asyncio import Redis
from redis.asyncio.sentinel import Sentinel

__all__ = ["SENTINEL_SCHEME", "RespClient", "SentinelAddress", "parse_sentinel_url",
           "resp_client", "sentinel_url"]

SENTINEL_SCHEME = "redis+sentinel"


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
    sentinels: list[tuple[str, int]] = []
    for hostport in parts.netloc.rpartition("@")[2].split(","):
        host, _, port = hostport.strip().rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"{url!r}: each Sentinel must be host:port, not {hostport!r}")
        sentinels.append((host.strip("[]"), int(port)))
    service = parts.path.strip("/")
    if not service:
        raise ValueError(f"{url!r} names no service: {SENTINEL_SCHEME}://host:port,.../service")
    db = parse_qs(parts.query).get("db", ["0"])[0]
    if not db.isdigit():
        raise ValueError(f"{url!r}: db must be a number, not {db!r}")
    return SentinelAddress(tuple(sentinels), service, int(db))


@dataclass
class RespClient:
    """A client and what must close with it (the Sentinels' own connections)."""

    redis: Redis
    _also: list[Redis] = field(default_factory=list)

    async def aclose(self) -> None:
        await self.redis.aclose()
        for other in self._also:
            await other.aclose()


def resp_client(url: str, *, timeout: float, replica: bool = False,
                **options: Any) -> RespClient:
    """A redis-py asyncio client for ``url`` (either scheme above).

    ``replica=True`` reads from a replica of a Sentinel group instead of its primary:
    what a store must never do for history (it may be behind), kept for the suite's
    positive control. ``options`` go to every connection (``decode_responses`` ...).
    """
    if not url.startswith(f"{SENTINEL_SCHEME}://"):
        if replica:
            raise ValueError(f"replica=True needs a {SENTINEL_SCHEME}:// URL, not {url!r}")
        return RespClient(Redis.from_url(url, socket_timeout=timeout,
                                         socket_connect_timeout=timeout, **options))
    address = parse_sentinel_url(url)
    connection = {"socket_timeout": timeout, "socket_connect_timeout": timeout,
                  "db": address.db, **options}
    sentinel = Sentinel(list(address.sentinels),
                        sentinel_kwargs={"socket_timeout": timeout,
                                         "socket_connect_timeout": timeout},
                        **connection)  # type: ignore[no-untyped-call]
    pick = sentinel.slave_for if replica else sentinel.master_for
    return RespClient(pick(address.service), list(sentinel.sentinels))
