"""Planted defects behind ``--adk-memory`` and ``--agno-db`` (issue 46): the real library's
class with one thing broken, so that the option's tests can show the suite catches it.

- :class:`RewindIgnored`: ADK's ``InMemoryMemoryService`` whose ``add_session_to_memory``
  keeps the events a rewind took back (the memory a user asked to forget comes back);
- :class:`InlineRuns`: agno's ``InMemoryDb`` made async, whose ``upsert_run`` keeps a
  session's runs inline and rewrites the whole list from a copy read before an await, as
  ``upsert_session`` did before agno 3 (agno #7479): two concurrent runs on one session
  lose one.
- :class:`UserlessEntities` (issue 46 item 3): agno 3's ``EntityMemoryStore`` whose rows
  are keyed without the user again, as before 3.0.0 (agno #9319): two users' same-named
  entities share one row.
"""

from __future__ import annotations

import types
from collections.abc import Generator
from typing import Any

from agno.db.in_memory import InMemoryDb
from agno.learn import EntityMemoryStore
from google.adk.memory import InMemoryMemoryService

from nomnesia.suite.examples import agno_entities


@types.coroutine
def one_turn() -> Generator[None, None, None]:
    """Give the event loop one turn (what ``asyncio.sleep(0)`` does, with no timer)."""
    yield


class RewindIgnored(InMemoryMemoryService):
    """``add_session_to_memory`` that adds the session's events and removes none."""

    async def add_session_to_memory(self, session: Any) -> None:
        await self.add_events_to_memory(app_name=session.app_name, user_id=session.user_id,
                                        events=session.events, session_id=session.id)


class InlineRuns:
    """An async agno database over ``InMemoryDb`` whose runs live in one list per session,
    rewritten whole on every ``upsert_run`` from a copy read before an await."""

    def __init__(self) -> None:
        self.db = InMemoryDb()
        self.runs: dict[str, list[Any]] = {}

    async def get_session(self, session_id: str, session_type: Any = None,
                          user_id: str | None = None) -> Any:
        session = self.db.get_session(session_id, session_type, user_id=user_id)
        if session is not None:
            session.runs = list(self.runs.get(session_id, []))
        return session

    async def upsert_session(self, session: Any) -> Any:
        return self.db.upsert_session(session)

    async def upsert_run(self, run: Any, session_id: str, user_id: str | None = None,
                         run_index: int | None = None) -> None:
        runs = list(self.runs.get(session_id, []))  # read ...
        await one_turn()  # ... another run's write lands here ...
        self.runs[session_id] = [*runs, run]  # ... and is written over

    async def delete_session(self, session_id: str, user_id: str | None = None) -> bool:
        self.runs.pop(session_id, None)
        return bool(self.db.delete_session(session_id, user_id=user_id))


def rewind_ignored() -> RewindIgnored:
    return RewindIgnored()


def inline_runs() -> InlineRuns:
    return InlineRuns()


class UserlessEntities(EntityMemoryStore):
    """Entity memory whose row id leaves the user out (agno 2.x's ``build_learning_id``)."""

    def _build_entity_db_id(self, entity_id: str, entity_type: str, namespace: str,
                            user_id: str | None = None) -> str:
        return f"entity_{namespace}_{entity_type}_{entity_id}"


def userless_entities() -> UserlessEntities:
    return UserlessEntities(config=agno_entities().config)
