"""agno's ``BaseDb`` and ``AsyncBaseDb`` (``agno.db``: ``SqliteDb``, ``PostgresDb``,
``InMemoryDb``, their async twins ...) as a store of the ``history`` profile, through
agent sessions and their runs, persisted as agno's ``Agent`` persists a run.

Why sessions, not user memories: an agent's conversation is its session's runs; user
memories are what an LLM distilled from them (``MemoryManager``), rewritten by id. And
sessions are where agno #7479 lived (``upsert_session`` rewrote a session's whole
``runs``, so two concurrent runs on one session lost one).

What maps to what:

- one session per user: session id and ``user_id`` the user id, agent ``nomnesia``;
- ``append_message(u, role, content)`` is one run of one message, stored in agno 3's
  way (``Agent._apersist_run_in_session``): ``get_session`` (a new ``AgentSession`` if
  there is none), ``session.upsert_run(run)``, ``upsert_session(session)``, then
  ``upsert_run(run, session_id, user_id, run_index)`` with ``run_index`` from
  ``agno.session._utils.resolve_run_index`` (the run's place in the session as read);
  the run is ``COMPLETED`` and holds one ``Message(role, content)`` (agno's roles are
  SPEC's four);
- ``get_history(u, limit)`` is ``get_session(u, AGENT, user_id=u)``: the messages of its
  runs in the order agno attaches them (``run_index``, then ``created_at``), of which
  the newest ``limit`` (agno's ``runs_limit`` counts runs, and filters them for an LLM's
  context, so the slice is the mapping's);
- ``forget(u)`` is ``delete_session(u, user_id=u)``, which deletes the session's runs too.

A sync ``BaseDb``'s calls run in a worker thread (``asyncio.to_thread``), each awaited
to its end when cancelled (a cancel reaches it between calls, as on agno's ``Agent``,
which calls a sync database on the event loop); an ``AsyncBaseDb``'s are awaited.

A run of several messages is one ``upsert_run``, so the interface faults apply: a run
one message of which cannot be stored must store none of them.

What it cannot see: message ids (agno makes its own), user memories, session state and
summaries, and search (agno's sessions have none).
"""

from __future__ import annotations

import inspect
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from ..contract.validation import validate_limit
from ._base import Mapped, contract_role, in_thread, text_of
from ._poison import PoisonedCall, Unserializable, describe_batch

__all__ = ["AGENT", "AgnoSessions", "open_store"]

AGENT = "nomnesia"


class AgnoSessions(Mapped):
    """The suite's calls on one agno database: an agent session per user."""

    requires = ("get_session", "upsert_session", "upsert_run", "delete_session")

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """``name`` on the database: awaited on an ``AsyncBaseDb``, in a worker thread on a
        ``BaseDb`` (its calls block on the engine)."""
        db = await self._object()
        method = getattr(db, name)
        if inspect.iscoroutinefunction(method):
            return await method(*args, **kwargs)
        return await in_thread(method, *args, **kwargs)

    async def _session(self, user_id: str) -> Any:
        from agno.db.base import SessionType

        return await self._call("get_session", session_id=user_id,
                                session_type=SessionType.AGENT, user_id=user_id)

    async def _store_run(self, user_id: str, messages: list[Any]) -> None:
        """Persist one run of ``messages`` as ``Agent._apersist_run_in_session`` does."""
        from agno.run.agent import RunOutput
        from agno.run.base import RunStatus
        from agno.session import AgentSession
        from agno.session._utils import resolve_run_index

        session = await self._session(user_id)
        if session is None:
            session = AgentSession(session_id=user_id, agent_id=AGENT, user_id=user_id,
                                   created_at=int(time.time()))
        run = RunOutput(run_id=str(uuid.uuid4()), agent_id=AGENT, session_id=user_id,
                        user_id=user_id, messages=messages, status=RunStatus.completed,
                        created_at=int(time.time()))
        session.upsert_run(run=run)
        session.updated_at = int(time.time())
        await self._call("upsert_session", session)
        await self._call("upsert_run", run=run, session_id=user_id, user_id=user_id,
                         run_index=resolve_run_index(session, run))

    @staticmethod
    def _message(role: str, content: str, poison: Any = None) -> Any:
        from agno.models.message import Message

        message = Message(role=contract_role(role), content=content)
        if poison is not None:
            message.provider_data = {"value": poison}
        return message

    async def append_message(self, user_id: str, role: str, content: str) -> None:
        await self._store_run(user_id, [self._message(role, content)])

    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]:
        limit = validate_limit("limit", limit)  # the newest `limit`: the slice is ours
        session = await self._session(user_id)
        if session is None:
            return []
        found = [{"role": str(m.role), "content": text_of(m.content)}
                 for run in session.runs or () for m in run.messages or ()]
        return found[-limit:] if limit else []

    async def forget(self, user_id: str) -> None:
        await self._call("delete_session", user_id, user_id=user_id)

    async def poisoned_batch(self, user_id: str, batch: Sequence[tuple[str, str]],
                             poisoned: int) -> PoisonedCall:
        """One run of every message of ``batch``, message ``poisoned``'s ``provider_data``
        holding an object no serializer knows: agno keeps a run as JSON, so the run cannot
        be stored, and none of its messages may be."""
        messages = [self._message(role, content, Unserializable() if i == poisoned else None)
                    for i, (role, content) in enumerate(batch)]
        db = await self._object()

        async def run() -> object:
            await self._store_run(user_id, messages)
            return None

        where = describe_batch(len(messages), poisoned, "provider_data")
        return PoisonedCall(f"{type(db).__name__} run of [{where}] (upsert_session, "
                            f"upsert_run)", run)


@asynccontextmanager
async def open_store(factory: Callable[..., Any]) -> AsyncIterator[AgnoSessions]:
    async with AgnoSessions(factory) as store:
        yield store


MAPPED = AgnoSessions
"""The mapping, whose ``fits`` says whether an object suits this option."""
