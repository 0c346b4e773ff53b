"""The history file format: JSON Lines, versioned, readable by the checker from any writer.

A history is judged from what it says, not from who wrote it: the suite, ``record()`` in a
team's own test, the nemesis, or a memory service in another language. So the file is a
stable contract of its own (``docs/history-format.md``, the JSON Schema beside this module),
not whatever ``History.dumps`` happens to produce today: elle and jepsen users broke when
jepsen changed its history format, and this one changes only with a new version number.

Version 1, one JSON object a line:

- line 1, the header: ``{"type": "header", "format": "nomnesia-history", "version": 1,
  "keep_last": 4, "search_staleness": 0.0, "profile": "full"}`` (``profile`` ``keyed``: a
  store known by content, as the seed profile is; then ``compact`` and ``recover`` say
  whether it has those methods);
- ``invoke``: a call began (``process``, ``f``, ``user_id``, ``args``);
- ``ok`` / ``fail`` / ``info``: the call of that ``process`` ended (``value`` on ok,
  ``error`` otherwise); ``fail`` means certainly no effect, ``info`` maybe;
- ``note``: a line that is no call; ``fault``: a fault window opening (``phase: start``) or
  closing (``phase: end``) on a ``target``.

Every event may carry ``index`` (strictly increasing; default its line order) and ``time``
(monotonic nanoseconds; default 1 ms per event). Readers accept every version up to
:data:`VERSION` and refuse a newer one by name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from .history import NOTE_PROCESS, History, Op, Rec
from .view import content_key

__all__ = ["FORMAT", "SCHEMA_FILE", "VERSION", "HistoryFile", "HistoryFormatError", "dump",
           "dumps", "fault_note", "load", "loads", "schema", "write", "write_test_histories"]

FORMAT = "nomnesia-history"
VERSION = 1
"""The newest version this module writes; it reads every version from 1 to this one."""
SCHEMA_FILE = "history-v1.schema.json"
"""The JSON Schema of one line of version 1, shipped beside this module (package data)."""
_STEP_NS = 1_000_000
"""The time given to an event without one: its index in milliseconds."""

_ARGS: dict[str, tuple[str, ...]] = {"append": ("role", "content", "message_id"),
                                     "search": ("query", "k")}


class HistoryFormatError(ValueError):
    """A history file that is not valid: where (line) and what."""


@dataclass
class HistoryFile:
    """A history read from (or to be written to) a file, with what its header declares."""

    history: History
    keep_last: int | None = None
    search_staleness: float | None = None
    profile: str = "full"
    compact: bool = True
    recover: bool = True
    version: int = VERSION
    meta: Mapping[str, Any] | None = None


def schema() -> dict[str, Any]:
    """The JSON Schema of one line (any event or the header) of the newest version."""
    text = resources.files(__package__).joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


# --------------------------------------------------------------------------- writing


def fault_note(phase: str, fault: str, target: str, effect: str = "") -> str:
    """A fault window's note as the recorder keeps it in memory (``fault: stall on redis``,
    ``healed: stall on redis (2 replies lost)``): what the timeline and this format read."""
    if phase == "start":
        return f"fault: {fault} on {target}"
    return f"healed: {fault} on {target}" + (f" ({effect})" if effect else "")


def _fault_of(text: str) -> dict[str, str] | None:
    kind, _, what = text.partition(": ")
    if kind not in ("fault", "healed") or " on " not in what:
        return None
    effect = ""
    if kind == "healed" and what.endswith(")") and " (" in what:
        what, _, effect = what[:-1].partition(" (")
    fault, _, target = what.rpartition(" on ")
    out = {"phase": "start" if kind == "fault" else "end", "fault": fault, "target": target}
    return {**out, "effect": effect} if effect else out


def _entry(r: Rec) -> dict[str, Any]:
    return {"id": r.id, "seq": r.seq, "role": r.role, "covers": list(r.covers),
            "user_id": r.user_id}


def _event(op: Op) -> dict[str, Any]:
    base: dict[str, Any] = {"index": op.index, "time": op.time}
    if op.f == "note":
        fault = _fault_of(str(op.value))
        if fault is not None:
            return {"type": "fault", **base, **fault}
        return {"type": "note", **base, "text": str(op.value), "user_id": op.user_id}
    event = {"type": op.type, **base, "process": op.process, "f": op.f, "user_id": op.user_id}
    if op.type == "invoke":
        event["args"] = _args_of(op.f, op.value)
    elif op.type == "ok":
        event["value"] = _value_of(op.f, op.value)
    else:
        event["error"] = op.error
    return event


def _args_of(f: str, value: Any) -> dict[str, Any]:
    if f in _ARGS and isinstance(value, tuple):
        return dict(zip(_ARGS[f], value, strict=False))
    if f == "read":
        return {"limit": value}
    if f in ("open", "close"):
        return {"factory": value}
    return {}


def _value_of(f: str, value: Any) -> Any:
    if isinstance(value, tuple) and all(isinstance(v, Rec) for v in value):
        return [_entry(v) for v in value]
    if isinstance(value, Rec):
        return _entry(value)
    return value


def _header(keep_last: int | None, search_staleness: float | None, profile: str,
            compact: bool, recover: bool, meta: Mapping[str, Any] | None) -> dict[str, Any]:
    header: dict[str, Any] = {"type": "header", "format": FORMAT, "version": VERSION,
                              "profile": profile}
    if keep_last is not None:
        header["keep_last"] = keep_last
    if search_staleness is not None:
        header["search_staleness"] = search_staleness
    if profile == "keyed":
        header |= {"compact": compact, "recover": recover}
    if meta:
        header["meta"] = dict(meta)
    return header


def dump(history: Iterable[Op], *, keep_last: int | None = None,
         search_staleness: float | None = None, profile: str = "full", compact: bool = True,
         recover: bool = True, meta: Mapping[str, Any] | None = None) -> Iterator[str]:
    """The lines (without newlines) of ``history`` in the newest version."""
    yield json.dumps(_header(keep_last, search_staleness, profile, compact, recover, meta),
                     ensure_ascii=False)
    for op in history:
        yield json.dumps(_event(op), ensure_ascii=False)


def dumps(history: Iterable[Op], **header: Any) -> str:
    """``dump`` as one string, a newline after every line."""
    return "".join(line + "\n" for line in dump(history, **header))


def write(path: str | Path, history: Iterable[Op], **header: Any) -> Path:
    """Write ``history`` to ``path`` (JSON Lines, UTF-8); returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(dumps(history, **header), encoding="utf-8")
    return target


def write_test_histories(directory: str | Path, test: str, logs: Iterable[History]
                         ) -> list[Path]:
    """``--nomnesia-history DIR``: each history a test recorded that has a store call, as
    ``DIR/<test>.jsonl`` (``-2``, ``-3`` ... for a test's further ones)."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", test).strip("_")[:150] or "history"
    written: list[Path] = []
    for log in logs:
        if not any(op.type == "invoke" and op.f not in ("open", "close", "note")
                   for op in log.ops):
            continue  # only the factory's open and close: nothing to judge
        n, path = 1, Path(directory) / f"{slug}.jsonl"
        while path.exists():
            n += 1
            path = Path(directory) / f"{slug}-{n}.jsonl"
        header = {k: v for k, v in log.declared.items()
                  if k in ("keep_last", "search_staleness", "profile", "compact", "recover")}
        written.append(write(path, log.ops, **header, meta={"test": test}))
    return written


# --------------------------------------------------------------------------- reading


def load(path: str | Path) -> HistoryFile:
    """Read a history file of any version up to :data:`VERSION`."""
    return loads(Path(path).read_text(encoding="utf-8"), source=str(path))


def loads(text: str, *, source: str = "<history>") -> HistoryFile:
    """Read the text of a history file (see :func:`load`)."""
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not lines:
        raise HistoryFormatError(f"{source}: empty, not a nomnesia history")
    events: list[tuple[int, dict[str, Any]]] = []
    for n, line in lines:
        try:
            event = json.loads(line)
        except json.JSONDecodeError as exc:
            raise HistoryFormatError(f"{source}:{n}: not JSON ({exc.msg})") from exc
        if not isinstance(event, dict):
            raise HistoryFormatError(f"{source}:{n}: an event is a JSON object")
        events.append((n, event))
    (first_line, header), rest = events[0], events[1:]
    if header.get("type") != "header" or header.get("format") != FORMAT:
        raise HistoryFormatError(f"{source}:{first_line}: the first line must be the header "
                                 f'{{"type": "header", "format": "{FORMAT}", "version": ...}}')
    version = header.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise HistoryFormatError(f"{source}:{first_line}: version must be an integer >= 1")
    if version > VERSION:
        raise HistoryFormatError(f"{source}: version {version} is newer than this nomnesia "
                                 f"reads (up to {VERSION}): upgrade nomnesia")
    reader = _READERS[version]
    return reader(header, rest, source)


def _read_v1(header: Mapping[str, Any], events: list[tuple[int, dict[str, Any]]],
             source: str) -> HistoryFile:
    profile = str(header.get("profile", "full"))
    if profile not in ("full", "keyed"):
        raise HistoryFormatError(f"{source}:1: profile is 'full' or 'keyed', not {profile!r}")
    keyed = profile == "keyed"
    ops: list[Op] = []
    running: dict[int, Op] = {}
    last = -1
    for position, (n, event) in enumerate(events):
        where = f"{source}:{n}"
        index = event.get("index", position)
        if not isinstance(index, int) or index <= last:
            raise HistoryFormatError(f"{where}: index must be an integer above the previous "
                                     f"event's ({last})")
        last = index
        time = event.get("time", index * _STEP_NS)
        if not isinstance(time, int):
            raise HistoryFormatError(f"{where}: time is monotonic nanoseconds, an integer")
        ops.append(_op_v1(event, index, time, running, keyed, where))
    history = History(_renumbered(ops))
    keep_last = header.get("keep_last")
    staleness = header.get("search_staleness")
    return HistoryFile(history, keep_last=None if keep_last is None else int(keep_last),
                       search_staleness=None if staleness is None else float(staleness),
                       profile=profile, compact=bool(header.get("compact", True)),
                       recover=bool(header.get("recover", True)), version=1,
                       meta=header.get("meta"))


def _renumbered(ops: list[Op]) -> list[Op]:
    """The checker indexes calls by position: a file's own indexes (gaps allowed) become
    positions, in the same order, so a finding names the event the way the list does."""
    return [Op(i, op.process, op.type, op.f, op.user_id, op.value, op.time, op.error)
            for i, op in enumerate(ops)]


def _op_v1(event: Mapping[str, Any], index: int, time: int, running: dict[int, Op],
           keyed: bool, where: str) -> Op:
    kind = event.get("type")
    if kind == "note":
        return Op(index, NOTE_PROCESS, "info", "note", event.get("user_id"),
                  str(event.get("text", "")), time)
    if kind == "fault":
        phase = event.get("phase")
        if phase not in ("start", "end") or not event.get("fault") or not event.get("target"):
            raise HistoryFormatError(f"{where}: a fault has phase start or end, fault, target")
        text = fault_note(str(phase), str(event["fault"]), str(event["target"]),
                          str(event.get("effect") or ""))
        return Op(index, NOTE_PROCESS, "info", "note", None, text, time)
    if kind not in ("invoke", "ok", "fail", "info"):
        raise HistoryFormatError(f"{where}: unknown event type {kind!r}")
    process = event.get("process")
    if not isinstance(process, int) or isinstance(process, bool) or process < 0:
        raise HistoryFormatError(f"{where}: process must be an integer >= 0")
    if kind == "invoke":
        f = event.get("f")
        if not isinstance(f, str) or f == "note":
            raise HistoryFormatError(f"{where}: an invoke names its call in f")
        op = Op(index, process, "invoke", f, event.get("user_id"),
                _invoke_value(f, event.get("args") or {}, where), time)
        running[process] = op
        return op
    invoke = running.pop(process, None)
    if invoke is None:
        raise HistoryFormatError(f"{where}: a {kind} of process {process} that has no call "
                                 "in flight")
    f = str(event.get("f", invoke.f))
    if f != invoke.f:
        raise HistoryFormatError(f"{where}: completes {f} but process {process} invoked "
                                 f"{invoke.f}")
    user = event.get("user_id", invoke.user_id)
    if kind == "ok":
        return Op(index, process, "ok", f, user,
                  _ok_value(f, event.get("value"), invoke, keyed, where), time)
    return Op(index, process, str(kind), f, user, None, time, str(event.get("error") or kind))


def _invoke_value(f: str, args: Any, where: str) -> Any:
    if not isinstance(args, Mapping):
        raise HistoryFormatError(f"{where}: args is an object")
    if f in _ARGS:
        names = _ARGS[f]
        return tuple(args.get(name) for name in names)
    if f == "read":
        return args.get("limit", 10)
    if f in ("open", "close"):
        return args.get("factory")
    return None


def _rec(value: Any, user: Any, keyed: bool, where: str) -> Rec:
    if not isinstance(value, Mapping):
        raise HistoryFormatError(f"{where}: an entry is an object with id, seq, role")
    entry_id = value.get("id")
    if entry_id is None and keyed and isinstance(value.get("content"), str):
        entry_id = content_key(value["content"])  # the keyed reading's id of a content
    if not isinstance(entry_id, str) or not isinstance(value.get("seq"), int):
        raise HistoryFormatError(f"{where}: an entry needs a string id and an integer seq")
    return Rec(entry_id, int(value["seq"]), str(value.get("role", "user")),
               tuple(str(c) for c in value.get("covers") or ()), str(value.get("user_id", user)))


def _ok_value(f: str, value: Any, invoke: Op, keyed: bool, where: str) -> Any:
    if f in ("read", "search"):
        if not isinstance(value, list):
            raise HistoryFormatError(f"{where}: an ok {f} returns a list of entries")
        return tuple(_rec(v, invoke.user_id, keyed, where) for v in value)
    if f in ("append", "compact"):
        return None if value is None else _rec(value, invoke.user_id, keyed, where)
    if f == "consistent":
        return "consistent" if value in (True, "consistent") else str(value)
    return value


_READERS = {1: _read_v1}
"""One reader per version: a new version adds a reader and keeps every earlier one."""
