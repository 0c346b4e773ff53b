"""What both history checkers share: anomalies, how they are reported and shrunk, and time.

``checker`` (stores with entry ids) and ``checker_keyed`` (stores known by content)
read SPEC.md differently, but they report an anomaly, cap and shrink anomalies, and
decide which calls an interrupted write or a forget may have touched the same way.
They used to carry a copy each, and the copies drifted (one found the reads an
interrupted write taints by a scan, the other by bisection); kept here, a fix to one
is a fix to both, and the two checkers can only differ in their rules.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import accumulate

from ..contract import Guarantee
from .history import UNBOUNDED, Call, Op, pair

__all__ = ["PER_KIND", "Anomaly", "Reporter", "Spans", "ranked", "shrink", "taints"]

PER_KIND = 3  # anomalies of one kind reported per user: the first few tell the story
_MINIMISE = 10  # anomalies shrunk per check: shrinking re-runs the checker


@dataclass(frozen=True)
class Anomaly:
    """One way a history breaks SPEC.md, and the ops that prove it."""

    guarantee: Guarantee
    message: str
    ops: list[Op]
    kind: str = field(default="", compare=False)  # stable tag, used to re-find it when shrinking

    def __str__(self) -> str:
        return "\n".join([f"{self.guarantee}: {self.message}", *(f"  {op}" for op in self.ops)])


def ranked(found: list[Anomaly], recheck: Callable[[list[Op]], list[Anomaly]],
           minimise: bool) -> list[Anomaly]:
    """Anomalies earliest first, the first few shrunk by ``recheck`` when ``minimise``."""
    found = sorted(found, key=lambda a: (a.ops[-1].index if a.ops else 0, a.guarantee.number))
    if minimise:
        found = [shrink(a, recheck) if i < _MINIMISE else a for i, a in enumerate(found)]
    return found


def shrink(anomaly: Anomaly, recheck: Callable[[list[Op]], list[Anomaly]]) -> Anomaly:
    """Drop every call whose absence still leaves the same anomaly (one-minimal, like ddmin).

    ``recheck`` is the checker that found it, run on a part of the history.
    """
    calls = pair(anomaly.ops)

    def shows(subset: list[Call]) -> bool:
        ops = sorted((op for c in subset for op in c.ops), key=lambda op: op.index)
        return any(a.kind == anomaly.kind and a.guarantee is anomaly.guarantee
                   for a in recheck(ops))

    if len(calls) <= 1 or not shows(calls):
        return anomaly
    i = 0
    while i < len(calls) and len(calls) > 1:
        trial = calls[:i] + calls[i + 1:]
        if shows(trial):
            calls = trial
        else:
            i += 1
    ops = sorted((op for c in calls for op in c.ops), key=lambda op: op.index)
    return Anomaly(anomaly.guarantee, anomaly.message, ops, anomaly.kind)


def _ops(*calls: Call | None) -> list[Op]:
    """The ops of these calls, each once, in history order (``None`` calls are skipped)."""
    seen: dict[int, Op] = {}
    for c in calls:
        if c is not None:
            for op in c.ops:
                seen[op.index] = op
    return [seen[i] for i in sorted(seen)]


class Reporter:
    """Collects one user's anomalies, at most ``PER_KIND`` of each guarantee and kind."""

    def __init__(self) -> None:
        self.found: list[Anomaly] = []
        self._counts: dict[tuple[Guarantee, str], int] = {}

    def report(self, guarantee: Guarantee, kind: str, message: str, *calls: Call | None) -> None:
        """Record an anomaly proven by ``calls``; ``kind`` is ``tag:subject`` (capped per tag)."""
        key = (guarantee, kind.split(":", 1)[0])
        n = self._counts.get(key, 0)
        if n < PER_KIND:
            self._counts[key] = n + 1
            self.found.append(Anomaly(guarantee, message, _ops(*calls), kind))

    def capped(self, guarantee: Guarantee, kind: str) -> bool:
        """Whether ``report`` would drop another anomaly of this kind (spare the search)."""
        return self._counts.get((guarantee, kind), 0) >= PER_KIND


class Spans:
    """Index intervals ``(lo, hi)``, asked "may one of them overlap this call?" by bisection.

    Sorted by ``lo`` with a running maximum of their ends, every question is one
    bisection instead of a scan: the forgets of a user, or the windows an
    interrupted write taints.
    """

    def __init__(self, spans: Iterable[tuple[int, int]]) -> None:
        ordered = sorted(spans)
        self._los = [lo for lo, _ in ordered]
        self._ends = list(accumulate((hi for _, hi in ordered), max))

    def end_before(self, hi: int) -> int:
        """The latest end of a span that began before ``hi`` (-1: none began before it)."""
        k = bisect_left(self._los, hi)
        return self._ends[k - 1] if k else -1

    def overlaps(self, lo: int, hi: int) -> bool:
        """Whether a span began before ``hi`` and ended after ``lo``."""
        return self.end_before(hi) > lo

    def touch(self, c: Call) -> bool:
        """Whether a span overlaps the call ``c`` (began before it ended, ended after it began)."""
        return self.overlaps(c.lo, c.hi)


def taints(calls: list[Call], recovers: list[Call] | None) -> Spans:
    """Windows from each interrupted write to the end of the next ``recover()`` after it (G10).

    Only a write that raised (info) was interrupted; one still in flight is just
    concurrent. ``recovers`` are the successful recovers in invoke order (``pair``'s);
    ``None`` for a store without ``recover()``, which must be whole again as soon as
    the interrupted call has returned.
    """
    r_los = [r.lo for r in recovers or ()]
    # The earliest end among recovers invoked from each one on (a suffix minimum).
    r_his = list(accumulate(reversed([r.hi for r in recovers or ()]), min))[::-1]
    spans = []
    for c in calls:
        end = c.completion
        if end is not None and end.type == "info" and c.f in ("append", "compact", "forget"):
            if recovers is None:
                spans.append((c.lo, end.index))
            else:
                i = bisect_right(r_los, end.index)  # the first recover invoked after it ended
                spans.append((c.lo, r_his[i] if i < len(r_his) else UNBOUNDED))
    return Spans(spans)
