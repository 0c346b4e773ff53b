"""What every interface mapping shares: its declared profile, one library object per user,
opening whatever the factory made, and closing what it opened."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any, TypeVar

from ..contract.validation import validate_role
from ..core.violations import UsageMistake

__all__ = ["InterfaceMismatch", "Mapped", "contract_role", "enter", "has", "in_thread", "per_user",
           "text_of",
           "what"]

T = TypeVar("T")


def per_user(factory: Callable[..., Any]) -> bool:
    """Whether ``factory`` takes the session (user) id: one positional parameter or more.

    ``InMemoryChatMessageHistory`` takes none (one object per user is made all the
    same); ``SQLiteSession(session_id, ...)`` and a team's ``def history(session_id)``
    take it.
    """
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)



def needs_id(factory: Callable[..., Any]) -> bool:
    """Whether ``factory`` has a positional parameter without a default: it cannot be called
    with no argument."""
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
               for p in params)


async def in_thread(call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """A library's sync ``call`` in a worker thread, awaited to its end even when cancelled,
    and the cancel raised after it.

    A sync call cannot be stopped: cancelled under plain ``to_thread``, the await would end
    while the call wrote on, and the suite would read a write the library made in full as
    one that landed after the cancel. The libraries that call their sync stores from async
    code (agno's ``Agent``, a Strands agent's hooks, CrewAI's ``Memory``) call them on the
    event loop, so a cancel reaches them only between calls: waiting for the thread does
    the same (``--agno-db``, ``--strands-session``, ``--crewai-storage``).
    """
    task: asyncio.Future[T] = asyncio.ensure_future(asyncio.to_thread(call, *args, **kwargs))
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.done():
                raise
            cancelled = True
            continue
        if cancelled:
            raise asyncio.CancelledError
        return result


class InterfaceMismatch(UsageMistake):
    """The object a factory made lacks a method its option maps: the wrong option for it.

    A usage error, never a finding: the store was never asked anything. The suite
    checks for it before the first test (``nomnesia.suite.interfaces.check``), and a
    mapping raises it wherever it makes an object, so a factory that makes the right
    object at first and another later still never reads as the store's defect (G12).
    """

    def __init__(self, found: Any, lacking: list[str], sentence: str | None = None) -> None:
        self.found = found
        self.lacking = lacking
        super().__init__(sentence or f"the factory made {what(found)}, which has no "
                                     f"{', '.join(lacking)}")


def what(found: Any) -> str:
    """``a SQLAlchemyChatStore (llama_index.core.storage.chat_store.sql)``."""
    kind = type(found)
    return f"a {kind.__qualname__} ({kind.__module__})"


def has(found: Any, name: str) -> bool:
    """Whether ``found`` has ``name``, without running a property (LangChain's ``messages``
    reads the whole history)."""
    try:
        inspect.getattr_static(found, name)
    except AttributeError:
        return hasattr(found, name)  # a __getattr__ of its own
    return True


async def enter(stack: AsyncExitStack, made: Any) -> Any:
    """The library object a factory made: awaited if a coroutine, entered if a context manager
    (``AsyncPostgresStore.from_conn_string`` yields one), else itself."""
    if inspect.isawaitable(made):
        made = await made
    if hasattr(made, "__aenter__") and hasattr(made, "__aexit__"):
        return await stack.enter_async_context(made)
    if hasattr(made, "__enter__") and hasattr(made, "__exit__"):
        return stack.enter_context(made)
    return made


def contract_role(role: object) -> str:
    """SPEC's role, checked: the libraries have roles of their own (or none), so a role
    outside SPEC's four could only be mapped by guessing. ``ValueError`` before any write;
    user ids, contents, limits and ``k`` go to the library as given, to be judged."""
    return validate_role(role)


def text_of(content: object) -> str:
    """A message's text: a str as it is, a list of parts joined (multimodal content)."""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        parts = [p if isinstance(p, str) else p.get("text") if isinstance(p, dict)
                 else getattr(p, "text", None) for p in content]
        return "".join(p for p in parts if isinstance(p, str))
    return str(content)


class Mapped:
    """Base of the mappings: a store of a declared profile over one library object (a store
    of every user's memory), or one per user (a session, a chat history)."""

    nomnesia_profile = "history"
    """The profile the mapping reaches (SPEC.md, "Profiles"); a subclass may choose per object."""
    one_per_user = False
    """One library object per user id (LangChain histories, Agents SDK sessions)."""
    requires: tuple[str, ...] = ()
    """The attributes of the library's object that the mapping calls."""

    def missing(self, found: Any) -> list[str]:
        """What of ``requires`` the object ``found`` lacks (nothing: the option fits)."""
        return [name for name in self.requires if not has(found, name)]

    @classmethod
    def fits(cls, found: Any) -> bool:
        """Whether ``found`` has every method a default instance of the mapping calls."""
        return all(has(found, name) for name in cls.requires)

    def __init__(self, factory: Callable[..., Any]) -> None:
        self._factory = factory
        # Where one object holds every user, a positional parameter with a default is the
        # library's own (``AsyncMemory(config=...)``, ``InMemoryHistoryProvider(source_id=
        # None)``): an id there would be taken for it. Only a factory that cannot be called
        # without one (a per-session factory given to such an option) gets it, so that what
        # it makes can be named in the mismatch sentence.
        self._takes_id = per_user(factory) and (self.one_per_user or needs_id(factory))
        self._objects: dict[str, Any] = {}
        self._making: dict[str, asyncio.Lock] = {}
        self._stack = AsyncExitStack()

    async def _object(self, user_id: str = "") -> Any:
        """The library object that holds ``user_id``'s memory (made on first use); the
        factory gets the user id when it takes one.

        Concurrent first calls for one user wait for one object: a factory that awaits
        (opens a connection) would otherwise be run once per call, and every object but
        the last kept would take its writes with it. This orders the *making* of the
        library's objects only, never a call on them.
        """
        key = user_id if self.one_per_user else ""
        found = self._objects.get(key)
        if found is not None:
            return found
        async with self._making.setdefault(key, asyncio.Lock()):
            found = self._objects.get(key)
            if found is None:
                made = self._factory(user_id) if self._takes_id else self._factory()
                found = await enter(self._stack, made)
                self._close_later(found)
                lacking = self.missing(found)
                if lacking:
                    raise InterfaceMismatch(found, lacking)
                self._objects[key] = found
        return found

    def _close_later(self, found: Any) -> None:
        """Close, with the store, what the factory made and nothing else closes."""
        if hasattr(found, "__exit__") or hasattr(found, "__aexit__"):
            return  # entered: the stack exits it
        aclose, close = getattr(found, "aclose", None), getattr(found, "close", None)
        if callable(aclose):
            self._stack.push_async_callback(aclose)
        elif callable(close) and inspect.iscoroutinefunction(close):
            self._stack.push_async_callback(close)
        elif callable(close):
            self._stack.callback(close)

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        self._objects.clear()
        self._making.clear()
        await self._stack.aclose()
