"""The interface mappings speak every release of their library that users run, not only the
newest: a mapping that calls what an older release lacks never reaches its store, and the
known-bugs benchmark (docs/known-bugs.md) then misses every bug of that release.

Mutant checks (each fails when its mechanism is removed):

- ADK: with ``adk.lost_race`` importing ``AlreadyExistsError`` unconditionally (the old
  code), ``test_adk_before_1_17_appends`` fails with ``ModuleNotFoundError``; with it
  returning ``(Exception,)`` always, ``test_adk_from_1_17_forgives_only_already_exists``
  fails (the state row's ``IntegrityError`` of adk-python #4954 is hidden).
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
