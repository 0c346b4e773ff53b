"""Causes of the AutoGen audits: ``RedisMemory`` (autogen-ext, on redisvl) and ``ListMemory``.

``RedisMemory`` is a thin layer over redisvl's ``MessageHistory``: one RediSearch
index per memory, over a key prefix, and every entry tagged with a session tag
that ``RedisMemory`` never sets. Its ``async`` methods call redis-py's
synchronous client.
"""

from __future__ import annotations

from . import Cause

__all__ = ["CAUSES"]

REDIS = ("autogen-redis",)
_INIT = "autogen_ext.memory.redis._redis_memory:RedisMemory.__init__"
_ADD = "autogen_ext.memory.redis._redis_memory:RedisMemory.add"
_QUERY = "autogen_ext.memory.redis._redis_memory:RedisMemory.query"
_CLEAR = "autogen_ext.memory.redis._redis_memory:RedisMemory.clear"

CAUSES: tuple[Cause, ...] = (
    Cause("autogen-redis-clear-prefix", REDIS, ("G8", "G9"), "data loss",
          "RedisMemory.clear is redisvl's MessageHistory.clear, which is SearchIndex.clear: "
          "it deletes every document the index covers; MessageHistorySchema.from_params "
          "(redisvl) creates the index over the bare prefix, while the keys are "
          "<prefix>:<ulid>",
          "clear() of the memory with prefix 'mem:ann' deletes the entries of the memories "
          "with prefixes 'mem:anna' and 'mem:ann:1' (a RediSearch prefix is a string "
          "prefix), though each memory reads only its own entries; the other memories are "
          "emptied with no error",
          "a = RedisMemory(RedisMemoryConfig(prefix='mem:ann', index_name='mem:ann', "
          "sequential=True)); b = ... prefix 'mem:anna'; await b.add(c); await a.clear(); "
          "(await b.query('')).results  # []",
          "two memories on one Redis whose prefix is a string prefix of the other's (one "
          "memory per user under a common prefix: 'ann' and 'anna', 'ann' and 'ann:1')",
          documented="redisvl's MessageHistory.clear docstring: 'Clears by index membership, "
                     "so it removes the documents the live index covers'; neither RedisMemory "
                     "nor redisvl says that an index covers other prefixes that start with its "
                     "own",
          functions=(_CLEAR,
                     "redisvl.extensions.message_history.message_history:MessageHistory.clear",
                     "redisvl.extensions.message_history.schema:MessageHistorySchema."
                     "from_params"),
          # A forget that empties another user's history (G8 names the forget, G9 the other
          # user); concurrently, an acknowledged append gone without a forget of its own.
          match=(r"^G(?:8 forget: |9 isolation: |1 durability: [^\n]*was acknowledged, then "
                 r"read)",),
          yields_to=("autogen-redis-reopen-reads-nothing",),
          shows=r"deleted the entries of"),
    Cause("autogen-redis-reopen-reads-nothing", REDIS, ("G1",), "data loss",
          "RedisMemory.__init__ makes redisvl's MessageHistory without a session_tag, so "
          "BaseMessageHistory.__init__ (redisvl) tags every entry with a ULID made for that "
          "object, and RedisMemory.query reads only that tag; RedisMemoryConfig has no field "
          "for a tag",
          "a RedisMemory made again with the same configuration (an application after a "
          "restart, a second worker) reads none of what the first stored, though it is all "
          "still in Redis; the new object's clear() deletes it unseen",
          "m = RedisMemory(cfg); await m.add(c); (await RedisMemory(cfg).query('')).results  "
          "# []",
          "always, across two RedisMemory objects with one configuration",
          documented="redisvl's MessageHistory docstring: session_tag 'Defaults to instance "
                     "ULID'; RedisMemory's docs do not say that its memory is lost to any other "
                     "instance",
          functions=(_INIT,
                     "redisvl.extensions.message_history.base_history:BaseMessageHistory."
                     "__init__"),
          match=(r"^G1 durability: \d+ of \d+ appends acknowledged by one store object were "
                 r"gone when the factory opened a second one",),
          shows=r"a second one with the same config reads \[\]"),
    Cause("autogen-redis-trailing-separator", REDIS, ("G1",), "data loss",
          "BaseStorage._key (redisvl) strips every ':' from the end of the prefix and adds "
          "one back, while MessageHistorySchema.from_params (redisvl) creates the index over "
          "the prefix as RedisMemory.__init__ gives it",
          "a memory whose prefix ends in two or more ':' writes its entries outside its own "
          "index: add() returns normally, the entry is in Redis, query() returns nothing "
          "(and the entry falls under the index of the shorter prefix, whose clear() deletes "
          "it)",
          "m = RedisMemory(RedisMemoryConfig(prefix='mem:ann::', index_name='mem:ann::', "
          "sequential=True)); await m.add(c); (await m.query('')).results  # []",
          "a prefix ending in '::' (one memory per user under 'mem:' + the user id, for a "
          "user id ending in ':' such as 'ann::' or '::')",
          documented=None,
          functions=("redisvl.index.storage:BaseStorage._key",
                     "redisvl.extensions.message_history.schema:MessageHistorySchema."
                     "from_params", _INIT),
          match=(r"^G1 durability: user id '[^'\n]*::': acknowledged appends are not live",),
          shows=r"outside the index"),
    Cause("autogen-redis-clear-keeps-index", REDIS, ("G8",), "hazard",
          "RedisMemory.clear is MessageHistory.clear (redisvl): 'Delete every message, "
          "leaving the index in place'; only RedisMemory.close drops the index",
          "clearing a user's memory leaves its RediSearch index, whose name is the memory's "
          "index_name: with one memory per user named after the user, Redis still lists the "
          "user id (FT._LIST) after the user was forgotten",
          "m = RedisMemory(RedisMemoryConfig(index_name='mem:ann', ...)); await m.add(c); "
          "await m.clear()  # FT._LIST still lists 'mem:ann'",
          "a memory per user whose index_name holds the user id, forgotten with clear()",
          documented="RedisMemory.clear's docstring: 'Clear all entries from memory, "
                     "preserving the RedisMemory resources'; redisvl's MessageHistory.clear: "
                     "'leaving the index in place'",
          functions=(_CLEAR,
                     "redisvl.extensions.message_history.message_history:MessageHistory.clear"),
          match=(r"^G8 forget: [^\n]*still hold the user", r"search index '[^'\n]*' \(name\)"),
          kind="mapping", shows=r"still lists the index"),
    Cause("autogen-redis-blocks-event-loop", REDIS, ("G12",), "availability",
          "RedisMemory.add, RedisMemory.query and RedisMemory.clear are coroutines that call "
          "redisvl's synchronous MessageHistory over redis-py's synchronous Redis client "
          "(RedisMemory.__init__: Redis.from_url), on the event loop's thread",
          "while Redis is slow or a connection stalls, the whole event loop stands still: no "
          "other task runs and no timeout fires (asyncio.wait_for(memory.add(c), 0.2) returns "
          "when Redis answers); with redis-py 8's defaults (5 s socket timeout per read, then "
          "retries) one call held the loop for 45 to 80 s under the suite's faults",
          "asyncio.wait_for(memory.add(c), 0.2) while Redis is paused (CLIENT PAUSE 2000)  "
          "# returns after 2 s; the loop ran nothing meanwhile",
          "any slow reply: a paused or overloaded Redis, a failover, a stalled network; "
          "RedisMemoryConfig takes no client settings (timeouts, retries)",
          documented=None,
          functions=(_ADD, _QUERY, _CLEAR, _INIT),
          match=(r"blocked the event loop for [\d.]+ s",),
          # Seen only when a fault slows Redis while a call is in flight (the faults drawn
          # vary); its reproduction shows it every time.
          racy=True,
          shows=r"the event loop did not run for"),
)
