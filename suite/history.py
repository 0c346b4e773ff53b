"""Recorded operation histories, in the manner of Jepsen: invoke, then ok / fail / info.

A concurrency test cannot say what a store *should* return for one call (that
depends on what raced with it); it can only record what every call saw and
when, then ask afterwards whether one legal order explains it all. This module
does the recording. Every event gets a global index in the order it happened
(one event loop, so index order is real-time order) plus a monotonic time for
the one check that needs seconds (search staleness).

Entries are recorded as plain :class:`Rec` tuples, never as the store's own
objects: a store may return any object with the SPEC attributes, may reuse or
mutate it, and the checker must see what the call returned at that moment.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple

from .contract import EntryLike

__all__ = ["FUNCTIONS", "TYPES", "Call", "History", "Op", "Rec", "rec", "short_id"]

TYPES = frozenset({"invoke", "ok", "fail", "info"})
FUNCTIONS = frozenset({"append", "read", "search", "compact", "forget", "recover"})


class Rec(NamedTuple):
    """What the checker needs of one returned entry (the SPEC attributes minus content)."""

    id: str
    seq: int
    role: str
    covers: tuple[str, ...]
    user_id: str


def rec(entry: EntryLike) -> Rec:
    """Snapshot an entry as returned, whatever its type."""
    return Rec(entry.id, entry.seq, entry.role, tuple(entry.covers), entry.user_id)


def short_id(entry_id: str) -> str:
    """Store-made ids are often 32 hex digits; eight are enough to tell them apart on screen."""
    return entry_id if len(entry_id) <= 12 else entry_id[:8] + "…"


def _fmt_rec(r: Rec) -> str:
    text = f"{short_id(r.id)}@{r.seq}"
    if r.role == "summary":
        text += "{" + ",".join(short_id(c) for c in r.covers) + "}"
    return text


def _fmt_value(f: str, type_: str, value: Any) -> str:
    if type_ == "ok" and f in ("read", "search"):
        return "[" + " ".join(_fmt_rec(r) for r in value) + "]"
    if type_ == "ok" and isinstance(value, Rec):
        return _fmt_rec(value)
    return "" if value is None else repr(value)


@dataclass(frozen=True, slots=True)
class Op:
    """One event. ``value`` is the call's arguments on invoke and its result on ok.

    Invoke values: append ``(role, content, message_id)``, read ``limit``,
    search ``(query, k)``, compact / forget / recover ``None``.
    Ok values: append ``Rec``, read and search ``tuple[Rec, ...]``, compact
    ``Rec | None``, forget / recover ``None``.
    """

    index: int
    process: int
    type: str
    f: str
    user_id: str
    value: Any
    time: int
    error: str | None = None

    def __str__(self) -> str:
        text = (f"{self.index:>6} p{self.process:<3} {self.type:<6} {self.f:<7} "
                f"{self.user_id!r} {_fmt_value(self.f, self.type, self.value)}")
        return f"{text} !! {self.error}" if self.error else text.rstrip()

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "process": self.process, "type": self.type, "f": self.f,
                "user_id": self.user_id, "value": _jsonable(self.value), "time": self.time,
                "error": self.error}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Op:
        f, type_, value = data["f"], data["type"], data["value"]
        if type_ == "ok" and value is not None and f in ("read", "search"):
            value = tuple(_rec_from(v) for v in value)
        elif type_ == "ok" and value is not None and f in ("append", "compact"):
            value = _rec_from(value)
        elif type_ == "invoke" and isinstance(value, list):
            value = tuple(value)
        return cls(data["index"], data["process"], type_, f, data["user_id"], value,
                   data["time"], data.get("error"))


def _rec_from(v: Sequence[Any]) -> Rec:
    return Rec(v[0], v[1], v[2], tuple(v[3]), v[4])


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    return value


@dataclass(slots=True)
class Call:
    """An invoke paired with its completion (``None`` while still in flight)."""

    invoke: Op
    completion: Op | None = None
    result: Any = None  # set by the body of ``History.record``

    def set(self, result: Any) -> None:
        """Record what the store returned; entries are snapshotted as ``Rec`` now."""
        f = self.invoke.f
        if f in ("read", "search"):
            self.result = tuple(rec(e) for e in result)
        elif f in ("append", "compact"):
            self.result = None if result is None else rec(result)
        else:
            self.result = None

    @property
    def type(self) -> str:
        return "info" if self.completion is None else self.completion.type

    @property
    def ops(self) -> list[Op]:
        return [self.invoke] if self.completion is None else [self.invoke, self.completion]


class History:
    """An append-only list of ops, safe to share between asyncio tasks of one loop.

    Appends happen without an await in between, so the list order is the
    order in which events happened.
    """

    def __init__(self, ops: Iterable[Op] = ()) -> None:
        self.ops: list[Op] = list(ops)

    def __len__(self) -> int:
        return len(self.ops)

    def __iter__(self) -> Iterator[Op]:
        return iter(self.ops)

    def _add(self, process: int, type_: str, f: str, user_id: str, value: Any,
             error: str | None = None) -> Op:
        op = Op(len(self.ops), process, type_, f, user_id, value, time.monotonic_ns(), error)
        self.ops.append(op)
        return op

    @asynccontextmanager
    async def record(self, process: int, f: str, user_id: str,
                     value: Any = None) -> AsyncIterator[Call]:
        """Record one call: invoke now, then ok, fail or info by how the body ends.

        ``ValueError``/``TypeError`` are *fail* (SPEC: rejected before anything
        is written, so definitely no effect); any other exception or a cancel is
        *info* (indeterminate). Exceptions propagate unchanged.
        """
        call = Call(self._add(process, "invoke", f, user_id, value))
        try:
            yield call
        except (ValueError, TypeError) as exc:
            call.completion = self._add(process, "fail", f, user_id, None, _describe(exc))
            raise
        except (Exception, asyncio.CancelledError) as exc:
            call.completion = self._add(process, "info", f, user_id, None, _describe(exc))
            raise
        call.completion = self._add(process, "ok", f, user_id, call.result)

    def to_json(self) -> list[dict[str, Any]]:
        return [op.to_json() for op in self.ops]

    def dumps(self) -> str:
        return json.dumps(self.to_json(), ensure_ascii=False)

    @classmethod
    def loads(cls, text: str) -> History:
        return cls(Op.from_json(d) for d in json.loads(text))

    def __str__(self) -> str:
        return "\n".join(str(op) for op in self.ops)


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
