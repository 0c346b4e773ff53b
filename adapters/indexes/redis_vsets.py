"""RedisVsetIndex: a VectorIndex on Redis 8 vector sets (VADD / VSIM / VREM).

One vector set per user, keyed ``<namespace>:v:<hex sha256(user id)>``: the key
name carries no user syntax, and isolation is by key, not by a filter. The
element name is the entry id (binary-safe). ``NOQUANT`` keeps exact float32
vectors, so a query with an entry's own vector scores 1.0. Vector sets are
plain keys, written synchronously: an upsert is visible when VADD returns.

Redis may run without persistence, so the index can tell when it lost its
data (``SelfChecking``): a namespace-wide ``intact`` key vanishes with it, a
query then raises ``TierLost``, and the store rebuilds the index in recover().
The key holds the replication id of the server it was set on, and whether that
server had replicas (``resp.REPLID_LUA``, the log's marker protocol), so a failover
to a replica (a Sentinel group, a Redis Cluster) that may lack the last VADDs, or an
old primary thawed beside a promoted one, is distrusted the same way; a query reads
it and runs VSIM in one script.

On a Redis Cluster (a ``redis+cluster://`` URL) the script's two keys must share
a slot, so, as the log does (``redis_log``), users fall into buckets by the first
hex digit of their key: a user's set is ``<ns>:v:{<ns>.v.<digit>}:<hex>``, and each
bucket has its marker and rebuild token on its own slot, holding the replication
id of the primary that serves the bucket.
"""

from __future__ import annotations

import secrets
import struct
from collections.abc import Sequence

from nomnesia.adapters.engines.urls import is_cluster_url
from nomnesia.adapters.resp import (
    BEGIN_REBUILD_LUA,
    INTACT_LUA,
    MARK_INTACT_LUA,
    REPLID_LUA,
    SET_INTACT_LUA,
    AnyRedis,
    eval_each,
    resp_client,
)
from nomnesia.adapters.tiers import TierLost
from nomnesia.suite.contract import Entry

from ..bounds import check_k
from ._common import IndexBase, check_batch, command, settle_and_drop, user_key

__all__ = ["RedisVsetIndex"]

_MAX_EF = 1_000_000
_BUCKETS = "0123456789abcdef"
# Set the intact marker only if the rebuild that asked for it is still the
# current one: an engine that restarted meanwhile lost the rebuild key too.
# (RedisSearchIndex's marker; this index binds its own to the replication id.)
_MARK = """
if redis.call('GET', KEYS[2]) == ARGV[1] then
  redis.call('SET', KEYS[1], '1')
  redis.call('DEL', KEYS[2])
  return 1
end
return 0
"""

# The marker protocol, shared with the log (resp.py): a marker holds the replication id
# and whether the server had replicas; a rebuild token is bound to the replication id.
_SET_INTACT, _INTACT = SET_INTACT_LUA, INTACT_LUA
_BEGIN_REBUILD, _MARK_INTACT = BEGIN_REBUILD_LUA, MARK_INTACT_LUA

# KEYS: the user's set, the marker. ARGV: the FP32 query, COUNT, EF. 0: not intact.
_QUERY = REPLID_LUA + """
if not vouched(redis.call('GET', KEYS[2])) then return 0 end
if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
return redis.call('VSIM', KEYS[1], 'FP32', ARGV[1], 'COUNT', ARGV[2], 'EF', ARGV[3])
"""


class RedisVsetIndex(IndexBase):
    """Vectors in Redis 8 vector sets, one key per user."""

    name = "redis-vsets"
    search_staleness = 0.0

    def __init__(self, url: str, *, namespace: str | None = None, dim: int = 384,
                 timeout: float = 5.0,
                 reuse: bool = False) -> None:
        super().__init__(namespace=namespace, dim=dim, timeout=timeout, reuse=reuse)
        self._client = resp_client(url, timeout=timeout)
        self._redis: AnyRedis = self._client.redis
        self._cluster = is_cluster_url(url)
        # (marker, rebuild token) per bucket; not of the form <64 hex>, so never a
        # user's key; matched by drop()'s scan. One bucket unless on a cluster.
        self._buckets = {digit: self._bucket_keys(digit)
                         for digit in (_BUCKETS if self._cluster else [""])}
        self._query = self._redis.register_script(_QUERY)

    def _bucket_keys(self, digit: str) -> tuple[str, str]:
        if not self._cluster:
            return f"{self.namespace}:v:intact", f"{self.namespace}:v:rebuild"
        tag = f"{self.namespace}:v:{{{self.namespace}.v.{digit}}}"
        return f"{tag}:intact", f"{tag}:rebuild"

    def key(self, user_id: str) -> str:
        sha = user_key(user_id)
        if not self._cluster:
            return f"{self.namespace}:v:{sha}"
        return f"{self.namespace}:v:{{{self.namespace}.v.{sha[0]}}}:{sha}"

    def _marker(self, user_id: str) -> str:
        return self._buckets[user_key(user_id)[0] if self._cluster else ""][0]

    def _blob(self, vector: Sequence[float]) -> bytes:
        return struct.pack(f"<{self.dim}f", *vector)

    async def create(self) -> None:
        """Own the key prefix (dropped on ``aclose``) if no key uses it yet.

        A fresh namespace is complete (empty), so it is marked intact; an
        existing one keeps its marker, or its lack of one.
        """
        async def run() -> None:
            async for _ in self._redis.scan_iter(match=f"{self.namespace}:v:*", count=1000):
                return
            self._created = True
            if not self.reuse:  # reopened and found empty: recover() vouches after a rebuild
                await eval_each(self._redis, _SET_INTACT,
                                [[marker] for marker, _ in self._buckets.values()])
        await self._calls(self.timeout * 10, run())

    async def upsert(self, entries: Sequence[Entry], vectors: Sequence[Sequence[float]]) -> None:
        check_batch(entries, vectors, self.dim)
        if not entries:
            return
        pipe = self._redis.pipeline(transaction=False)
        for entry, vector in zip(entries, vectors, strict=True):
            pipe.execute_command("VADD", self.key(entry.user_id), "FP32", self._blob(vector),
                                 entry.id.encode("utf-8"), "NOQUANT")
        await self._calls(self.timeout, pipe.execute())

    async def delete(self, user_id: str, entry_ids: Sequence[str]) -> None:
        if not entry_ids:
            return
        pipe = self._redis.pipeline(transaction=False)
        for entry_id in entry_ids:
            pipe.execute_command("VREM", self.key(user_id), entry_id.encode("utf-8"))
        await self._calls(self.timeout, pipe.execute())

    async def query(self, user_id: str, vector: Sequence[float], k: int) -> list[str]:
        k = check_k(k)
        # The marker and the answer in one script: atomically, on the user's slot.
        found = await self._calls(self.timeout, self._query(
            keys=[self.key(user_id), self._marker(user_id)],
            args=[self._blob(vector), k, min(max(200, k), _MAX_EF)]))
        if found == 0:
            raise TierLost(f"{self.name} lost its data (restarted empty, or failed over?); "
                           "recover() rebuilds it")
        return [e.decode("utf-8") for e in found or []]

    async def intact(self) -> bool:
        """Whether every bucket is (a script per bucket, in one pipeline, as the log)."""
        found = await self._calls(self.timeout, eval_each(
            self._redis, _INTACT, [[marker] for marker, _ in self._buckets.values()]))
        return all(found)

    async def begin_rebuild(self) -> str:
        token = secrets.token_hex(8)
        await self._calls(self.timeout, eval_each(
            self._redis, _BEGIN_REBUILD, [[rebuild] for _, rebuild in self._buckets.values()],
            [token]))
        return token

    async def mark_intact(self, token: str) -> bool:
        """Vouch for every bucket whose token survived on its primary; whether all did."""
        done = await self._calls(self.timeout, eval_each(
            self._redis, _MARK_INTACT, [list(keys) for keys in self._buckets.values()], [token]))
        return all(done)

    async def ids(self, user_id: str) -> set[str]:
        # VRANDMEMBER with a count at least the set's size returns every element.
        found = await self._calls(self.timeout, command(
            self._redis, "VRANDMEMBER", self.key(user_id), 2**31 - 1))
        return {e.decode("utf-8") for e in found or []}

    async def delete_user(self, user_id: str) -> None:
        await self._calls(self.timeout, self._redis.delete(self.key(user_id)))

    async def drop(self) -> None:
        """Delete every key of the namespace (the prefix is glob-safe by construction)."""
        async def run() -> None:
            async for key in self._redis.scan_iter(match=f"{self.namespace}:v:*", count=1000):
                await self._redis.delete(key)
        await self._calls(self.timeout * 10, run())
        self._created = False

    async def aclose(self) -> None:
        try:
            await settle_and_drop(self)
        finally:
            await self._client.aclose()
