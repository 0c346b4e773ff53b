"""What a nemesis run found: merged history, losses, duplicates, anomalies, recovery times.

The workers' histories are merged on the shared monotonic clock (one machine,
so ``CLOCK_MONOTONIC`` orders events across processes). An op in flight when
its worker was killed gets an ``info`` completion at the moment of the kill:
it may or may not have taken effect, which is all a crash lets anyone know.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..history import History, Op

__all__ = ["FaultRecord", "NemesisReport", "account", "merge"]

RECOVERY_BAR = 5.0
"""Seconds within which the store must answer again after a fault ends (issue 8)."""


@dataclass
class FaultRecord:
    kind: str
    target: str
    detail: str
    started: float
    """Seconds since the run started."""
    held: float
    """Seconds from injection to the end of the fault."""
    recovered_after: float | None = None
    """Seconds from the end of the fault to the first acknowledged call invoked after it;
    None if the store never answered within the bound."""
    note: str = ""


@dataclass
class NemesisReport:
    adapter: str
    seed: int
    kinds: list[str]
    faults: list[FaultRecord] = field(default_factory=list)
    operations: dict[str, int] = field(default_factory=dict)
    operations_by_call: dict[str, int] = field(default_factory=dict)
    acknowledged_appends: int = 0
    lost: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    anomalies: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    check_seconds: float = 0.0
    history_ops: int = 0
    workers: int = 0
    replicas: int = 1

    @property
    def faults_by_kind(self) -> dict[str, int]:
        return dict(sorted(Counter(f.kind for f in self.faults).items()))

    @property
    def faults_by_target(self) -> dict[str, int]:
        return dict(sorted(Counter(f"{f.kind}:{f.target}:{f.detail}".rstrip(":")
                                   for f in self.faults).items()))

    @property
    def recovery(self) -> dict[str, Any]:
        times = sorted(f.recovered_after for f in self.faults if f.recovered_after is not None)
        unanswered = sum(1 for f in self.faults if f.recovered_after is None)
        if not times:
            return {"max": None, "p50": None, "p99": None, "over_bar": unanswered,
                    "never": unanswered}
        return {"max": round(times[-1], 3), "p50": round(times[len(times) // 2], 3),
                "p99": round(times[min(len(times) - 1, int(len(times) * 0.99))], 3),
                "over_bar": unanswered + sum(1 for t in times if t > RECOVERY_BAR),
                "never": unanswered}

    @property
    def passed(self) -> bool:
        return (not self.lost and not self.duplicates and not self.anomalies
                and not self.errors and self.recovery["over_bar"] == 0)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(faults_by_kind=self.faults_by_kind, faults_by_target=self.faults_by_target,
                    recovery=self.recovery, passed=self.passed,
                    lost_count=len(self.lost), duplicate_count=len(self.duplicates),
                    anomaly_count=len(self.anomalies))
        return data

    def dumps(self) -> str:
        return json.dumps(self.to_json(), ensure_ascii=False, indent=2)

    def summary(self) -> str:
        rec = self.recovery
        lines = [
            f"nemesis {self.adapter} seed={self.seed}: {len(self.faults)} faults in "
            f"{self.seconds:.0f} s ({self.workers} worker processes"
            f"{f', {self.replicas} at a time' if self.replicas > 1 else ''}, {self.history_ops} "
            f"history events, checked in {self.check_seconds:.1f} s)",
            "  faults:     " + ", ".join(f"{k} {v}" for k, v in self.faults_by_kind.items()),
            "  targets:    " + ", ".join(f"{k} {v}" for k, v in self.faults_by_target.items()),
            "  operations: " + ", ".join(f"{k} {v}" for k, v in self.operations.items()),
            f"  acknowledged appends: {self.acknowledged_appends}, lost: {len(self.lost)}, "
            f"duplicates: {len(self.duplicates)}, anomalies: {len(self.anomalies)}",
            f"  answered again after a fault: p50 {rec['p50']} s, p99 {rec['p99']} s, "
            f"max {rec['max']} s; over {RECOVERY_BAR:g} s: {rec['over_bar']}",
        ]
        lines += [f"  LOST {x}" for x in self.lost[:5]]
        lines += [f"  DUPLICATE {x}" for x in self.duplicates[:5]]
        lines += [f"  ANOMALY {a}" for a in self.anomalies[:5]]
        lines += [f"  ERROR {e}" for e in self.errors[:5]]
        lines.append("  PASS" if self.passed else "  FAIL")
        return "\n".join(lines)


def merge(generations: Iterable[tuple[Sequence[Op], int | None]]) -> History:
    """One history from the workers' ops; ``kill_ns`` closes what a killed worker had in flight.

    Each item is (ops of one worker, time of its death in monotonic ns or None).
    """
    events: list[tuple[int, int, int, Op]] = []
    for gen, (ops, kill_ns) in enumerate(generations):
        pending: dict[int, Op] = {}
        for i, op in enumerate(ops):
            events.append((op.time, gen, i, op))
            if op.type == "invoke":
                pending[op.process] = op
            else:
                pending.pop(op.process, None)
        end = kill_ns if kill_ns is not None else max((op.time for op in ops), default=0)
        for j, inv in enumerate(pending.values()):
            info = Op(0, inv.process, "info", inv.f, inv.user_id, None, max(end, inv.time),
                      "the worker process was killed with this call in flight")
            events.append((info.time, gen, len(ops) + j, info))
    events.sort(key=lambda e: (e[0], e[1], e[2]))
    return History(Op(n, op.process, op.type, op.f, op.user_id, op.value, op.time, op.error)
                   for n, (_, _, _, op) in enumerate(events))


def account(history: History, live: dict[str, list[list[Any]]]) -> tuple[int, list[str],
                                                                          list[str]]:
    """Acknowledged appends that the final state must hold, the lost ones, and duplicates.

    An acknowledged append must be live or covered by exactly one live summary at
    the end unless a forget of its user may have taken effect after it: any forget
    that had not returned when the append was invoked (it overlaps the append or
    comes later), and any indeterminate one. Two replicas showed why "overlaps"
    counts: a forget invoked first may still take the user's lock second.
    """
    acked: dict[str, list[tuple[str, int]]] = {}  # entry id, index of the append's invoke
    forgets: dict[str, list[tuple[int, int, str]]] = {}
    invokes: dict[int, Op] = {}
    for op in history:
        if op.type == "invoke":
            invokes[op.process] = op
            continue
        inv = invokes.pop(op.process, None)
        if inv is None:
            continue
        if op.f == "append" and op.type == "ok" and op.value is not None:
            acked.setdefault(op.user_id, []).append((op.value.id, inv.index))
        elif op.f == "forget" and op.type != "fail":
            forgets.setdefault(op.user_id, []).append((inv.index, op.index, op.type))
    required: dict[str, set[str]] = {}
    total = 0
    for user, appends in acked.items():
        for entry_id, lo in appends:
            total += 1
            if any(kind == "info" or f_hi > lo for _, f_hi, kind in forgets.get(user, [])):
                continue
            required.setdefault(user, set()).add(entry_id)
    lost: list[str] = []
    duplicates: list[str] = []
    for user in sorted(set(required) | set(live)):
        seen: Counter[str] = Counter()
        for entry_id, _seq, role, covers in live.get(user, []):
            if role == "summary":
                seen.update(covers)
            else:
                seen[entry_id] += 1
        duplicates += [f"{user!r}: {i} accounted for {n} times" for i, n in seen.items() if n > 1]
        lost += [f"{user!r}: {i}" for i in sorted(required.get(user, set())) if not seen[i]]
    return total, lost, duplicates
