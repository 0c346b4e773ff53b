"""Redis and Valkey: every key and value of every member of a single server, a Sentinel
group or a Cluster."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..urls import CLUSTER_SCHEME, SENTINEL_SCHEME, parse_cluster_url, parse_sentinel_url
from .base import Finder, Needle, Scanned, ScanResult, client_module, shown, text

__all__ = ["scan_redis"]


def _redis_members(kind: str, url: str, redis: Any, timeout: float) -> list[tuple[str, Any]]:
    """(label, client) for every data node behind ``url``: a server, a Sentinel group's
    primary and replicas, or every primary and replica of a cluster."""
    def node(host: str, port: int, db: int = 0) -> Any:
        return redis.Redis(host=host, port=port, db=db, socket_timeout=timeout,
                           socket_connect_timeout=timeout)

    if url.startswith(f"{SENTINEL_SCHEME}://"):
        address = parse_sentinel_url(url)
        host, port = address.sentinels[0]
        sentinel = node(host, port)
        try:
            primary = sentinel.sentinel_master(address.service)
            replicas = sentinel.sentinel_slaves(address.service)
        finally:
            sentinel.close()
        hosts = [(str(primary["ip"]), int(primary["port"]))]
        hosts += [(str(r["ip"]), int(r["port"])) for r in replicas]
        return [(f"{kind} {h}:{p}", node(h, p, address.db)) for h, p in hosts]
    if url.startswith(f"{CLUSTER_SCHEME}://"):
        seeds = parse_cluster_url(url)
        seed = node(*seeds[0])
        try:
            listing = text(seed.execute_command("CLUSTER", "NODES", NEVER_DECODE=True))
        finally:
            seed.close()
        members: list[tuple[str, Any]] = []
        for line in listing.splitlines():
            parts = line.split()
            if len(parts) < 3 or "fail" in parts[2].split(","):
                continue
            ip, _, port_text = parts[1].partition("@")[0].rpartition(":")
            ip = ip or seeds[0][0]  # a node that knows no address of its own says ":port"
            members.append((f"{kind} {ip}:{port_text}", node(ip, int(port_text))))
        try:
            for _, client in members:
                client.execute_command("READONLY")  # a replica answers reads of its keys
        except BaseException:
            for _, client in members:
                client.close()
            raise
        return members
    return [(f"{kind} {url.partition('://')[2].partition('/')[0].rpartition('@')[2]}",
             redis.Redis.from_url(url, socket_timeout=timeout,
                                  socket_connect_timeout=timeout))]


def _redis_value(client: Any, key: bytes, kind: str) -> str | None:
    """The whole value of a key as text, or None for a type this scanner cannot read."""
    commands: dict[str, Callable[[], Any]] = {
        "string": lambda: client.get(key),
        "list": lambda: client.lrange(key, 0, -1),
        "hash": lambda: client.hgetall(key),
        "set": lambda: client.smembers(key),
        "zset": lambda: client.zrange(key, 0, -1, withscores=True),
        "stream": lambda: client.xrange(key, "-", "+"),
        "ReJSON-RL": lambda: client.execute_command("JSON.GET", key),
    }
    if kind in commands:
        return text(commands[kind]())
    if kind == "vectorset":  # element names and their JSON attributes
        count = int(client.execute_command("VCARD", key))
        names = client.execute_command("VRANDMEMBER", key, count) if count else []
        attributes = [client.execute_command("VGETATTR", key, name) for name in names or []]
        return text([names, [a for a in attributes if a is not None]])
    return None


def _scan_redis_node(client: Any, redis: Any, finder: Finder) -> int:
    """Look at every key of every database of one node; returns how many keys it read."""
    keys = 0
    databases = [int(db[2:]) for db in client.info("keyspace")] or [0]
    for db in databases:
        node = client
        if db != client.connection_pool.connection_kwargs.get("db", 0):
            node = redis.Redis(**{**client.connection_pool.connection_kwargs, "db": db})
        try:
            for key in node.scan_iter(count=1000):
                keys += 1
                name = text(key)
                key_type = text(node.type(key))
                finder.look(f"db{db} key {name!r} (name)", name)
                value = _redis_value(node, key, key_type)
                if value is None:
                    finder.result.info.append(f"{finder.engine} db{db} key {name!r}: a "
                                              f"{key_type}, whose value this scanner "
                                              "cannot read")
                else:
                    finder.look(f"db{db} key {name!r} ({key_type} value)", value)
        finally:
            if node is not client:
                node.close()
    try:  # RediSearch index names, where the module is loaded
        for index in client.execute_command("FT._LIST") or []:
            finder.look(f"search index {text(index)!r} (name)", text(index))
    except redis.ResponseError:
        pass
    return keys


def scan_redis(kind: str, url: str, wanted: Sequence[Needle], timeout: float) -> ScanResult:
    result = ScanResult()
    redis = client_module("redis", f"{kind} {shown(url)}")
    members = _redis_members(kind, url, redis, timeout)
    try:
        for engine, client in members:
            keys = _scan_redis_node(client, redis, Finder(engine, wanted, result))
            result.scanned.append(Scanned(engine, "keys", keys))
    finally:
        for _, client in members:
            client.close()
    return result
