"""Microsoft Agent Framework's ``RedisHistoryProvider``, audited through
``--agent-framework-history``.

``agent-framework-redis`` keeps an agent session's chat in one Redis list per
session (``save_messages`` reads the list, drops what it takes for a replay of it,
and RPUSHes the rest in a MULTI; ``get_messages`` is an LRANGE; ``clear`` a DEL).
The suite's mapping (``nomnesia.suite.interfaces.agent_framework``) calls it as an
agent does, a session per user id; this module only makes the provider on the
suite's Redis, with a fresh ``application_id`` per store (its keys are scoped by it,
so every store starts empty), and deletes the store's keys when it closes.

Its one finding (``agent-framework-drops-repeated-turn``) comes from a probe
(``probes.repeated_turn_dropped``: the suite's own contents never repeat a turn),
which ``report probe`` runs on the store the option opens.

Its pins (``redis<7.2.1``, ``redisvl<0.16`` in 1.0.0b261022) conflict with the other
audited libraries', so ``nox -s "audit(agent-framework-redis)"`` runs it in a venv
of its own (``Audit.requires``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import redis.asyncio as redis
from agent_framework_redis import RedisHistoryProvider

from ._engines import namespace, url

__all__ = ["factory"]


@asynccontextmanager
async def factory() -> AsyncIterator[RedisHistoryProvider]:
    """``--agent-framework-history nomnesia.adapters.ecosystem.agent_framework:factory``:
    a provider on a fresh application."""
    client: Any = redis.from_url(url("redis"), decode_responses=True)
    application = namespace("af")
    try:
        yield RedisHistoryProvider(redis_client=client, application_id=application)
    finally:
        async for key in client.scan_iter(match=f"*{application}*"):
            await client.delete(key)
        await client.aclose()
