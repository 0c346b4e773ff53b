"""Google ADK's ``BaseSessionService`` as a store of the ``history`` profile.

What maps to what:

- app ``nomnesia``; each user has one session, id ``memory``, of that user id;
- ``append_message(u, role, content)`` fetches the session
  (``get_session``; ``create_session`` when there is none yet, and
  ``get_session`` again if another request created it first), then
  ``append_event(session, event)``: the event's ``author`` is the role, its
  content one text part whose ``role`` is ``user`` for a user's message and
  ``model`` otherwise (the two roles ADK content has);
- ``get_history(u, limit)`` is ``get_session(...,
  config=GetSessionConfig(num_recent_events=limit))``: the session's newest
  ``limit`` events, as the service returns them; the role is read back from
  ``author``;
- ``forget(u)`` is ``delete_session`` of that session.

What it cannot see: event ids and state deltas (the mapping writes none),
search (``BaseMemoryService`` is a separate service) and compaction (ADK's
event compaction runs inside the runner).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from ._base import Mapped, contract_role, text_of

__all__ = ["APP", "SESSION", "AdkSessions", "open_store"]

APP = "nomnesia"
SESSION = "memory"
_CREATE_TRIES = 5
"""Rounds of get-or-create before an append gives up (each lost only to a forget)."""


def lost_race() -> tuple[type[BaseException], ...]:
    """What ``create_session`` raises when the session already exists: the error the
    suite takes for "another request created it first", and then reads the session again.

    ``AlreadyExistsError`` (``google.adk.errors.already_exists_error``) came in ADK 1.17;
    importing it unconditionally made every append of an earlier release raise
    ``ModuleNotFoundError``, so the suite never read a history there (the benchmark's
    ``adk-get-session-cross-user`` on 1.5.0). Before 1.17 no error names that case, so any
    error is re-read, and raised again if the session still does not exist. From 1.17 on
    only the named error is forgiven: another error of a create that lost a race (an
    ``IntegrityError`` on the user's state row, adk-python #4954) is the library's failure,
    not a race the library handled, and the suite must see it.
    """
    try:
        from google.adk.errors.already_exists_error import AlreadyExistsError
    except ImportError:
        return (Exception,)
    return (AlreadyExistsError,)


class AdkSessions(Mapped):
    """The suite's calls on one ADK session service: a session per user."""

    requires = ("get_session", "create_session", "append_event", "delete_session")

    async def _session(self, service: Any, user_id: str) -> Any:
        """The user's session, made if there is none: get, else create, and when the create
        lost a race to another request, get again. A forget of the same user can delete that
        other request's session before the second get (a user forgotten while a request of
        theirs starts), so the round is tried again, a bounded number of times, as an
        application's get-or-create would: without it, the suite's own mapping, not ADK,
        failed a valid append under concurrency (G12, an audit's "AlreadyExistsError")."""
        for _ in range(_CREATE_TRIES - 1):
            found = await self._get_or_create(service, user_id)
            if found is not None:
                return found
        session = await self._get_or_create(service, user_id)
        if session is None:
            raise RuntimeError(f"the session of {user_id!r} was deleted between its create "
                               f"and its read {_CREATE_TRIES} times in a row")
        return session

    @staticmethod
    async def _get_or_create(service: Any, user_id: str) -> Any:
        """One round: the session, or None when another request made it and a forget
        deleted it before this one could read it."""
        session = await service.get_session(app_name=APP, user_id=user_id, session_id=SESSION)
        if session is not None:
            return session
        try:
            return await service.create_session(app_name=APP, user_id=user_id,
                                                session_id=SESSION)
        except lost_race():  # another request may have created it between the two calls
            return await service.get_session(app_name=APP, user_id=user_id,
                                             session_id=SESSION)

    async def append_message(self, user_id: str, role: str, content: str) -> None:
        from google.adk.events import Event
        from google.genai import types

        role = contract_role(role)
        service = await self._object()
        session = await self._session(service, user_id)
        part = types.Part(text=content)
        event = Event(author=role, content=types.Content(
            role="user" if role == "user" else "model", parts=[part]))
        await service.append_event(session, event)

    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]:
        from google.adk.sessions.base_session_service import GetSessionConfig

        service = await self._object()
        session = await service.get_session(app_name=APP, user_id=user_id, session_id=SESSION,
                                            config=GetSessionConfig(num_recent_events=limit))
        if session is None:
            return []
        return [{"role": e.author, "content": text_of(e.content.parts if e.content else "")}
                for e in session.events]

    async def forget(self, user_id: str) -> None:
        service = await self._object()
        if await service.get_session(app_name=APP, user_id=user_id, session_id=SESSION):
            await service.delete_session(app_name=APP, user_id=user_id, session_id=SESSION)

    no_batch = ("BaseSessionService.append_event takes one event, and the service has no "
                "method that replaces a session's events")
    """Why no poisoned batch reaches ADK (SPEC.md, "Faults": only a batch or a replace)."""

@asynccontextmanager
async def open_store(factory: Callable[..., Any]) -> AsyncIterator[AdkSessions]:
    async with AdkSessions(factory) as store:
        yield store


MAPPED = AdkSessions
"""The mapping, whose ``fits`` says whether an object suits this option."""
