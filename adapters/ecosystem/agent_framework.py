"""Microsoft Agent Framework's ``RedisHistoryProvider`` as a store of the ``history`` profile.

``agent-framework-redis`` keeps an agent session's chat in one Redis list per
session (``save_messages`` reads the list, drops what it takes for a replay of it,
and RPUSHes the rest in a MULTI; ``get_messages`` is an LRANGE; ``clear`` a DEL).
It fits none of the suite's interface options, so this is the thinnest faithful
``--store`` adapter a team would write:

- one session per user id: ``session_id`` is the user id, over one provider
  (scoped keys, ``application_id`` fresh per store, so every store starts empty);
- ``append_message(u, role, content)`` is ``save_messages(u, [Message(role, [text])])``;
  the contract's ``summary`` role has no counterpart and is refused, as SPEC's
  vocabulary check does for every mapping;
- ``get_history(u, limit)`` is ``get_messages(u)``, its newest ``limit`` (the library
  takes no limit: the adapter checks it, as SPEC's vocabulary, and slices);
- ``forget(u)`` is ``clear(u)``.

Nothing is added that the library lacks: no lock, id, retry or validation of user
ids and contents, which go to the library as given.

Why not through ``--agent-framework-history`` (issue 33), whose mapping makes the same
calls: this audit's one finding (``agent-framework-drops-repeated-turn``) comes from its
probe (``probes.repeated_turn_dropped``: the suite's own contents never repeat a turn), and
``report._probe`` runs probes only on ``--store`` factories, whose stores it opens itself;
an adapter may not import ``nomnesia.suite.interfaces`` to open an interface store
(``tests/test_layers.py``). Moving it needs the report to open interface stores first.

Its pins (``redis<7.2.1``, ``redisvl<0.16`` in 1.0.0b261022) conflict with the other
audited libraries', so ``nox -s "audit(agent-framework-redis)"`` runs it in a venv
of its own (``Audit.requires``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import redis.asyncio as redis
from agent_framework import Message
from agent_framework_redis import RedisHistoryProvider

from nomnesia.suite.validation import validate_limit, validate_role

from ._engines import namespace, url

__all__ = ["AgentFrameworkHistory", "factory"]


class AgentFrameworkHistory:
    """The suite's calls on one ``RedisHistoryProvider``, one session per user id."""

    nomnesia_profile = "history"

    def __init__(self, provider: RedisHistoryProvider) -> None:
        self.provider = provider

    async def append_message(self, user_id: str, role: str, content: str) -> None:
        message = Message(role=validate_role(role), contents=[content])
        await self.provider.save_messages(user_id, [message])

    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]:
        limit = validate_limit("limit", limit)  # the library has none: the slice is ours
        messages = await self.provider.get_messages(user_id)
        newest = messages[-limit:]
        return [{"role": str(m.role), "content": m.text} for m in newest]

    async def forget(self, user_id: str) -> None:
        await self.provider.clear(user_id)


@asynccontextmanager
async def factory() -> AsyncIterator[AgentFrameworkHistory]:
    """``--store nomnesia.adapters.ecosystem.agent_framework:factory``: a fresh application."""
    client: Any = redis.from_url(url("redis"), decode_responses=True)
    application = namespace("af")
    provider = RedisHistoryProvider(redis_client=client, application_id=application)
    try:
        yield AgentFrameworkHistory(provider)
    finally:
        async for key in client.scan_iter(match=f"*{application}*"):
            await client.delete(key)
        await client.aclose()
