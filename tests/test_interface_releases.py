"""The interface mappings speak every release of their library that users run, not only the
newest: a mapping that calls what an older release lacks never reaches its store, and the
known-bugs benchmark (docs/known-bugs.md) then misses every bug of that release.

Mutant checks (each fails when its mechanism is removed):

- ADK: with ``adk.lost_race`` importing ``AlreadyExistsError`` unconditionally (the old
  code), ``test_adk_before_1_17_appends`` fails with ``ModuleNotFoundError``; with it
  returning ``(Exception,)`` always, ``test_adk_from_1_17_forgives_only_already_exists``
  fails (the state row's ``IntegrityError`` of adk-python #4954 is hidden).
- mem0: with ``Mem0Memory._keywords`` always giving ``top_k`` and ``filters`` (the old
  code), ``test_mem0_one_x_is_called_with_its_own_keywords`` and
  ``test_a_keyword_the_release_refuses_is_an_interface_mismatch`` fail (``TypeError``);
  without the ``signature.bind`` in ``Mem0Memory._call``, the latter fails (a bare
  ``TypeError``, which the suite files as an Inputs finding).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest


def _adk_service(fail_with: type[BaseException]) -> Any:
    """An in-memory ADK session service whose ``create_session`` creates the session, as a
    concurrent request would, and then fails with ``fail_with``: a create that lost a race."""
    from google.adk.sessions import InMemorySessionService

    class LosesTheRace(InMemorySessionService):
        async def create_session(self, **kwargs: Any) -> Any:
            await super().create_session(**kwargs)
            raise fail_with("the other request created it first")

    return LosesTheRace()


def _append_twice(service: Any) -> list[dict[str, str]]:
    from nomnesia.suite.interfaces.adk import AdkSessions

    async def body() -> list[dict[str, str]]:
        async with AdkSessions(lambda: service) as store:
            await store.append_message("ann", "user", "one")
            await store.append_message("ann", "assistant", "two")
            history: list[dict[str, str]] = await store.get_history("ann", 10)
            return history

    return asyncio.run(body())


def test_adk_before_1_17_appends(monkeypatch: pytest.MonkeyPatch) -> None:
    """ADK before 1.17 has no ``google.adk.errors.already_exists_error``: the mapping
    still appends, and a create that fails after another request made the session is read
    again, whatever it raised (that release names no error for the case)."""
    pytest.importorskip("google.adk.sessions")
    service = _adk_service(RuntimeError)  # the service's own module imports the error
    monkeypatch.setitem(sys.modules, "google.adk.errors.already_exists_error", None)
    history = _append_twice(service)
    assert history == [{"role": "user", "content": "one"},
                       {"role": "assistant", "content": "two"}]


def test_adk_from_1_17_forgives_only_already_exists() -> None:
    """From 1.17 on, only ``AlreadyExistsError`` means "another request created it": any
    other error of ``create_session`` reaches the suite (as a G12 failure), even when the
    session exists afterwards."""
    pytest.importorskip("google.adk.errors.already_exists_error")
    from google.adk.errors.already_exists_error import AlreadyExistsError

    history = _append_twice(_adk_service(AlreadyExistsError))
    assert [m["content"] for m in history] == ["one", "two"]

    class IntegrityError(Exception):
        """What SQLAlchemy raises for the state row two creates inserted (#4954)."""

    with pytest.raises(IntegrityError):
        _append_twice(_adk_service(IntegrityError))


class Mem0OneX:
    """A sync mem0 ``Memory`` of the 1.x interface (mem0ai 1.0.5's keywords): ``get_all`` and
    ``search`` count with ``limit``, not ``top_k``, and scope with a ``user_id`` of their
    own. Calls are recorded; memories are kept in order, per user."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.memories: list[dict[str, Any]] = []

    def add(self, messages: list[dict[str, Any]], *, user_id: str | None = None,
            infer: bool = True) -> dict[str, Any]:
        self.calls.append(("add", {"user_id": user_id, "infer": infer}))
        for m in messages:
            n = len(self.memories)
            self.memories.append({"id": f"m{n:04}", "memory": m["content"], "role": m["role"],
                                  "user_id": user_id, "created_at": f"2026-01-01T00:00:{n:02}"})
        return {"results": []}

    def _scoped(self, user_id: str | None, filters: dict[str, Any] | None) -> list[Any]:
        if user_id is None:  # as mem0 1.x: a scope only in filters is refused
            raise ValueError("At least one of 'user_id', 'agent_id', or 'run_id' must be "
                             "specified.")
        return [m for m in self.memories if m["user_id"] == user_id]

    def get_all(self, *, user_id: str | None = None, filters: dict[str, Any] | None = None,
                limit: int = 100) -> dict[str, Any]:
        self.calls.append(("get_all", {"user_id": user_id, "filters": filters, "limit": limit}))
        return {"results": self._scoped(user_id, filters)[:limit]}

    def search(self, query: str, *, user_id: str | None = None, limit: int = 100,
               filters: dict[str, Any] | None = None) -> dict[str, Any]:
        self.calls.append(("search", {"user_id": user_id, "filters": filters, "limit": limit}))
        return {"results": [m for m in self._scoped(user_id, filters)
                            if m["memory"] == query][:limit]}

    def delete_all(self, user_id: str | None = None) -> None:
        self.memories = [m for m in self.memories if m["user_id"] != user_id]


def _mem0_round_trip(memory: Any) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    from nomnesia.suite.interfaces.mem0 import Mem0Memory

    async def body() -> tuple[list[dict[str, str]], list[dict[str, str]]]:
        async with Mem0Memory(lambda: memory) as store:
            await store.append_message("ann", "user", "one")
            await store.append_message("bob", "user", "two")
            history: list[dict[str, str]] = await store.get_history("ann", 10)
            found: list[dict[str, str]] = await store.search("ann", "one", 3)
            return history, found

    return asyncio.run(body())


def test_mem0_one_x_is_called_with_its_own_keywords() -> None:
    """mem0 1.x's ``get_all``/``search`` get ``limit=`` and ``user_id=``: before, every read
    raised ``TypeError: ... unexpected keyword argument 'top_k'`` and the suite never
    reached a check after a ``forget`` (the benchmark's mem0-sync-delete-all-reset)."""
    memory = Mem0OneX()
    history, found = _mem0_round_trip(memory)
    assert history == [{"role": "user", "content": "one"}]
    assert found == [{"role": "user", "content": "one"}]
    reads = [kw for name, kw in memory.calls if name in ("get_all", "search")]
    assert reads == [{"user_id": "ann", "filters": None, "limit": 10_000},
                     {"user_id": "ann", "filters": None, "limit": 3}], reads


class Mem0Unknown(Mem0OneX):
    """A release whose ``get_all`` counts with a keyword the mapping does not know."""

    def get_all(self, *, user_id: str | None = None,  # type: ignore[override]
                filters: dict[str, Any] | None = None, page_size: int = 100) -> dict[str, Any]:
        return {"results": self._scoped(user_id, filters)[:page_size]}


class Mem0RefusesInside(Mem0OneX):
    """A release whose ``get_all`` takes the mapping's keywords and raises ``TypeError`` from
    inside: the library's own refusal, which stays the store's to answer for."""

    def get_all(self, *, user_id: str | None = None, filters: dict[str, Any] | None = None,
                limit: int = 100) -> dict[str, Any]:
        raise TypeError("got an unexpected keyword argument 'deep' (the library's own call)")


def test_a_keyword_the_release_refuses_is_an_interface_mismatch() -> None:
    """A keyword the method's signature refuses is the mapping's mismatch with that release
    (a usage error naming the method), not the store refusing a valid input (an Inputs
    finding in every test, as mem0 1.0.5's ``top_k`` was); a ``TypeError`` raised inside the
    library is still the library's."""
    from nomnesia.suite.interfaces import InterfaceMismatch

    with pytest.raises(InterfaceMismatch, match=r"refuses the get_all call of --mem0-memory "
                                                r".*unexpected keyword argument 'limit'"):
        _mem0_round_trip(Mem0Unknown())
    with pytest.raises(TypeError) as raised:
        _mem0_round_trip(Mem0RefusesInside())
    assert not isinstance(raised.value, InterfaceMismatch)
