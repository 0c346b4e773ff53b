"""Redis-protocol clients from one URL: a single server, a Sentinel group or a Cluster.

The short-term log takes a URL, so a topology is a URL scheme, not another log:

- ``redis://host:port/db``: one server (``Redis.from_url``), Redis or Valkey;
- ``redis+sentinel://host:port,host:port,host:port/service?db=N``: the primary of the
  Sentinel-monitored group ``service``, found through any of the Sentinels listed
  (redis-py's ``Sentinel.master_for``). After a failover, the next connection asks the
  Sentinels again and reaches the promoted replica with no reconfiguration;
- ``redis+cluster://host:port,host:port,.../0``: a Redis Cluster, found through any of
  the seed nodes listed (redis-py's ``RedisCluster``, which learns the slot map from
  the first seed that answers and follows ``MOVED`` after a failover). A cluster has
  database 0 only, and every key of one command or script must hash to one slot:
  what uses a cluster URL names its keys with hash tags (``is_cluster_url``).

redis-py parses neither URL itself; the Sentinel form is the one other clients use
(e.g. Celery's ``sentinel://``, Sidekiq, the Spring ``redis-sentinel://``), the
cluster form follows it (a list of seeds instead of one host).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from redis._parsers import AsyncCommandsParser
from redis.asyncio import Redis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.sentinel import Sentinel

from .engines.urls import SENTINEL_SCHEME, is_cluster_url, parse_cluster_url, parse_sentinel_url

__all__ = [
    "BEGIN_REBUILD_LUA",
    "INTACT_LUA",
    "MARK_INTACT_LUA",
    "REPLID_LUA",
    "SET_INTACT_LUA",
    "AnyRedis",
    "RespClient",
    "eval_each",
    "resp_client",
]

AnyRedis = Redis | RedisCluster
"""What ``resp_client`` hands out: both have the commands the log and the index use
(scripts, strings, hashes, ``scan_iter``, ``unlink``), routed by key on a cluster."""

REPLID_LUA = """
local function replid()
    return string.match(redis.call('INFO', 'replication'), 'master_replid:(%w+)')
end
local function server()
    local info = redis.call('INFO', 'replication')
    local replicas = tonumber(string.match(info, 'connected_slaves:(%d+)') or '0')
    return string.match(info, 'master_replid:(%w+)') .. ':' .. (replicas > 0 and '1' or '0')
end
local function vouched(marker)
    if not marker then return false end
    local now = server()
    return marker == now or (string.sub(marker, -2) == ':0' and
        string.sub(marker, 1, -3) == string.sub(now, 1, -3))
end
"""
"""Lua functions for scripts. ``replid()``: the replication id of the server the script
runs on (on a cluster, the primary that owns the script's slot). A replica promoted in
a failover takes a new one and may lack the old primary's last writes, so a marker
that holds the id it was set under is stale after a failover, as it is gone after a
restart without persistence (``redis_log``, ``indexes.redis_vsets``). ``server()``:
that id and whether the server has replicas (``"<id>:1"``), what the log's marker
holds; ``vouched(marker)``: whether a marker still speaks for this server. A primary
that had replicas and has none (an old primary thawed beside a promoted one, its
replicas gone to it) is not vouched for. From ``INFO``: ``ROLE`` is not allowed in
scripts."""

# The marker protocol of a tier that can tell it lost data (tiers.SelfChecking), as
# scripts: the log (redis_log) and the vector-set index (indexes.redis_vsets) share it.
SET_INTACT_LUA = REPLID_LUA + """
redis.call('SET', KEYS[1], server())
return 1
"""
"""KEYS: the marker. Vouch for a fresh (empty, so complete) namespace."""

INTACT_LUA = REPLID_LUA + """
return vouched(redis.call('GET', KEYS[1])) and 1 or 0
"""
"""KEYS: the marker. 1 while it speaks for the server the script runs on."""

BEGIN_REBUILD_LUA = REPLID_LUA + """
redis.call('SET', KEYS[1], ARGV[1] .. ':' .. replid())
return 1
"""
"""KEYS: the rebuild token; ARGV: its value. Bound to the replication id it began
under: a failover during the rebuild (the promoted replica may lack its last puts,
yet has the token) makes it stale, as a restart that lost the token does."""

MARK_INTACT_LUA = REPLID_LUA + """
if redis.call('GET', KEYS[2]) ~= ARGV[1] .. ':' .. replid() then return 0 end
redis.call('SET', KEYS[1], server())
redis.call('DEL', KEYS[2])
return 1
"""
"""KEYS: the marker, the rebuild token; ARGV: the token. Vouch (1) only if the token
is the rebuild's own, on the same replication history; else 0."""


class _SharedCommands(AsyncCommandsParser):
    """redis-py's key finder for a cluster client, with the ``COMMAND`` table shared by
    the clients of one URL in this process.

    Every ``RedisCluster`` fetches and parses the server's whole ``COMMAND`` table
    (some 240 commands, 12,000 RESP lines, parsed in Python) on its first call, to
    find the keys of the commands it routes. A store opens three clients (its log,
    its index, the namespace drop): measured on the conformance suite, that was 0.2 s
    of every store's 0.36 s. The table is the server's, not the client's; a command
    that is not in it makes redis-py fetch it again (``get_keys``), which refreshes
    the shared one."""

    _tables: ClassVar[dict[str, dict[str, Any]]] = {}

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url

    async def initialize(self, node: ClusterNode | None = None) -> None:
        if node is not None:
            self.node = node
        known = self._tables.get(self.url)
        if known is not None and not self.commands:  # a first call: the shared table
            self.commands = known
            return
        await super().initialize(node)  # a command it did not know: fetch it again
        self._tables[self.url] = self.commands


async def eval_each(redis: AnyRedis, script: str, keys: Iterable[Sequence[str]],
                    args: Sequence[str] = ()) -> list[Any]:
    """``script`` once per list of ``keys`` (with the same ``args``), in one pipeline.

    For what a log or an index keeps per bucket of users (``redis_log``): on a cluster
    each script runs on its own slot, the pipeline sends one batch per primary, so
    vouching for 16 buckets costs a round trip, not 16 (``consistent_state`` asks
    after every step of the suite: one after another, that made its model test
    twice as slow). EVAL, not EVALSHA: a pipeline loads no script a primary lacks.
    Each script is atomic; the batch is not, and needs not be: each bucket's answer
    is about that bucket alone."""
    pipe = redis.pipeline(transaction=False)
    for each in keys:
        pipe.eval(script, len(each), *each, *args)
    return list(await pipe.execute())


@dataclass
class RespClient:
    """A client and what must close with it (the Sentinels' own connections)."""

    redis: AnyRedis
    _also: list[Redis] = field(default_factory=list)

    async def aclose(self) -> None:
        await self.redis.aclose()
        for other in self._also:
            await other.aclose()


def resp_client(url: str, *, timeout: float, replica: bool = False,
                **options: Any) -> RespClient:
    """A redis-py asyncio client for ``url`` (any scheme above).

    ``replica=True`` reads from a replica of a Sentinel group instead of its primary:
    what a store must never do for history (it may be behind), kept for the suite's
    positive control. ``options`` go to every connection (``decode_responses`` ...).
    """
    if is_cluster_url(url):
        if replica:
            raise ValueError(f"replica=True needs a {SENTINEL_SCHEME}:// URL, not {url!r}")
        seeds = [ClusterNode(host, port) for host, port in parse_cluster_url(url)]
        cluster = RedisCluster(startup_nodes=seeds, socket_timeout=timeout,
                               socket_connect_timeout=timeout, **options)
        cluster.commands_parser = _SharedCommands(url)
        return RespClient(cluster)
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
                        **connection)  # type: ignore[no-untyped-call, unused-ignore]
    pick = sentinel.slave_for if replica else sentinel.master_for
    return RespClient(pick(address.service), list(sentinel.sentinels))
