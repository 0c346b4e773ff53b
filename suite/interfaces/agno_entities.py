"""agno's ``EntityMemoryStore`` (``agno.learn``, entity memory in the ``"user"`` namespace)
as a store of the ``memory`` profile, driven as an agent drives it in AGENTIC mode, through
the async twins of its tools, with no model.

Why this object: it is what an agno application's per-user entity memory is
(``LearningMachine(entity_memory=EntityMemoryConfig(namespace="user"))`` makes one, and its
tools are what the agent calls); and it is where agno #9319 lived: before 3.0.0 its rows
were keyed ``entity_{namespace}_{type}_{id}`` without the user, so two users' same-named
entities shared one row.

What maps to what (every call with ``namespace="user"`` and ``user_id`` the user id, the
scope agno documents as "private to current user"):

- a user's memory is one entity, :data:`ENTITY` of type :data:`ENTITY_TYPE`: the same name
  for every user, as two users' "Sarah Chen" are;
- ``append_message(u, role, content)`` is ``aremember_about(ENTITY, ENTITY_TYPE,
  facts=["role: content"])``: one fact, the message's role before it (a fact has no field
  for it). The append is acknowledged when agno's reply says it recorded one fact; a
  reply that says agno refused the call before any write ("... nothing was recorded": no
  user id) raises ``ValueError``, and any other (a failed save, a fact agno took for a
  duplicate and skipped) :class:`NotRecorded`, each with agno's words, as the agent would
  read them;
- ``get_history(u, limit)`` is ``aget(ENTITY, ENTITY_TYPE)``: the entity's live facts in
  agno's order (``add_fact`` appends), of which the newest ``limit`` (the slice is ours);
- ``search(u, query, k)`` is ``asearch(query, entity_type=ENTITY_TYPE)``, which the
  ``search_entities`` tool calls (the tool formats the same entities as text for a
  model): of each entity found, the live facts agno's own matcher
  (``agno.learn.utils.values_match_query``) matches, newest first, the first ``k`` (agno's
  ``limit`` counts entities, so ``k`` is checked and sliced here);
- ``forget(u)`` is ``adelete(ENTITY, ENTITY_TYPE)``, agno's hard delete, with
  ``user_id=u`` where the release's signature takes it (3.0.0 on; 2.x's takes no user). Not
  the ``forget`` tool: it archives, and its own docstring says "nothing is deleted" and
  that a later ``remember_about`` revives the entity, which SPEC's G8 forbids in its own
  words ("the archive included"): mapped to it, agno's documented design would read as a
  defect.

No model: ``EntityMemoryConfig.model`` is what the stores' only model call uses (the
supersession judge in ``remember_about``, skipped when it is ``None``); the factory's
store must have none, and the mapping refuses one that has (:class:`Misconfigured`),
since a judge would retire facts by an LLM's opinion (and one with no database). The
tools' calls on a sync ``BaseDb`` block the event loop, as they do under agno's
``Agent.arun`` (so on a server engine, use agno's async database: a stalled engine would
stall the process, the suite's timers included); an ``AsyncBaseDb``'s are awaited. A
keyword the release's signature refuses is this mapping's mismatch with the release
(``InterfaceMismatch``), never the store's finding.

What it cannot see: message ids (agno makes a fact's id), compaction, events,
relationships, and the interface faults (``remember_about`` calls ``str`` methods on every
fact before it writes anything, so no fact of a batch can be made unstorable).
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from ..contract.validation import validate_limit
from ..core.violations import UsageMistake
from ._base import InterfaceMismatch, Mapped, contract_role, text_of, what

__all__ = ["ENTITY", "ENTITY_TYPE", "NAMESPACE", "AgnoEntities", "Misconfigured",
           "NotRecorded", "open_store"]

ENTITY = "nomnesia"
"""The entity every user's messages are facts of (its slug is itself)."""
ENTITY_TYPE = "conversation"
NAMESPACE = "user"
RECORDED = "Recorded 1 fact(s)"
"""What agno's ``remember_about`` reply says when it stored the one fact it was given."""
REFUSED = "nothing was recorded"
"""What its reply says when it refused the call before reading or writing a row (no user
id for the ``"user"`` namespace, a name with no letter or digit)."""


class NotRecorded(RuntimeError):
    """agno's ``remember_about`` replied that it did not store the fact (its reply is the
    only word an agent gets: the save's own errors are logged, not raised)."""


class Misconfigured(UsageMistake):
    """The factory's store has a model (its supersession judge would retire facts), or no
    database: a usage stop, never a finding."""


def _fact(role: str, content: str) -> str:
    return f"{role}: {content}"


def _entry(fact: Any) -> dict[str, str]:
    """A live fact read back: the role before the first colon, the message after it (agno
    strips a fact's ends, so an empty message's fact is ``"user:"``)."""
    text = text_of(fact.get("content", "") if isinstance(fact, dict) else fact)
    role, _, content = text.partition(":")
    return {"role": role, "content": content[1:] if content.startswith(" ") else content}


def _live(entity: Any) -> list[Any]:
    return list(entity.live_facts()) if entity is not None else []


class AgnoEntities(Mapped):
    """The suite's calls on one agno ``EntityMemoryStore``, a user per ``user_id``."""

    nomnesia_profile = "memory"
    requires = ("aremember_about", "aget", "asearch", "adelete")

    def missing(self, found: Any) -> list[str]:
        lacking = super().missing(found)
        config = getattr(found, "config", None)
        if lacking or config is None:
            return lacking
        if getattr(config, "model", None) is not None:
            raise Misconfigured(
                f"--agno-entities: the factory made {what(found)} with a model "
                f"({type(config.model).__name__}): its supersession judge would retire facts "
                f"by the model's opinion; make the store without one")
        if getattr(config, "db", None) is None:
            raise Misconfigured(f"--agno-entities: the factory made {what(found)} with no "
                                f"database (EntityMemoryConfig(db=...)): it records nothing")
        return lacking

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """``name`` on the store, its arguments bound to the release's signature first: a
        keyword the release does not take is this mapping's mismatch, not a finding."""
        store = await self._object()
        method = getattr(store, name)
        try:
            inspect.signature(method).bind(*args, **kwargs)
        except TypeError as refused:
            raise InterfaceMismatch(store, [name], (
                f"{what(store)} refuses the {name} call of --agno-entities ({refused}); its "
                f"{name} takes {inspect.signature(method)}: an agno release this mapping does "
                f"not speak")) from refused
        return await method(*args, **kwargs)

    async def append_message(self, user_id: str, role: str, content: str) -> None:
        reply = await self._call("aremember_about", ENTITY, ENTITY_TYPE,
                                 facts=[_fact(contract_role(role), content)],
                                 user_id=user_id, namespace=NAMESPACE)
        if RECORDED in str(reply):
            return
        if REFUSED in str(reply):  # agno refused the call's input before any write
            raise ValueError(f"EntityMemoryStore.aremember_about refused it: {reply}")
        raise NotRecorded(f"EntityMemoryStore.aremember_about did not record the fact: {reply}")

    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]:
        limit = validate_limit("limit", limit)  # the newest `limit`: the slice is ours
        entity = await self._call("aget", ENTITY, ENTITY_TYPE, user_id=user_id,
                                  namespace=NAMESPACE)
        return [_entry(f) for f in _live(entity)[-limit:]]

    async def search(self, user_id: str, query: str, k: int = 5) -> list[dict[str, str]]:
        from agno.learn.utils import values_match_query

        k = validate_limit("k", k)  # agno's limit counts entities: the slice is ours
        found = await self._call("asearch", query, entity_type=ENTITY_TYPE, user_id=user_id,
                                 namespace=NAMESPACE, limit=1)
        hits = [f for entity in found or () for f in reversed(_live(entity))
                if values_match_query(f.get("content", "") if isinstance(f, dict) else f,
                                      query)]
        return [_entry(f) for f in hits[:k]]

    async def forget(self, user_id: str) -> None:
        store = await self._object()
        params = inspect.signature(store.adelete).parameters
        scope = {"user_id": user_id} if "user_id" in params else {}  # agno 3.0.0 on
        await self._call("adelete", ENTITY, ENTITY_TYPE, namespace=NAMESPACE, **scope)


@asynccontextmanager
async def open_store(factory: Callable[..., Any]) -> AsyncIterator[AgnoEntities]:
    async with AgnoEntities(factory) as store:
        yield store


MAPPED = AgnoEntities
"""The mapping, whose ``fits`` says whether an object suits this option."""
