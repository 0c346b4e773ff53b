"""Google ADK's ``BaseMemoryService`` as a store of the ``memory`` profile.

ADK's long-term memory has writes (``add_session_to_memory``, ``add_events_to_memory``,
``add_memory``), a per-user search (``search_memory(app_name, user_id, query)``) and, on
some services, ``delete_memory(memory_id)``. It has no read of a user's memories and no
per-user delete, which SPEC's profiles need; what maps to what:

- app ``nomnesia``, session id ``memory`` for every user (memories are scoped by
  ``(app_name, user_id)``, as ADK scopes them);
- ``append_message(u, role, content)`` is ``add_events_to_memory`` of one event: its
  ``author`` is the role, its content two text parts, :data:`MARKER` and the message
  (``role`` ``user`` for a user's message, ``model`` otherwise, ADK content's two roles);
- ``get_history(u, limit)`` is ``search_memory(query=MARKER)``: every memory the mapping
  wrote carries the marker word, so the one search the interface has finds them all,
  up to the service's own cap of results per search (``InMemoryMemoryService``: 10;
  ``SqliteMemoryService(max_results=...)``: configurable, hence the factories in
  ``nomnesia.suite.examples`` set it). The memories are put in the order of their
  ``timestamp`` (the event's, which ADK returns as ISO text; ties in the service's own
  order: its row number, or the search's order) and the newest ``limit`` are returned.
  Where the search returns as many memories as the service's cap, the read may be short,
  and :class:`ReadCapped` says so instead of a history the suite would judge (the mapping
  does not guess past the interface);
- ``search(u, query, k)`` is ``search_memory(query=query)``, the first ``k`` memories in
  the service's order (ADK's search takes no ``k``, so the mapping checks it, as it does
  SPEC's own vocabulary);
- ``forget(u)`` is ``add_session_to_memory`` of the user's session, ``memory``, made of
  the events a marker search finds followed by a rewind of them all
  (``EventActions(rewind_before_invocation_id=...)``): ADK's own way to take content
  back out of memory, which ``SqliteMemoryService`` implements by deleting the rewound
  events and ``InMemoryMemoryService`` by replacing the session's events with the live
  ones (none). ``delete_memory`` would be the other way, but ``SqliteMemoryService``
  does not implement it;
- a memory is read back as its ``author`` and the text of its second part (the message).

``add_events_to_memory`` takes a list of events, so the interface faults apply: a batch
one event of which cannot be stored must store none of them.

What it cannot see: message ids (the event id is ADK's own), ``add_memory`` (no service
that runs here implements it), ``add_session_to_memory`` (it ingests a whole session,
which the suite's appends are not) and compaction.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

from ..contract.validation import validate_limit
from ..core.violations import UsageMistake
from ._base import Mapped, contract_role, text_of
from ._poison import PoisonedCall, Unserializable, describe_batch

__all__ = ["APP", "MARKER", "SESSION", "AdkMemory", "ReadCapped", "open_store"]

APP = "nomnesia"
SESSION = "memory"
MARKER = "nomnesiamemory"
"""The word every memory the mapping writes carries in a part of its own: the query that
finds them all, in keyword and full-text search alike."""


class ReadCapped(UsageMistake):
    """A read the interface cannot make whole: the service returned its cap of results."""

    needs = "a read of more memories than one search returns"


def _cap(service: Any) -> int | None:
    """How many memories one search of ``service`` returns at most, where it says so:
    ``SqliteMemoryService(max_results=...)``, ``InMemoryMemoryService``'s module constant."""
    cap = getattr(service, "_max_results", None)
    if cap is None:
        cap = getattr(inspect.getmodule(type(service)), "_MAX_SEARCH_RESULTS", None)
    return cap if isinstance(cap, int) else None


def _entry(memory: Any) -> dict[str, str]:
    parts = memory.content.parts if memory.content and memory.content.parts else []
    return {"role": str(memory.author), "content": text_of(parts[1:2])}


def _event_id(memory: Any) -> str:
    """The id of the event a memory was made from: ``SqliteMemoryService`` keeps it in the
    memory's ``custom_metadata`` (its memory id is a row number), ``InMemoryMemoryService``
    uses it as the memory id."""
    meta = memory.custom_metadata or {}
    return str(meta.get("event_id") or memory.id)


def _when(memory: Any, place: int) -> tuple[datetime | str, int]:
    """A memory's place in time: its ``timestamp`` parsed (ADK writes it without the
    microseconds when they are 0, so strings alone do not order it); ties by
    ``SqliteMemoryService``'s row number, else by the search's own order
    (``InMemoryMemoryService`` keeps insertion order among equal matches)."""
    try:
        when: datetime | str = datetime.fromisoformat(str(memory.timestamp))
    except ValueError:
        when = str(memory.timestamp)
    tie = int(memory.id) if str(memory.id).isdigit() else place
    return when, tie


def _is_ours(memory: Any) -> bool:
    """A memory the mapping wrote: its first part is the marker."""
    parts = memory.content.parts if memory.content and memory.content.parts else []
    return len(parts) >= 2 and parts[0].text == MARKER


class AdkMemory(Mapped):
    """The suite's calls on one ADK memory service, scoped by user id."""

    nomnesia_profile = "memory"
    requires = ("add_events_to_memory", "search_memory", "add_session_to_memory")

    def _event(self, role: str, content: Any, poison: Any = None) -> Any:
        from google.adk.events import Event
        from google.genai import types

        role = contract_role(role)
        # The marker first: SqliteMemoryService truncates an event's search text (to
        # max_event_bytes), and a marker after a long message would be cut off.
        parts = [types.Part(text=MARKER), types.Part(text=content)]
        if poison is not None:  # a part ADK keeps as JSON, after the message
            call = types.FunctionCall(name="nomnesia", args={"value": poison})
            parts.append(types.Part(function_call=call))
        return Event(author=role, invocation_id=Event.new_id(), content=types.Content(
            role="user" if role == "user" else "model", parts=parts))

    async def append_message(self, user_id: str, role: str, content: str) -> None:
        event = self._event(role, content)
        service = await self._object()
        await service.add_events_to_memory(app_name=APP, user_id=user_id, events=[event],
                                           session_id=SESSION)

    async def _marked(self, service: Any, user_id: str) -> list[Any]:
        found = await service.search_memory(app_name=APP, user_id=user_id, query=MARKER)
        return [m for m in found.memories if _is_ours(m)]

    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]:
        limit = validate_limit("limit", limit)  # the newest `limit`: the slice is ours
        service = await self._object()
        found = await service.search_memory(app_name=APP, user_id=user_id, query=MARKER)
        cap = _cap(service)
        if cap is not None and len(found.memories) >= cap:
            raise ReadCapped(
                f"{type(service).__name__}.search_memory returned {len(found.memories)} "
                f"memories, its cap per search: ADK's memory has no read of a user's "
                f"memories, so a history longer than that cannot be read through it")
        ours = [(_when(m, place), m) for place, m in enumerate(found.memories) if _is_ours(m)]
        ours.sort(key=lambda pair: pair[0])
        return [_entry(m) for _, m in ours[-limit:]] if limit else []

    async def search(self, user_id: str, query: str, k: int = 5) -> list[dict[str, str]]:
        k = validate_limit("k", k)  # ADK's search takes no k: the slice is ours
        service = await self._object()
        found = await service.search_memory(app_name=APP, user_id=user_id, query=query)
        return [_entry(m) for m in found.memories[:k] if _is_ours(m)]

    async def forget(self, user_id: str) -> None:
        from google.adk.events import Event, EventActions
        from google.adk.sessions import Session

        service = await self._object()
        found = await self._marked(service, user_id)
        taken = "nomnesia-forget"
        events = [Event(id=_event_id(m), author=str(m.author), invocation_id=taken,
                        content=m.content) for m in found]
        events.append(Event(author="user", invocation_id=Event.new_id(),
                            actions=EventActions(rewind_before_invocation_id=taken)))
        session = Session(id=SESSION, app_name=APP, user_id=user_id, events=events)
        await service.add_session_to_memory(session)

    async def poisoned_batch(self, user_id: str, batch: Sequence[tuple[str, str]],
                             poisoned: int) -> PoisonedCall:
        """One ``add_events_to_memory`` of every message of ``batch``, event ``poisoned``
        with a function-call part whose argument no serializer knows: a service that keeps
        an event's content as JSON cannot store it, and the call must store none of the
        batch."""
        events = [self._event(role, content, Unserializable() if i == poisoned else None)
                  for i, (role, content) in enumerate(batch)]
        service = await self._object()

        async def run() -> object:
            return await service.add_events_to_memory(app_name=APP, user_id=user_id,
                                                      events=events, session_id=SESSION)

        where = describe_batch(len(events), poisoned, "function-call args")
        return PoisonedCall(f"{type(service).__name__}.add_events_to_memory([{where}])", run)


@asynccontextmanager
async def open_store(factory: Callable[..., Any]) -> AsyncIterator[AdkMemory]:
    async with AdkMemory(factory) as store:
        yield store


MAPPED = AdkMemory
"""The mapping, whose ``fits`` says whether an object suits this option."""
