"""AutoGen's ``RedisMemory`` (sequential) and ``ListMemory``: history-profile stores.

An AutoGen ``Memory`` is one agent's memory, with no user in its API, so a team
serving several users keeps one per user. The library's behaviour (what the
audit measures):

- ``autogen_ext.memory.redis.RedisMemory`` with ``sequential=True`` is
  redisvl's ``MessageHistory`` on a RediSearch index (``index_name``) over the
  keys ``prefix``; ``add`` stores the content as a ``user`` message with the
  ``MemoryContent``'s metadata; ``query`` is ``MessageHistory.get_recent(top_k)``
  (sorted by timestamp, oldest first); ``clear`` is ``MessageHistory.clear``,
  which deletes every document the index covers; ``close`` *drops the index and
  every entry* (its docstring says so). ``RedisMemory.__init__`` passes no
  ``session_tag``, so redisvl tags every message with a ULID made for that
  object, and reads only that tag. Its ``async`` methods call redis-py's
  synchronous client;
- ``autogen_core.memory.ListMemory`` keeps a Python list in the process:
  ``add`` appends, ``query`` returns the list, ``clear`` empties it.

The adapter's mapping (not the library's): one memory per user id, opened on
first use; for ``RedisMemory`` its ``index_name`` and ``prefix`` are
``<namespace>:<user id>``, the namespace from ``store_namespace()``, so a
second store opened in that namespace (an application after a restart) is
configured exactly as the first. ``append_message`` is ``add`` of a
``MemoryMimeType.TEXT`` content whose metadata holds the role (``RedisMemory``
stores every content as role ``user``); ``get_history`` is ``query`` with
``top_k=limit`` (``ListMemory`` ignores ``top_k``: the adapter keeps the last
``limit``); ``forget`` is ``clear``. On close, a ``RedisMemory`` is
``close()``-d (its data dropped) unless ``keep_data()`` says to keep it: then
it is left as it is, since ``close`` is the only way to let one go and it
deletes everything. The adapter validates only the contract's own vocabulary
(``role``, ``limit``); user ids and contents reach the library as given. No
message ids, no search (sequential mode refuses semantic queries), no
compaction: the ``history`` profile.

``RedisMemory`` runs as configured by default: redis-py 8's client waits
``DEFAULT_SOCKET_TIMEOUT`` (5 s) per read and retries, all on the event loop's
thread, so under the suite's faults one call held the whole loop for 45 to 80 s
(``autogen-redis-blocks-event-loop``). ``RedisMemoryConfig`` has no field for
the client's settings, and the adapter adds none.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.metadata import version
from typing import Any

from autogen_core.memory import ListMemory, Memory, MemoryContent, MemoryMimeType

from nomnesia.adapters.engines.session import keep_data, store_namespace

from . import _engines
from ._common import ALL, check_append, clamp

__all__ = ["AutogenMemoryStore", "list_factory", "redis_factory"]


class AutogenMemoryStore:
    """The history profile over one AutoGen ``Memory`` per user id."""

    def __init__(self, make: Any, *, library: str, backend: str) -> None:
        self._make = make
        self.library = library
        self.backends = (backend,)
        self.memories: dict[str, Memory] = {}

    def memory(self, user_id: str) -> Memory:
        memory = self.memories.get(user_id)
        if memory is None:
            memory = self.memories[user_id] = self._make(user_id)
        return memory

    async def append_message(self, user_id: str, role: str, content: str) -> None:
        role, _ = check_append(role, None)
        await self.memory(user_id).add(MemoryContent(
            content=content, mime_type=MemoryMimeType.TEXT, metadata={"role": role}))

    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]:
        limit = clamp("limit", limit)
        found = await self.memory(user_id).query("", top_k=min(limit, ALL))
        return [{"role": str((m.metadata or {}).get("role", "?")), "content": str(m.content)}
                for m in found.results][-limit:]

    async def forget(self, user_id: str) -> None:
        await self.memory(user_id).clear()

    async def aclose(self) -> None:
        if keep_data():
            return
        memories, self.memories = list(self.memories.values()), {}
        for memory in memories:
            await memory.close()


@asynccontextmanager
async def redis_factory() -> AsyncIterator[AutogenMemoryStore]:
    """``--store nomnesia.adapters.ecosystem.autogen_memory:redis_factory``: a sequential
    ``RedisMemory`` per user on the ``redis-search`` engine (Redis with RediSearch), each
    configured as the application after a restart would configure it again."""
    from autogen_ext.memory.redis import RedisMemory, RedisMemoryConfig

    namespace, url = store_namespace(), _engines.url("redis-search")

    def make(user_id: str) -> RedisMemory:
        name = f"{namespace}:{user_id}"
        return RedisMemory(RedisMemoryConfig(redis_url=url, index_name=name, prefix=name,
                                             sequential=True))

    store = AutogenMemoryStore(make, library=f"autogen-ext {version('autogen-ext')}",
                               backend="RedisMemory (redisvl MessageHistory)")
    try:
        yield store
    finally:
        await store.aclose()


@asynccontextmanager
async def list_factory() -> AsyncIterator[AutogenMemoryStore]:
    """``--store nomnesia.adapters.ecosystem.autogen_memory:list_factory``: a ``ListMemory``
    per user, in the process (nothing to name again: no namespace asked for)."""
    store = AutogenMemoryStore(lambda user_id: ListMemory(name=user_id),
                               library=f"autogen-core {version('autogen-core')}",
                               backend="ListMemory (in process)")
    try:
        yield store
    finally:
        await store.aclose()
