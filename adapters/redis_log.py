"""The short-term log on Redis or Valkey, with redis-py asyncio.

A namespace-wide ``intact`` key holds the replication id of the server that was
complete when it was set, and whether it had replicas then. It vanishes with the
data when the engine restarts empty; it names another replication history after
a failover (a promoted replica takes a new ``master_replid``, and may lack the
old primary's last writes); and an old primary that comes back from a freeze
after its replicas followed a promoted one still has its id but no replica (it
may lack what the new primary took meanwhile, until Sentinel demotes it). In
each case a read never trusts a log that may have lost entries: it raises
``TierLost`` and the store reads the archive until ``recover()`` rebuilt it.
The rebuild's token is bound to the replication id too, so a failover during a
rebuild spoils it. The URL may name a Sentinel group or a Redis Cluster
(``resp.resp_client``).

Per user, two keys under the store's namespace: a sorted set of serialised
entries scored by seq (so ``tail`` is one ZRANGE, an atomic snapshot) and a
hash from entry id to the same blob (so removal by id is exact). Every write
is one Lua script, so a reader never sees half of a write. A third key is the
user's write marker (``SharedLog``), read in the same script as the tail. Key
names hold the SHA-256 of the user id, never the id itself: any user id is safe
as data, and the user's keys share one hash tag (one cluster slot).

On a Redis Cluster (a ``redis+cluster://`` URL) a script may only touch keys of
one slot, and the tail reads the user's keys *and* the intact marker. So users
fall into :data:`CLUSTER_BUCKETS` buckets (the first hex digit of the SHA-256),
the hash tag is the bucket's (``{<namespace>.<digit>}``), and each bucket has an
intact marker and a rebuild token of its own, on its slot. A script runs on the
primary that owns the slot, so a bucket's marker holds the replication id of the
primary that holds the bucket's users: a failover of one shard makes exactly its
buckets distrust themselves. The log is intact when every bucket is, and
``mark_intact`` vouches for each bucket whose token survived (False if any did
not: the store keeps reading the archive until the next ``recover()``).
On one server or a Sentinel group the key layout is the one-bucket case, with
the names it always had: ``<ns>:{<sha>}:z`` and a namespace-wide ``<ns>:intact``.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Sequence
from typing import Any, cast

from redis import exceptions as redis_errors
from redis.exceptions import RedisError

from nomnesia.suite.contract import Entry
from nomnesia.suite.contract.errors import BackendUnavailable

from .bounds import clamp_limit
from .engines.urls import is_cluster_url
from .resp import (
    BEGIN_REBUILD_LUA,
    INTACT_LUA,
    MARK_INTACT_LUA,
    REPLID_LUA,
    AnyRedis,
    eval_each,
    resp_client,
)
from .tiers import TierDown, TierLost, check_namespace

__all__ = ["CLUSTER_BUCKETS", "RedisLog", "drop_namespace"]

CLUSTER_BUCKETS = 16
"""Buckets of users on a Redis Cluster, one per first hex digit of the user's SHA-256.
Each is a slot (its hash tag names the namespace too, so the namespaces of many
stores spread over the shards): enough for a namespace's users to spread over
3 shards, few enough that vouching for the log (one script per bucket) stays cheap."""

_PUT = """
for i = 1, #ARGV, 3 do
    local old = redis.call('HGET', KEYS[2], ARGV[i])
    if old then redis.call('ZREM', KEYS[1], old) end
    redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 2])
    redis.call('ZADD', KEYS[1], ARGV[i + 1], ARGV[i + 2])
end
return #ARGV / 3
"""

# replid(), server() and vouched(marker) (resp.REPLID_LUA): the replication id, and
# what a marker vouches under (the id and whether the server had replicas).
_REPLID = REPLID_LUA

# KEYS: the user's sorted set, the namespace's intact marker, and (tail_if_idle
# only) the user's write marker. False: the log lost data; 0: a write is unfinished.
_TAIL = _REPLID + """
if not vouched(redis.call('GET', KEYS[2])) then return false end
if KEYS[3] and redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
return redis.call('ZRANGE', KEYS[1], ARGV[1], -1)
"""

_END_WRITE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0
"""

_BEGIN_REBUILD, _MARK_INTACT, _INTACT = BEGIN_REBUILD_LUA, MARK_INTACT_LUA, INTACT_LUA

_REMOVE = """
for i = 1, #ARGV do
    local old = redis.call('HGET', KEYS[2], ARGV[i])
    if old then
        redis.call('ZREM', KEYS[1], old)
        redis.call('HDEL', KEYS[2], ARGV[i])
    end
end
return 0
"""


_NO_ANSWER = (redis_errors.ConnectionError, redis_errors.TimeoutError, OSError,
              redis_errors.ClusterDownError, redis_errors.TryAgainError)
"""What a server that does not answer raises: down, failing over (a Sentinel-managed
connection turns a demoted primary's READONLY into ``ConnectionError``), or a cluster
whose slot has no primary yet. Never an error the server answered a command with."""


def _blob(entry: Entry) -> str:
    return json.dumps([entry.id, entry.seq, entry.role, entry.content, list(entry.covers)],
                      ensure_ascii=False, separators=(",", ":"))


def _entry(user_id: str, blob: bytes) -> Entry:
    entry_id, seq, role, content, covers = json.loads(blob)
    return Entry(entry_id, user_id, int(seq), role, content, tuple(covers))


class RedisLog:
    """ShortTermLog on a Redis-protocol server (``name`` is "redis" or "valkey")."""

    def __init__(self, url: str, namespace: str, *, name: str = "redis",
                 timeout: float = 5.0) -> None:
        self.name = name
        self.namespace = check_namespace(namespace)
        self._client = resp_client(url, timeout=timeout, decode_responses=False)
        self._redis: AnyRedis = self._client.redis
        self._put = self._redis.register_script(_PUT)
        self._remove = self._redis.register_script(_REMOVE)
        self._tail = self._redis.register_script(_TAIL)
        self._end_write = self._redis.register_script(_END_WRITE)
        # Per bucket, (intact marker, rebuild token). The marker holds "<replication
        # id>:<1 if it had replicas>" of the bucket's primary exactly while the log holds
        # every live entry of the bucket's users: it vanishes with the data when the
        # engine restarts empty, a failover changes the id, a primary cut off from its
        # replicas reads 0 (SelfChecking). One bucket unless on a cluster.
        self._cluster = is_cluster_url(url)
        digits = "0123456789abcdef"[:CLUSTER_BUCKETS] if self._cluster else ""
        self._buckets = {digit: self._bucket_keys(digit) for digit in digits or [""]}

    def _bucket_keys(self, digit: str) -> tuple[str, str]:
        if not self._cluster:
            return f"{self.namespace}:intact", f"{self.namespace}:rebuild"
        tag = f"{self.namespace}:{{{self.namespace}.{digit}}}"
        return f"{tag}:intact", f"{tag}:rebuild"

    def _prefix(self, user_id: str) -> tuple[str, str]:
        """The prefix of the user's keys, hash tag included, and the user's bucket."""
        sha = hashlib.sha256(user_id.encode("utf-8")).hexdigest()
        if not self._cluster:
            return f"{self.namespace}:{{{sha}}}", ""
        return f"{self.namespace}:{{{self.namespace}.{sha[0]}}}:{sha}", sha[0]

    def _keys(self, user_id: str) -> list[str]:
        prefix = self._prefix(user_id)[0]
        return [f"{prefix}:z", f"{prefix}:h"]

    def _marker(self, user_id: str) -> str:
        return f"{self._prefix(user_id)[0]}:w"  # same hash tag as the user's other keys

    async def begin_write(self, user_id: str, token: str) -> bool:
        old = await self._redis.set(self._marker(user_id), token, get=True)
        return old is not None

    async def end_write(self, user_id: str, token: str) -> None:
        await self._end_write(keys=[self._marker(user_id)], args=[token])

    async def tail_if_idle(self, user_id: str, limit: int) -> list[Entry] | None:
        return await self._read_tail(user_id, limit, [self._marker(user_id)])

    async def _read_tail(self, user_id: str, limit: int, marker: list[str]) -> list[Entry] | None:
        """One script: the intact check, the write ``marker`` if given, and the tail."""
        intact_key = self._buckets[self._prefix(user_id)[1]][0]
        keys = [self._keys(user_id)[0], intact_key, *marker]
        # ZRANGE takes a long long: -2**64 is "value is not an integer" (issue 14).
        try:
            blobs = await self._tail(keys=keys, args=[-clamp_limit(limit)])
        except _NO_ANSWER as exc:
            # no answer (down, failing over), not a refusal: the store reads the archive
            raise TierDown(f"{self.name} does not answer: {type(exc).__name__}: {exc}") from exc
        if blobs is None:
            raise TierLost(f"{self.name} lost its data (restarted empty?); recover() rebuilds it")
        if blobs == 0:
            return None
        return [_entry(user_id, cast(bytes, b)) for b in blobs]

    async def put(self, entries: Sequence[Entry]) -> None:
        """One script per user; idempotent by entry id (the hash maps each id to its one
        blob in the sorted set, which a second put replaces by itself), so after
        ``TierDown`` (no answer: a failover, a lost reply) the store sends it again.
        Each connection a retry opens asks the Sentinels (or the cluster) for the
        primary again: redis-py drops a connection that failed."""
        by_user: dict[str, list[Any]] = {}
        for entry in entries:
            by_user.setdefault(entry.user_id, []).extend((entry.id, entry.seq, _blob(entry)))
        for user_id, args in by_user.items():
            try:
                await self._put(keys=self._keys(user_id), args=args)
            except _NO_ANSWER as exc:
                raise TierDown(f"{self.name} does not answer: {type(exc).__name__}: "
                               f"{exc}") from exc

    async def remove(self, user_id: str, entry_ids: Sequence[str]) -> None:
        if entry_ids:
            await self._remove(keys=self._keys(user_id), args=list(entry_ids))

    async def tail(self, user_id: str, limit: int) -> list[Entry]:
        entries = await self._read_tail(user_id, limit, [])
        assert entries is not None  # no write marker was asked about
        return entries

    async def intact(self) -> bool:
        """Whether every bucket is (a script per bucket, in one pipeline)."""
        return all(await eval_each(self._redis, _INTACT,
                                   [[marker] for marker, _ in self._buckets.values()]))

    async def begin_rebuild(self) -> str:
        token = secrets.token_hex(8)
        await eval_each(self._redis, _BEGIN_REBUILD,
                        [[rebuild] for _, rebuild in self._buckets.values()], [token])
        return token

    async def mark_intact(self, token: str) -> bool:
        """Vouch for every bucket whose token survived on its primary; whether all did.
        A bucket vouched for while another was not is right: each marker speaks for its
        own bucket's users, and the store reads the archive until all are."""
        done = await eval_each(self._redis, _MARK_INTACT,
                               [list(keys) for keys in self._buckets.values()], [token])
        return all(done)

    async def ids(self, user_id: str) -> set[str]:
        keys: list[bytes | str] = await self._redis.hkeys(self._keys(user_id)[1])
        return {k.decode() if isinstance(k, bytes) else k for k in keys}

    async def delete_user(self, user_id: str) -> None:
        await self._redis.delete(*self._keys(user_id))

    async def ping(self) -> None:
        await self._redis.ping()

    async def aclose(self) -> None:
        await self._client.aclose()


async def drop_namespace(url: str, namespace: str, *, timeout: float = 5.0,
                         name: str = "redis") -> None:
    """Delete every key of a namespace, with a client of its own (the log may be closed)."""
    check_namespace(namespace)
    client = resp_client(url, timeout=timeout)
    try:
        await _unlink_namespace(client.redis, namespace)
    except (RedisError, OSError) as exc:
        raise BackendUnavailable(name, f"dropping namespace {namespace}: "
                                 f"{type(exc).__name__}: {exc}") from exc
    finally:
        await client.aclose()


async def _unlink_namespace(redis: AnyRedis, namespace: str) -> None:
    batch: list[bytes] = []
    async for key in redis.scan_iter(match=f"{namespace}:*", count=500):
        batch.append(key)
        if len(batch) >= 500:
            await redis.unlink(*batch)
            batch.clear()
    if batch:
        await redis.unlink(*batch)
