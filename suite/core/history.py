"""The suite's one recorder: histories in the manner of Jepsen, invoke then ok / fail / info.

A concurrency test cannot say what a store *should* return for one call (that
depends on what raced with it); it can only record what every call saw and
when, then ask afterwards whether one legal order explains it all. Every store
call the suite makes lands here: ``_run.LoggedStore`` records each call of each
test, the workload's clients (one Jepsen "process" each) included, and the
checker pairs the same ops into :class:`Call` s. Every event gets a global
index in the order it happened (one event loop, so index order is real-time
order) plus a monotonic time for the one check that needs seconds (search
staleness).

Entries are recorded as plain :class:`Rec` tuples, never as the store's own
objects: a store may return any object with the SPEC attributes, may reuse or
mutate it, and the checker must see what the call returned at that moment.
Contents are not kept (a 64 KiB content read a thousand times would be kept a
thousand times); ``Op.shown`` keeps instead how the result read when it came
back, bounded, for the failure messages.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

from ..contract import ConsistencyReport, EntryLike

__all__ = ["FUNCTIONS", "TYPES", "UNBOUNDED", "Call", "History", "Op", "Rec", "call_text",
           "describe", "method", "pair", "rec", "short_id", "short_repr"]

TYPES = frozenset({"invoke", "ok", "fail", "info"})
FUNCTIONS = frozenset({"append", "read", "search", "compact", "forget", "recover",
                       "consistent", "open", "close", "note"})
"""What ``Op.f`` names: the store's methods (the checker judges the first six), opening and
closing a store through its factory, and ``note`` (a line that is no call: a cancel, a
failpoint armed)."""

UNBOUNDED = 1 << 62
"""``Call.hi`` of a call that may take effect at any time after its invoke (indeterminate)."""

NOTE_PROCESS = -1
"""The process of notes: they pair with nothing."""

_METHODS = {"append": "append_message", "read": "get_history", "consistent": "consistent_state"}
_ENTRY = ("id", "user_id", "seq", "role", "content", "covers")


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


# --------------------------------------------------------------------------- rendering


def short_id(entry_id: str) -> str:
    """Store-made ids are often 32 hex digits; eight are enough to tell them apart on screen."""
    return entry_id if len(entry_id) <= 12 else entry_id[:8] + "…"


def short_repr(value: object, width: int = 48) -> str:
    """``repr(value)``, cut to ``width`` characters with the full size said at the end."""
    text = repr(value)
    if len(text) > width:
        size = f"{len(value)} chars" if isinstance(value, str) else type(value).__name__
        text = f"{text[: width - 12]}...({size})"
    return text


def describe(value: object) -> str:
    """A compact, one-line rendering of a store result for op logs and messages."""
    if value is None:
        return "None"
    if isinstance(value, (list, tuple)) and all(_is_entry(v) for v in value):
        items = [describe(v) for v in value]
        if len(items) > 6:
            items = [*items[:3], f"... {len(items) - 5} more ...", *items[-2:]]
        return "[" + ", ".join(items) + "]"
    if _is_entry(value):
        e = cast(EntryLike, value)
        covers = f", covers={len(e.covers)} ids" if e.covers else ""
        content = short_repr(e.content, 40)
        return f"<{e.role} seq={e.seq} id={short_repr(e.id, 40)} {content}{covers}>"
    if isinstance(value, ConsistencyReport):
        return "consistent" if value else str(value)
    return short_repr(value, 80)


def _is_entry(value: object) -> bool:
    return all(hasattr(value, a) for a in _ENTRY)


def _fmt_rec(r: Rec) -> str:
    text = f"{short_id(r.id)}@{r.seq}"
    if r.role == "summary":
        text += "{" + ",".join(short_id(c) for c in r.covers) + "}"
    return text


def _fmt_value(f: str, type_: str, value: Any) -> str:
    if type_ == "ok" and f in ("read", "search") and isinstance(value, tuple):
        return "[" + " ".join(_fmt_rec(r) for r in value) + "]"
    if type_ == "ok" and isinstance(value, Rec):
        return _fmt_rec(value)
    return "" if value is None else repr(value)


def _args(*args: object, **kwargs: object) -> str:
    parts = [short_repr(a) for a in args]
    parts += [f"{k}={short_repr(v)}" for k, v in kwargs.items() if v is not None]
    return ", ".join(parts)


def call_text(invoke: Op) -> str:
    """How an invoke reads as the call it was: ``append_message('ann', 'user', 'hi')``."""
    f, user, value = invoke.f, invoke.user_id, invoke.value
    if f == "note":
        return f"# {value}"
    if f in ("open", "close"):
        hook = "__aenter__" if f == "open" else "__aexit__"
        return f"{method(invoke)} ({value}: the factory's {hook})"
    if f == "recover":
        return "recover()"
    args: tuple[Any, ...] = value if isinstance(value, tuple) else ()
    if f == "append" and len(args) == 3:
        text = _args(user, args[0], args[1], message_id=args[2])
    elif f == "read":
        text = _args(user, limit=value)
    elif f == "search" and len(args) == 2:
        text = _args(user, args[0], k=args[1])
    else:
        text = _args(user)
    return f"{method(invoke)}({text})"


def method(op: Op) -> str:
    """The store method an op is about (``get_history`` for ``read``), or what else it is."""
    if op.f in ("open", "close"):
        return "opening the store" if op.f == "open" else "closing the store"
    return _METHODS.get(op.f, op.f)


def _describe_error(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# --------------------------------------------------------------------------- ops and calls


@dataclass(frozen=True, slots=True)
class Op:
    """One event. ``value`` is the call's arguments on invoke and its result on ok.

    Invoke values: append ``(role, content, message_id)``, read ``limit``,
    search ``(query, k)``, compact / forget / consistent / recover ``None``,
    open / close the factory's name, note its text.
    Ok values: append ``Rec``, read and search ``tuple[Rec, ...]``, compact
    ``Rec | None``, consistent ``"consistent"`` or what differs, others ``None``.
    ``user_id`` is the call's user argument as given (an invalid-input test
    passes non-strings), ``None`` for calls about no user. ``shown`` is how the
    store's own result read when the recorder saw it (``describe``); it is
    neither compared nor saved.
    """

    index: int
    process: int
    type: str
    f: str
    user_id: Any
    value: Any
    time: int
    error: str | None = None
    shown: str | None = field(default=None, compare=False)

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


def _snapshot(f: str, result: Any) -> Any:
    """What the history keeps of a result: ``Rec`` s for entries (SPEC attributes only)."""
    if f in ("read", "search"):
        return tuple(rec(e) for e in result)
    if f in ("append", "compact"):
        return None if result is None else rec(result)
    if f == "consistent":
        return "consistent" if result else str(result)
    return None


class Call:
    """One call: its invoke and its completion (``None`` while in flight or never completed).

    The recorder fills it as the call runs; ``pair`` rebuilds it from any list
    of ops. ``lo`` is the invoke's index and ``hi`` the last index at which
    the call can have taken effect: its completion's if ok or fail,
    ``UNBOUNDED`` if indeterminate (info, or no completion). ``value`` is the
    ok result, ``arg`` the invoke's value.
    """

    __slots__ = ("arg", "completion", "f", "failed", "hi", "invoke", "lo", "ok", "shown",
                 "unreadable", "value")

    def __init__(self, invoke: Op, completion: Op | None = None) -> None:
        self.invoke = invoke
        self.f = invoke.f
        self.arg: Any = invoke.value
        self.lo = invoke.index
        self.shown: str | None = None
        self.unreadable: str | None = None
        self.end(completion)

    def end(self, completion: Op | None) -> None:
        self.completion = completion
        kind = None if completion is None else completion.type
        self.ok = kind == "ok"
        self.failed = kind == "fail"
        self.hi = completion.index if completion is not None and kind in ("ok", "fail") \
            else UNBOUNDED
        self.value: Any = completion.value if completion is not None and self.ok else None

    def set(self, result: Any, *, shown: str | None = None) -> None:
        """Record what the store returned (entries are snapshotted as ``Rec`` now).

        A result that is not what SPEC.md says the call returns (no ``id``, not
        a list) makes the call indeterminate (info) rather than the recorder's
        own crash; ``shown`` still says what came back.
        """
        self.shown = shown
        try:
            self.value = _snapshot(self.f, result)
        except Exception as exc:
            self.unreadable = f"unreadable result ({_describe_error(exc)})"

    @property
    def ops(self) -> list[Op]:
        return [self.invoke] if self.completion is None else [self.invoke, self.completion]

    @property
    def text(self) -> str:
        return call_text(self.invoke)

    @property
    def outcome(self) -> str:
        """How the call ended, for a log line: its result, ``raised ...``, or ``cancelled``."""
        end = self.completion
        if end is None:
            return "(in flight)"
        if end.shown is not None:
            return end.shown
        if self.f in ("open", "close"):
            done = "opened" if self.f == "open" else "closed"
            return done if end.type == "ok" else f"ended by {end.error}"
        if end.type == "ok":
            return _fmt_value(self.f, "ok", end.value) or "None"
        if end.error == "CancelledError":
            return "cancelled"
        error = end.error or end.type
        return f"raised {error if len(error) <= 100 else error[:97] + '...'}"

    def __str__(self) -> str:
        """How the checker names the call in an anomaly: ``read 12 (limit 5)``."""
        if self.f == "read":
            return f"read {self.lo} (limit {self.arg})"
        if self.f == "search":
            return f"search {self.lo} (k {self.arg[1]})"
        return f"{self.f} {self.lo}"


def pair(ops: Iterable[Op]) -> list[Call]:
    """The calls of a list of ops, in invoke order: each process runs one call at a time.

    An invoke that its process followed by another invoke never completed
    (indeterminate); a completion without an invoke is dropped; notes are no calls.
    """
    pending: dict[int, Op] = {}
    calls: list[Call] = []
    for op in ops:
        if op.f == "note":
            continue
        if op.type == "invoke":
            previous = pending.pop(op.process, None)
            if previous is not None:
                calls.append(Call(previous))
            pending[op.process] = op
        else:
            inv = pending.pop(op.process, None)
            if inv is not None:
                calls.append(Call(inv, op))
    calls.extend(Call(inv) for inv in pending.values())
    calls.sort(key=lambda c: c.lo)
    return calls


def _about(op: Op, user: object) -> bool:
    """Whether ``op`` is about no user, ``user``, or one of a ``frozenset`` of users.

    Ids may be invalid, unhashable values (an invalid-argument test's ``['ann']``).
    """
    if op.user_id is None:
        return True
    if isinstance(user, frozenset):
        return any(op.user_id == u for u in user)
    return bool(op.user_id == user)


# --------------------------------------------------------------------------- the history


class History:
    """An append-only list of ops, safe to share between asyncio tasks of one loop.

    Appends happen without an await in between, so the list order is the
    order in which events happened. ``raised`` maps the invoke index of each
    call that raised (recorded here, not loaded) to its exception, so that the
    suite can tell which call an exception came from.
    """

    def __init__(self, ops: Iterable[Op] = ()) -> None:
        self.ops: list[Op] = list(ops)
        self.raised: dict[int, BaseException] = {}
        self._running: dict[int, Op] = {}  # process -> its invoke in flight
        self.declared: dict[str, Any] = {}
        """What the recorded store declares (``keep_last``, ``search_staleness``, its
        profile): the header of the history file it is written to (``history_format``)."""
        self.rename: Callable[[Any], Any] | None = None
        """The test's user id to the one the store received (``fresh.Namespace.user``):
        the ops hold the store's ids, a test names its own in ``note`` and ``format``."""

    def _renamed(self, user: object) -> object:
        rename = self.rename
        if rename is None or user is None:
            return user
        if isinstance(user, frozenset):
            return frozenset(rename(u) for u in user)
        return rename(user)

    def __len__(self) -> int:
        return len(self.ops)

    def __iter__(self) -> Iterator[Op]:
        return iter(self.ops)

    def _add(self, op: Op) -> Op:
        self.ops.append(op)
        return op

    def invoke(self, process: int, f: str, user_id: Any, value: Any = None) -> Op:
        op = self._add(Op(len(self.ops), process, "invoke", f, user_id, value,
                          time.monotonic_ns()))
        self._running[process] = op
        return op

    def complete(self, invoke: Op, type_: str, value: Any = None, *, error: str | None = None,
                 shown: str | None = None) -> Op:
        if self._running.get(invoke.process) is invoke:
            del self._running[invoke.process]
        return self._add(Op(len(self.ops), invoke.process, type_, invoke.f, invoke.user_id,
                            value, time.monotonic_ns(), error, shown))

    def note(self, text: str, user: object = None) -> Op:
        """A line that is not a store call (a cancel, a failpoint armed ...)."""
        return self._add(Op(len(self.ops), NOTE_PROCESS, "info", "note", self._renamed(user), text,
                            time.monotonic_ns()))

    def idle_process(self) -> int:
        """The lowest process number with no call in flight: concurrent calls get their own."""
        return next(n for n in itertools.count() if n not in self._running)

    def in_flight(self) -> list[Op]:
        """The invokes recorded here whose call has not completed yet."""
        return sorted(self._running.values(), key=lambda op: op.index)

    @asynccontextmanager
    async def record(self, process: int, f: str, user_id: Any,
                     value: Any = None) -> AsyncIterator[Call]:
        """Record one call: invoke now, then ok, fail or info by how the body ends.

        ``ValueError``/``TypeError`` are *fail* (SPEC: rejected before anything
        is written, so definitely no effect); any other exception or a cancel is
        *info* (indeterminate). Exceptions propagate unchanged.
        """
        call = Call(self.invoke(process, f, user_id, value))
        try:
            yield call
        except (ValueError, TypeError) as exc:
            self.raised[call.lo] = exc
            call.end(self.complete(call.invoke, "fail", error=_describe_error(exc)))
            raise
        except (Exception, asyncio.CancelledError) as exc:
            self.raised[call.lo] = exc
            call.end(self.complete(call.invoke, "info", error=_describe_error(exc)))
            raise
        if call.unreadable is not None:
            call.end(self.complete(call.invoke, "info", error=call.unreadable, shown=call.shown))
        else:
            call.end(self.complete(call.invoke, "ok", call.value, shown=call.shown))

    def raiser(self, exc: BaseException) -> Op | None:
        """The invoke of the call recorded here that raised ``exc`` (None: no call did)."""
        for index, raised in self.raised.items():
            if raised is exc:
                return self.ops[index]
        return None

    def last_call(self, user: object = None) -> Op | None:
        """The invoke of the latest call (for ``user``, see ``format``), notes aside."""
        user = self._renamed(user)
        for op in reversed(self.ops):
            if op.type == "invoke" and (user is None or _about(op, user)):
                return op
        return None

    def format(self, last: int = 60, user: object = None) -> str:
        """The calls and notes, numbered, one line each: ``  3. compact('ann') -> None``.

        With ``user``, only the calls for that user (or a ``frozenset`` of users:
        a leak's story needs both), those about no user, and notes.
        """
        user = self._renamed(user)
        ends = {c.lo: c for c in pair(self.ops)}
        lines: list[tuple[int, str]] = []
        hidden = 0
        for op in self.ops:
            if op.f != "note" and op.type != "invoke":
                continue
            n = len(lines) + hidden + 1
            if user is not None and not _about(op, user):
                hidden += 1
                continue
            if op.f == "note":
                lines.append((n, call_text(op)))
            else:
                c = ends[op.index]
                lines.append((n, f"{c.text} -> {c.outcome}"))
        if not lines:
            return "  (no store operations)"
        shown = lines[-last:]
        out = [f"  ... {len(lines) - len(shown)} earlier operations"] if len(shown) < len(lines) \
            else []
        out += [f"  {n:>3}. {text}" for n, text in shown]
        if hidden:
            out.append(f"  ({hidden} operations on other users not shown)")
        return "\n".join(out)

    def to_json(self) -> list[dict[str, Any]]:
        return [op.to_json() for op in self.ops]

    def dumps(self) -> str:
        return json.dumps(self.to_json(), ensure_ascii=False)

    @classmethod
    def loads(cls, text: str) -> History:
        return cls(Op.from_json(d) for d in json.loads(text))

    def __str__(self) -> str:
        return "\n".join(str(op) for op in self.ops)
