"""RedisVsetIndex: a VectorIndex on Redis 8 vector sets (VADD / VSIM / VREM).

One vector set per user, keyed ``<namespace>:v:<hex sha256(user id)>``: the key
name carries no user syntax, and isolation is by key, not by a filter. The
element name is the entry id (binary-safe). ``NOQUANT`` keeps exact float32
vectors, so a query with an entry's own vector scores 1.0. Vector sets are
plain keys, written synchronously: an upsert is visible when VADD returns.

Redis may run without persistence, so the index can tell when it lost its
data (``SelfChecking``): a namespace-wide ``intact`` key vanishes with it, a
query then raises ``TierLost``, and the store rebuilds the index in recover().
"""

from __future__ import annotations

import secrets
import struct
from collections.abc import Sequence

from redis.asyncio import Redis

from nomnesia.adapters.tiers import TierLost
from nomnesia.suite.contract import Entry

from ._common import (
    IndexBase,
    check_batch,
    check_k,
    command,
    settle_and_drop,
    user_key,
)

__all__ = ["RedisVsetIndex"]

_MAX_EF = 1_000_000
# Set the intact marker only if the rebuild that asked for it is still the
# current one: an engine that restarted meanwhile lost the rebuild key too.
_MARK = """
if redis.call('GET', KEYS[2]) == ARGV[1] then
  redis.call('SET', KEYS[1], '1')
  redis.call('DEL', KEYS[2])
  return 1
end
return 0
"""


class RedisVsetIndex(IndexBase):
    """Vectors in Redis 8 vector sets, one key per user."""

    name = "redis-vsets"
    search_staleness = 0.0

    def __init__(self, url: str, *, namespace: str | None = None, dim: int = 384,
                 timeout: float = 5.0,
                 reuse: bool = False) -> None:
        super().__init__(namespace=namespace, dim=dim, timeout=timeout, reuse=reuse)
        self._redis: Redis = Redis.from_url(url, socket_timeout=timeout,
                                            socket_connect_timeout=timeout)
        # Not of the form <64 hex>, so never a user's key; matched by drop()'s scan.
        self._intact_key = f"{self.namespace}:v:intact"
        self._rebuild_key = f"{self.namespace}:v:rebuild"
        self._mark = self._redis.register_script(_MARK)

    def key(self, user_id: str) -> str:
        return f"{self.namespace}:v:{user_key(user_id)}"

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
                await self._redis.set(self._intact_key, "1")
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
        pipe = self._redis.pipeline(transaction=True)  # the marker and the answer, atomically
        pipe.exists(self._intact_key)
        pipe.execute_command("VSIM", self.key(user_id), "FP32", self._blob(vector), "COUNT", k,
                             "EF", min(max(200, k), _MAX_EF))
        intact, found = await self._calls(self.timeout, pipe.execute())
        if not intact:
            raise TierLost(f"{self.name} lost its data (restarted empty?); recover() rebuilds it")
        return [e.decode("utf-8") for e in found or []]

    async def intact(self) -> bool:
        return bool(await self._calls(self.timeout, self._redis.exists(self._intact_key)))

    async def begin_rebuild(self) -> str:
        token = secrets.token_hex(8)
        await self._calls(self.timeout, self._redis.set(self._rebuild_key, token))
        return token

    async def mark_intact(self, token: str) -> bool:
        done = await self._calls(self.timeout, self._mark(
            keys=[self._intact_key, self._rebuild_key], args=[token]))
        return bool(done)

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
            await self._redis.aclose()
