"""What the report keeps of a failure beyond its cause: the whole message, and the history.

A concurrency failure is a story in time, and the page draws it (``timeline``)
from what is kept here: the anomalies with the indexes of their ops, and the
failing round's history. Everything is plain JSON (it travels from an xdist
worker in ``user_properties``) and bounded: strings are cut, long results
summarised, and a history over ``HISTORY_LIMIT`` ops keeps only the calls
around each anomaly's ops. It is for reading, not replaying: a whole history
to replay is what ``NOMNESIA_HISTORY_DIR`` keeps.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .labels import guarantee_key

__all__ = ["CONTEXT", "HISTORY_LIMIT", "TEXT_LIMIT", "anomaly_json", "evidence", "history_json",
           "op_json", "plain"]

HISTORY_LIMIT = 5_000
"""Ops of a failing history kept whole; a longer one keeps its anomalies' neighbourhoods."""
CONTEXT = 40
"""Events kept before and after each anomaly op when a history is cut."""
TEXT_LIMIT = 20_000
"""Characters of a failure's message kept (a message lists at most a few anomalies)."""
_WIDTH = 80
_ITEMS = 8


def plain(value: Any, width: int = _WIDTH) -> Any:
    """``value`` as JSON can hold it, strings cut to ``width`` and lists to a few items."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return value if len(value) <= width else f"{value[:width - 12]}…({len(value)} chars)"
    if isinstance(value, (list, tuple)):
        items = [plain(v, width) for v in value[:_ITEMS]]
        if len(value) > _ITEMS:
            items.append(f"… {len(value) - _ITEMS} more")
        return items
    if isinstance(value, dict):
        return {str(k): plain(v, width) for k, v in list(value.items())[:_ITEMS]}
    return plain(repr(value), width)


def op_json(op: Any) -> dict[str, Any]:
    """One ``history.Op`` with the keys of ``Op.to_json`` and its values shortened."""
    return {"index": int(op.index), "process": int(op.process), "type": str(op.type),
            "f": str(op.f), "user_id": plain(op.user_id), "value": plain(op.value),
            "time": int(op.time), "error": plain(op.error, 200)}


def anomaly_json(anomaly: Any) -> dict[str, Any]:
    """A ``checker.Anomaly``: its guarantee, kind, message, text and the indexes of its ops."""
    return {"guarantee": guarantee_key(getattr(anomaly, "guarantee", None)) or "unlabelled",
            "kind": str(getattr(anomaly, "kind", "") or "").split(":", 1)[0],
            "message": str(getattr(anomaly, "message", anomaly))[:2000],
            "ops": [int(op.index) for op in getattr(anomaly, "ops", None) or ()],
            "text": str(anomaly)[:4000]}


def history_json(ops: Sequence[Any], marked: Iterable[int] = (), *,
                 limit: int = HISTORY_LIMIT, context: int = CONTEXT) -> dict[str, Any]:
    """The ops of a history, all of them up to ``limit``; beyond, the ``marked`` ops (an
    anomaly's), ``context`` events either side, and both ends of every call kept; with
    nothing marked, the last ``limit`` ops."""
    total = len(ops)
    if total <= limit:
        return {"total": total, "cut": False, "ops": [op_json(op) for op in ops]}
    position = {int(op.index): i for i, op in enumerate(ops)}
    keep: set[int] = set()
    for index in marked:
        at = position.get(index)
        if at is not None:
            keep.update(range(max(0, at - context), min(total, at + context + 1)))
    if not keep:  # no anomaly to centre on: the end, where the check failed
        keep.update(range(total - limit, total))
    kept = sorted(keep)[:limit]
    # A kept completion needs its invoke (and a kept invoke its completion) to draw a bar.
    chosen = {int(ops[i].index) for i in kept}
    running: dict[int, Any] = {}
    pairs: dict[int, int] = {}
    for op in ops:
        if op.type == "invoke":
            running[op.process] = op
        elif op.f != "note" and op.process in running:
            invoke = running.pop(op.process)
            pairs[int(invoke.index)] = int(op.index)
            pairs[int(op.index)] = int(invoke.index)
    chosen |= {pairs[i] for i in list(chosen) if i in pairs}
    return {"total": total, "cut": True,
            "ops": [op_json(op) for op in ops if int(op.index) in chosen]}


def evidence(exc: BaseException) -> dict[str, Any]:
    """The whole message of a failure and, when it carries them, its anomalies and history."""
    found: dict[str, Any] = {"text": str(exc)[:TEXT_LIMIT]}
    anomalies = [a for a in getattr(exc, "anomalies", None) or () if hasattr(a, "ops")]
    if anomalies:
        found["anomalies"] = [anomaly_json(a) for a in anomalies]
    history = getattr(exc, "history", None)
    ops = list(getattr(history, "ops", history) or ()) if history is not None else []
    if ops:
        marked = [i for a in found.get("anomalies", ()) for i in a["ops"]]
        found["history"] = history_json(ops, marked)
    return found
