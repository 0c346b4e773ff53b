"""A poisoned batch: one call of a library's batch or replace method, one item of which
cannot be stored (SPEC.md, "Faults": at the store's own interface).

Each mapping whose interface takes a batch or replaces a history has an async
``poisoned_batch(user_id, batch, poisoned)``: it builds the library's own items
from ``batch`` (role, content pairs), puts an ``Unserializable`` in item
``poisoned`` where the library would serialize it (a message's
``additional_kwargs``, an item's content part, a stored value), and returns a
``PoisonedCall``: what it will call, said in a line, and the call itself. The
call is made apart from its preparation so that the suite can name it whatever
it does (raise, return or hang), and time only the library's own method.

A mapping reads back a stored poisoned item as its role and content, like any
other, so a call that took full effect shows as the whole batch appended. Where
the interface replaces a history, the mapping passes the history it read first
followed by the batch, so the same holds: full effect is "before + batch",
no effect is "before", and anything else is a partial effect.

A mapping may also have ``stored_batch(user_id, batch)``: the same method with every item
valid (``StoredBatch``), which the suite calls to check that what it stored reads back in
order, and that an append after it reads last.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

__all__ = ["PoisonedCall", "StoredBatch", "Unserializable", "describe_batch"]


class Unserializable:
    """An object no serializer knows: not a JSON type, not a string, no ``__json__``.

    Plain ``object()`` would do (and is what the standalone reproductions use); the
    name makes the library's error read as the suite's doing ("Object of type
    Unserializable is not JSON serializable"). It copies and pickles like any
    object, so an in-memory store that keeps references stores it, as it should.
    """

    def __repr__(self) -> str:
        return "<Unserializable>"


@dataclass(frozen=True)
class PoisonedCall:
    """One prepared call of a library's batch method, not yet made."""

    call: str
    """What is called, in a line: ``InMemoryChatMessageHistory.aadd_messages([...])``."""
    run: Callable[[], Awaitable[object]]
    """Makes the call (once)."""


@dataclass(frozen=True)
class StoredBatch:
    """One prepared call of a library's batch or replace method with every item valid: what
    the mapping's ``stored_batch(user_id, batch)`` returns. A batch is written in one
    call, often in one transaction that stamps every item alike, and a replace stamps its
    items itself: orders the suite's one-message appends never make (openai-agents-python
    #1900, run-llama/llama_index#19389)."""

    call: str
    """What is called, in a line: ``SQLAlchemySession.add_items([5 items])``."""
    run: Callable[[], Awaitable[object]]
    """Makes the call (once)."""
    replaces: bool
    """The call replaces the user's history with the batch (else appends the batch)."""


def describe_batch(n: int, poisoned: int, where: str, kept: int = 0) -> str:
    """``5 messages, #3's additional_kwargs holding an Unserializable`` (1-based, as read)."""
    head = f"{kept} kept + {n} new" if kept else f"{n}"
    return f"{head} items, new #{poisoned + 1}'s {where} holding an Unserializable"
