"""Strands Agents' ``SessionRepository`` (``strands.session``, package ``strands-agents``) as
a store of the ``history`` profile, driven as Strands' own ``RepositorySessionManager``
drives it when an ``Agent`` runs.

A repository holds every session; its methods are sync and take the session id
(``create_session/read_session``, ``create_agent/read_agent/update_agent``,
``create_message/read_message/update_message`` and ``list_messages(session_id, agent_id,
limit=None, offset=0)``), messages keyed by an integer index that the *caller* chooses.
``FileSessionManager``, ``S3SessionManager`` and third-party backends (Valkey, SQL ...) are
a session manager and a repository in one class.

What maps to what:

- one session per user: session id the user id, one agent in it, id ``nomnesia``;
- ``append_message(u, role, content)`` is what a request does that makes a
  ``RepositorySessionManager(session_id=u, session_repository=repo)`` and appends one
  message through an agent: ``read_session`` (``create_session`` of an ``AGENT`` session
  when there is none), ``read_agent`` (``create_agent`` when there is none), the agent's
  messages read back with ``list_messages`` as ``initialize`` restores them, and
  ``create_message`` with the next index (the last message's ``message_id`` + 1, or 0), as
  ``append_message`` computes it. Nothing orders two such requests: the repository is
  where two appends with one index meet, as two processes serving one session meet there;
- the message is a Strands ``Message``: ``user`` and ``assistant`` are Strands' two roles,
  content one ``{"text": ...}`` block; ``tool`` is a ``user`` message of one ``toolResult``
  block (``toolUseId`` ``nomnesia``), where an agent keeps a tool's words; ``system`` has
  no place among a Strands agent's messages (its system prompt is not one), and is stored
  under its own name, the repository keeping the message dict as given;
- ``get_history(u, limit)`` reads the agent's messages in pages, ``list_messages(limit=
  PAGE, offset=k * PAGE)`` until a short page (the paging ``initialize`` relies on to skip
  what a conversation manager removed), and returns the newest ``limit``: a page that
  skips or repeats a message shows as a gap or a duplicate (G1, G2); a page that starts
  at or before the last message read ends the read (kept whole);
- ``forget(u)`` is ``delete_session(u)``, which the ABC lacks and every shipped backend
  has; its ``SessionException`` "Session ... does not exist" (or one after which
  ``read_session`` finds none) is the forget of an unknown user, which SPEC says succeeds.

Each operation runs its sync calls in one worker thread, awaited to its end when
cancelled (``_base.in_thread``): a Strands agent calls its session manager from its hooks, so a
cancel reaches it between appends, never inside one.

What it cannot see: message redaction (``update_message``), agent state and multi-agent
state, and the ``removed_message_count`` a conversation manager keeps. ``create_message``
takes one message, so no batch, and no poisoned batch, applies.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from ..contract.validation import validate_limit
from ._base import Mapped, contract_role, in_thread, text_of

__all__ = ["AGENT", "PAGE", "StrandsSessions", "open_store"]

AGENT = "nomnesia"
PAGE = 8
"""Messages per ``list_messages`` page: small, so that the suite's histories span pages."""
TOOL_USE = "nomnesia"


def _message(role: str, content: str) -> dict[str, Any]:
    """SPEC's message as a Strands ``Message`` (see the module's docstring)."""
    role = contract_role(role)
    if role == "tool":
        return {"role": "user", "content": [{"toolResult": {
            "toolUseId": TOOL_USE, "status": "success", "content": [{"text": content}]}}]}
    return {"role": role, "content": [{"text": content}]}


def _entry(message: dict[str, Any]) -> dict[str, str]:
    blocks = list(message.get("content") or ())
    if (message.get("role") == "user" and len(blocks) == 1 and isinstance(blocks[0], dict)
            and "toolResult" in blocks[0]):
        return {"role": "tool", "content": text_of(blocks[0]["toolResult"].get("content"))}
    return {"role": str(message.get("role")), "content": text_of(blocks)}


class StrandsSessions(Mapped):
    """The suite's calls on one Strands session repository: a session per user."""

    requires = ("create_session", "read_session", "create_agent", "read_agent",
                "create_message", "list_messages", "delete_session")

    async def _run(self, work: Callable[[Any], Any]) -> Any:
        """``work(repository)`` in a worker thread, awaited whole (see the docstring)."""
        repository = await self._object()
        return await in_thread(work, repository)

    async def append_message(self, user_id: str, role: str, content: str) -> None:
        message = _message(role, content)
        await self._run(lambda repo: _append(repo, user_id, message))

    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]:
        limit = validate_limit("limit", limit)  # newest `limit` of what the pages hold
        messages = await self._run(lambda repo: _read(repo, user_id))
        return [_entry(m.to_message()) for m in messages[-limit:]] if limit else []

    async def forget(self, user_id: str) -> None:
        await self._run(lambda repo: _forget(repo, user_id))


def _append(repo: Any, session_id: str, message: Any) -> None:
    """``RepositorySessionManager.__init__``, ``initialize`` and ``append_message`` for one
    message, with the repository calls they make, in their order."""
    from strands.types.session import Session, SessionAgent, SessionMessage, SessionType

    new = repo.read_session(session_id) is None
    if new:
        repo.create_session(Session(session_id=session_id, session_type=SessionType.AGENT))
    agent = None if new else repo.read_agent(session_id, AGENT)
    if agent is None:
        repo.create_agent(session_id, SessionAgent(agent_id=AGENT, state={},
                                                   conversation_manager_state={}))
        index = 0
    else:
        restored = repo.list_messages(session_id=session_id, agent_id=AGENT, offset=0)
        index = restored[-1].message_id + 1 if restored else 0
    repo.create_message(session_id, AGENT, SessionMessage.from_message(message, index))


def _read(repo: Any, session_id: str) -> list[Any]:
    """The agent's messages, page by page; none where the session has no agent yet."""
    if repo.read_agent(session_id, AGENT) is None:
        return []
    found: list[Any] = []
    while True:
        page = repo.list_messages(session_id=session_id, agent_id=AGENT, limit=PAGE,
                                  offset=len(found))
        found.extend(page)
        if len(page) < PAGE or (len(found) > len(page)
                                and page[0].message_id <= found[-len(page) - 1].message_id):
            # A short page ends the read; so does a page that starts at or before the last
            # message already read (an offset the repository ignored would page forever):
            # it is kept, so that what it repeats shows as a duplicate (G2).
            return found


def _forget(repo: Any, session_id: str) -> None:
    from strands.types.exceptions import SessionException

    try:
        repo.delete_session(session_id)
    except SessionException as exc:
        # "Session ... does not exist" (FileSessionManager, ValkeySessionManager): the
        # repository found nothing to delete when it looked, whatever a concurrent append
        # made since; any other SessionException is a delete that failed.
        if "does not exist" not in str(exc) and repo.read_session(session_id) is not None:
            raise


@asynccontextmanager
async def open_store(factory: Callable[..., Any]) -> AsyncIterator[StrandsSessions]:
    async with StrandsSessions(factory) as store:
        yield store


MAPPED = StrandsSessions
"""The mapping, whose ``fits`` says whether an object suits this option."""
