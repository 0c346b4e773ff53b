"""LangChain chat histories, as a team might write them, that meet a poisoned batch well or badly:
the controls of the interface-fault test (``suite/test_interface_faults.py``).

Each keeps its messages as JSON rows (``message_to_dict``) in a dict shared by every
history of its class, the way a file or a table is shared, so the suite's second store
on another thread sees what the first wrote:

- :class:`PartialHistory` serializes and stores message by message, so the poisoned
  third message raises after two were stored: a partial effect (G10).
- :class:`AtomicHistory` serializes the whole batch, then stores it: correct.
- :class:`DroppingHistory` skips what it cannot serialize and returns: an acknowledged
  message lost (G1).
- :class:`WedgingHistory` takes its "database" lock, serializes, stores, and releases,
  with no ``finally``: the failed batch keeps the lock, and every later write waits for
  it for a second and raises "database is locked" (G10, never wedges).
- :class:`HangingHistory`: the same, but a later write waits five seconds, past the
  run's ``--nomnesia-op-timeout``: a store that does not answer (G10).
- :class:`ConnectionWedgingHistory`: the wedge an Agents SDK ``SQLiteSession`` release had
  (issue 44): the failed batch leaves its transaction open on its own connection (here,
  its event loop), whose next write commits it; any other connection's write meanwhile
  waits a second and raises "database is locked". A check that writes through the
  failing store first heals it, so only one that probes from elsewhere first sees it (G10).
- :class:`ConnectionReleasingHistory`: the same store with the transaction rolled back
  on the error: correct.
- :class:`LoopBoundHistory`: correct, but every history of it shares a client bound to the
  first event loop that wrote (as an engine or a pool made on one loop is): a store on
  another loop fails before any poisoned call, so the after-call check from another thread
  proves nothing and must be named not exercised, never passed in silence.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Sequence
from typing import Any, ClassVar

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict


class _JsonHistory(BaseChatMessageHistory):
    rows: ClassVar[dict[str, list[str]]]

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.rows = {}  # one "database" per class

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        return messages_from_dict([json.loads(r) for r in self.rows.get(self.session_id, [])])

    def _table(self) -> list[str]:
        return self.rows.setdefault(self.session_id, [])

    def clear(self) -> None:
        self.rows.pop(self.session_id, None)


class PartialHistory(_JsonHistory):
    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        for message in messages:
            self._table().append(json.dumps(message_to_dict(message)))


class AtomicHistory(_JsonHistory):
    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        rows = [json.dumps(message_to_dict(message)) for message in messages]
        self._table().extend(rows)


class DroppingHistory(_JsonHistory):
    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        for message in messages:
            try:
                self._table().append(json.dumps(message_to_dict(message)))
            except TypeError:
                continue


class WedgingHistory(_JsonHistory):
    lock: ClassVar[threading.Lock] = threading.Lock()

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        if not self.lock.acquire(timeout=1.0):
            raise RuntimeError("database is locked")
        rows = [json.dumps(message_to_dict(message)) for message in messages]
        self._table().extend(rows)
        self.lock.release()


class HangingHistory(_JsonHistory):
    lock: ClassVar[threading.Lock] = threading.Lock()

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        if not self.lock.acquire(timeout=5.0):
            raise RuntimeError("database is locked")
        rows = [json.dumps(message_to_dict(message)) for message in messages]
        self._table().extend(rows)
        self.lock.release()


class ConnectionWedgingHistory(_JsonHistory):
    owner: ClassVar[int | None] = None
    """The connection (an event loop's id) whose transaction is open, if any."""
    guard: ClassVar[threading.Lock] = threading.Lock()
    release_on_error: ClassVar[bool] = False

    async def _begin(self, me: int) -> None:
        """Take the write transaction, or wait (a bounded poll) a second for it."""
        deadline = time.monotonic() + 1.0
        while True:
            with self.guard:
                if type(self).owner in (None, me):
                    type(self).owner = me
                    return
            if time.monotonic() > deadline:
                raise RuntimeError("database is locked")
            await asyncio.sleep(0.01)  # bounded poll of the fake lock

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        me = id(asyncio.get_running_loop())
        await self._begin(me)
        try:
            rows = [json.dumps(message_to_dict(message)) for message in messages]
        except TypeError:
            if self.release_on_error:
                type(self).owner = None  # rolled back
            raise  # else the transaction stays open on this connection
        self._table().extend(rows)
        type(self).owner = None  # committed, and whatever was left open with it

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        raise NotImplementedError("this fake is asynchronous only")


class ConnectionReleasingHistory(ConnectionWedgingHistory):
    owner: ClassVar[int | None] = None
    guard: ClassVar[threading.Lock] = threading.Lock()
    release_on_error = True


class LoopBoundHistory(AtomicHistory):
    loop: ClassVar[asyncio.AbstractEventLoop | None] = None
    """The loop the shared "client" was made on: the first that wrote."""

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        running = asyncio.get_running_loop()
        if type(self).loop is None:
            type(self).loop = running
        if type(self).loop is not running:
            raise RuntimeError("the client is attached to a different loop")
        self.add_messages(messages)
