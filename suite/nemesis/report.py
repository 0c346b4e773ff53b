"""What a nemesis run found: merged history, losses, duplicates, anomalies, recovery times.

The workers' histories are merged on the shared monotonic clock (one machine,
so ``CLOCK_MONOTONIC`` orders events across processes). An op in flight when
its worker was killed gets an ``info`` completion at the moment of the kill:
it may or may not have taken effect, which is all a crash lets anyone know.

Availability per fault kind (:func:`attribute`) is measured on the same clock.
Each fault owns a *window*: from the moment it began until the next fault began
(the last one's until the load stopped). That window holds the fault, the
store's recovery, and the steady load the runner waits for before the next
fault, so every call the workers made during the run belongs to exactly one
window (or to the baseline before the first fault). A call counts where it
*ended*: one in flight when a fault began met that fault (a killed worker's
calls end at the kill), and the calls cut short when the load stopped count
nowhere. It was *answered* when it completed ``ok`` or
``fail`` (a ``fail`` is a refused input, ``ValueError``/``TypeError``: the store
answered, as a conflicting retry must be answered), and unanswered when it
completed ``info`` (an error, a timeout, a killed worker). Availability is
reported, never judged: the pass criterion stays nothing lost, nothing twice,
no anomaly.
"""

from __future__ import annotations

import bisect
import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..core.history import History, Op, Rec, pair
from ..core.view import content_key

__all__ = ["LATENCY_POINTS", "FaultRecord", "NemesisReport", "account", "attribute",
           "latency_series", "merge", "percentiles"]

RECOVERY_BAR = 5.0
"""Seconds within which the store must answer again after a fault ends (issue 8)."""
LATENCY_POINTS = 4000
"""Most calls :func:`latency_series` keeps: enough to show every fault's spike, few enough
that the JSON report stays a few hundred KB after a 200-fault run."""


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
    started_ns: int = 0
    """When the fault began on the monotonic clock the histories use (``time.monotonic_ns``):
    where its window starts (:func:`attribute`)."""
    figures: dict[str, float] = field(default_factory=dict)
    """What the fault's injector measured (a failover: ``promoted_s``, ``rejoined_s``)."""
    window: float = 0.0
    """Seconds from this fault's start to the next one's (or to the end of the load)."""
    attempted: int = 0
    """Calls that ended in the window."""
    answered: int = 0
    """Of those, the ones that completed ``ok`` or ``fail`` (not ``info``)."""
    appends_attempted: int = 0
    appends_answered: int = 0
    """Appends that ended in the window, and those answered (``ok`` or a refused ``fail``)."""
    first_write_after: float | None = None
    """Seconds from the fault's start to the acknowledgement of the first append invoked at
    or after it, within its window; None if no append was acknowledged in the window."""
    append_answer_s: list[float] = field(default_factory=list)
    """Seconds each answered append of the window took, invoke to answer: how long a
    store that waits a fault out (a failover) keeps its callers waiting. Summed up per
    kind in :attr:`NemesisReport.availability` (``append_answer``), left out of the JSON."""


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
    baseline: dict[str, int] = field(default_factory=dict)
    """Calls that ended before the first fault (the reference): ``attempted``, ``answered``,
    ``appends_attempted``, ``appends_answered``."""
    options: dict[str, Any] = field(default_factory=dict)
    """How the run was set up beyond adapter and kinds (``engine_map``, ``lag``)."""
    latency: list[list[Any]] = field(default_factory=list)
    """Completed calls as ``[seconds since the run started, latency ms, outcome, f]``, at
    most :data:`LATENCY_POINTS` (:func:`latency_series`): what the HTML report plots
    against the fault windows. Optional in the JSON (older reports lack it)."""

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
    def availability(self) -> dict[str, dict[str, Any]]:
        """Per fault kind: calls answered / made in the kind's windows, appends answered /
        made, time to the first acknowledged append (p50, max), and the p50 / max of every
        figure its injector measured (a failover's ``promoted_s``...)."""
        return _availability(self.faults, lambda f: f.kind)

    @property
    def failover_availability(self) -> dict[str, dict[str, Any]]:
        """:attr:`availability` of failovers per engine and way (``failover:postgres-ha``,
        ``failover:redis-sentinel:freeze``...): a PostgreSQL pair and a Sentinel group fail
        over in very different times, and a frozen primary comes back (a split brain)."""
        return _availability([f for f in self.faults if f.kind == "failover"],
                             lambda f: f"failover:{f.target}" + (
                                 ":freeze" if f.detail.split("+")[0] == "freeze" else ""))

    @property
    def passed(self) -> bool:
        return (not self.lost and not self.duplicates and not self.anomalies
                and not self.errors and self.recovery["over_bar"] == 0)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for fault in data["faults"]:  # summed up in availability: the JSON stays small
            del fault["append_answer_s"]
        data.update(faults_by_kind=self.faults_by_kind, faults_by_target=self.faults_by_target,
                    recovery=self.recovery, availability=self.availability,
                    failover_availability=self.failover_availability,
                    passed=self.passed,
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
        lines += self._availability_lines()
        lines += [f"  LOST {x}" for x in self.lost[:5]]
        lines += [f"  DUPLICATE {x}" for x in self.duplicates[:5]]
        lines += [f"  ANOMALY {a}" for a in self.anomalies[:5]]
        lines += [f"  ERROR {e}" for e in self.errors[:5]]
        lines.append("  PASS" if self.passed else "  FAIL")
        return "\n".join(lines)

    def _availability_lines(self) -> list[str]:
        """The availability table of :meth:`summary` (reported, not judged)."""
        if not self.faults:
            return []
        base = {key: self.baseline.get(key, 0) for key in
                ("attempted", "answered", "appends_attempted", "appends_answered")}
        lines = ["  availability (calls answered / made, from a fault's start to the next "
                 "fault's; not judged):",
                 f"    before faults: calls {base['answered']}/{base['attempted']} "
                 f"({_percent(_ratio(base['answered'], base['attempted']))}), appends "
                 f"{base['appends_answered']}/{base['appends_attempted']} "
                 f"({_percent(_ratio(base['appends_answered'], base['appends_attempted']))})"]
        rows = dict(self.availability)
        by_engine = self.failover_availability
        if len(by_engine) > 1:  # each engine's failovers under the kind's row
            rows = {name: row for kind, kind_row in rows.items() for name, row in
                    [(kind, kind_row), *(by_engine.items() if kind == "failover" else [])]}
        for kind, row in rows.items():
            first = row["first_write"]
            label = f"  {kind.partition(':')[2]}" if ":" in kind else kind
            text = (f"    {label:<9} {row['faults']:>3} faults, {row['window_s']:.0f} s: "
                    f"calls {row['answered']}/{row['attempted']} "
                    f"({_percent(row['availability'])}), appends {row['appends_answered']}/"
                    f"{row['appends_attempted']} ({_percent(row['write_availability'])}), "
                    f"answered in p50 {row['append_answer']['p50']} s, max "
                    f"{row['append_answer']['max']} s; "
                    f"first write p50 {first['p50']} s, max {first['max']} s")
            if first["none"]:
                text += f", none in {first['none']} window(s)"
            for name in ("promoted_s", "rejoined_s"):
                if name in row:
                    text += f"; {name[:-2]} p50 {row[name]['p50']} s, max {row[name]['max']} s"
            lines.append(text)
        return lines


def _availability(faults: Sequence[FaultRecord],
                  key: Callable[[FaultRecord], str]) -> dict[str, dict[str, Any]]:
    """The figures of :attr:`NemesisReport.availability`, for ``faults`` grouped by ``key``."""
    groups: dict[str, list[FaultRecord]] = {}
    for fault in faults:
        groups.setdefault(key(fault), []).append(fault)
    result: dict[str, dict[str, Any]] = {}
    for name, group in sorted(groups.items()):
        attempted = sum(f.attempted for f in group)
        answered = sum(f.answered for f in group)
        writes = sum(f.appends_attempted for f in group)
        acked = sum(f.appends_answered for f in group)
        firsts = [f.first_write_after for f in group if f.first_write_after is not None]
        entry: dict[str, Any] = {
            "faults": len(group), "window_s": round(sum(f.window for f in group), 3),
            "attempted": attempted, "answered": answered,
            "availability": _ratio(answered, attempted),
            "appends_attempted": writes, "appends_answered": acked,
            "write_availability": _ratio(acked, writes),
            "append_answer": percentiles(t for f in group for t in f.append_answer_s),
            "first_write": {**percentiles(firsts),
                            "none": sum(1 for f in group if f.first_write_after is None)},
        }
        for figure in sorted({figure for f in group for figure in f.figures}):
            entry[figure] = percentiles([f.figures[figure] for f in group
                                         if figure in f.figures])
        result[name] = entry
    return result


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _percent(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio * 100:.1f}%"


def percentiles(values: Iterable[float]) -> dict[str, float | None]:
    """p50 and max of ``values`` (rounded to ms), as :attr:`NemesisReport.recovery` takes
    them: the p50 is the upper median (``sorted[n // 2]``); None for no values."""
    ordered = sorted(values)
    if not ordered:
        return {"p50": None, "max": None}
    return {"p50": round(ordered[len(ordered) // 2], 3), "max": round(ordered[-1], 3)}


def attribute(history: Iterable[Op], faults: Sequence[FaultRecord], end_ns: int) -> dict[str, int]:
    """Give each fault the calls that ended in its window; return the baseline's counts.

    A fault's window runs from its ``started_ns`` to the next fault's (the last one's to
    ``end_ns``, when the runner stopped the load): the fault, the recovery after it and the
    load until the next fault. Each call belongs to the window in which it *ended*, so
    a call in flight when a fault began is that fault's (by its invoke time, the calls a
    crash killed would count against the load before it); calls that ended before the
    first fault are the baseline, those that ended at or after ``end_ns`` (cut short by
    the stop, or the final worker's) belong to none. Sets each fault's ``window``,
    ``attempted``, ``answered`` (``ok`` or ``fail``), ``appends_attempted``,
    ``appends_answered``, ``append_answer_s`` (how long each answered append took) and
    ``first_write_after`` (from its start to the acknowledgement, ``ok``, of the first
    append invoked at or after it, in its window).
    """
    order = sorted(range(len(faults)), key=lambda i: faults[i].started_ns)
    starts = [faults[i].started_ns for i in order]
    for rank, i in enumerate(order):
        fault = faults[i]
        until = starts[rank + 1] if rank + 1 < len(order) else max(end_ns, fault.started_ns)
        fault.window = round((until - fault.started_ns) / 1e9, 3)
        fault.attempted = fault.answered = 0
        fault.appends_attempted = fault.appends_answered = 0
        fault.first_write_after = None
        fault.append_answer_s = []
    baseline = dict.fromkeys(("attempted", "answered", "appends_attempted", "appends_answered"),
                             0)
    # (completion, invoke) in the order calls ended: answer times are listed that way.
    ended = sorted(((c.completion, c.invoke) for c in pair(history) if c.completion is not None),
                   key=lambda done: done[0].index)
    for op, inv in ended:
        if op.time >= end_ns:
            continue
        rank = bisect.bisect_right(starts, op.time) - 1
        answered = op.type in ("ok", "fail")
        if rank < 0:
            baseline["attempted"] += 1
            baseline["answered"] += answered
            if op.f == "append":
                baseline["appends_attempted"] += 1
                baseline["appends_answered"] += answered
            continue
        fault = faults[order[rank]]
        fault.attempted += 1
        fault.answered += answered
        if op.f == "append":
            fault.appends_attempted += 1
            fault.appends_answered += answered
            if answered:
                fault.append_answer_s.append(round((op.time - inv.time) / 1e9, 4))
            if op.type == "ok" and inv.time >= fault.started_ns:
                took = round((op.time - fault.started_ns) / 1e9, 3)
                if fault.first_write_after is None or took < fault.first_write_after:
                    fault.first_write_after = took
    return baseline


def latency_series(history: Iterable[Op], t0_ns: int, limit: int = LATENCY_POINTS
                   ) -> list[list[Any]]:
    """Each completed call as ``[s since t0, latency ms, outcome, f]``, at most ``limit``.

    A call is placed at its *completion*, as :func:`attribute` counts it, so a call that
    timed out against a fault shows inside that fault's window. To bound the report, every
    ``fail`` and ``info`` call is kept (they are what a fault causes; if they alone exceed
    ``limit`` they are sampled evenly too) and the ``ok`` calls are sampled evenly in time
    order to fill the rest, which keeps the shape of the steady load between faults.
    """
    rows: list[list[Any]] = sorted(
        ([round((end.time - t0_ns) / 1e9, 3), round(max(end.time - c.invoke.time, 0) / 1e6, 3),
          end.type, c.f] for c in pair(history) if (end := c.completion) is not None),
        key=lambda row: float(row[0]))
    if len(rows) <= limit:
        return rows
    bad = [r for r in rows if r[2] != "ok"]
    good = [r for r in rows if r[2] == "ok"]
    bad = _evenly(bad, limit)
    kept = bad + _evenly(good, limit - len(bad))
    kept.sort(key=lambda r: r[0])
    return kept


def _evenly(rows: list[list[Any]], n: int) -> list[list[Any]]:
    """``n`` of ``rows`` spread evenly over them (all of them if there are no more)."""
    if n <= 0:
        return []
    if len(rows) <= n:
        return rows
    return [rows[i * len(rows) // n] for i in range(n)]


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


def relabel_keyed(history: History, live: dict[str, list[list[Any]]]
                  ) -> tuple[History, dict[str, list[list[Any]]]]:
    """Entries one worker could not know as the suite's, named as the suite's again.

    A keyed view (``view.KeyedView``) knows an entry by its content and calls any
    content *it* did not append a summary. In the nemesis each worker process has its
    own view, so what a crashed predecessor (or a concurrent replica) appended reads as
    ``summary#...`` in its successor. Every worker's appends are in the merged history,
    so here each such entry whose content some worker appended becomes that message
    again, before the checker reads it.
    """

    roles: dict[str, str] = {}
    for op in history:
        if op.type == "invoke" and op.f == "append" and isinstance(op.value, (tuple, list)):
            role, content = op.value[0], op.value[1]
            if isinstance(role, str) and isinstance(content, str):
                roles[content_key(content)] = role

    def fixed(entry_id: str, role: str) -> tuple[str, str]:
        if entry_id.startswith("summary#") and entry_id[len("summary#"):] in roles:
            key = entry_id[len("summary#"):]
            return key, roles[key]
        return entry_id, role

    def entries(recs: Iterable[Rec]) -> tuple[Rec, ...]:
        return tuple(r._replace(id=new[0], role=new[1]) for r in recs
                     for new in (fixed(r.id, r.role),))

    ops = [Op(op.index, op.process, op.type, op.f, op.user_id,
              entries(op.value) if op.type == "ok" and op.f in ("read", "search")
              and op.value is not None else op.value, op.time, op.error) for op in history]
    relabeled: dict[str, list[list[Any]]] = {}
    for user, rows in live.items():
        relabeled[user] = []
        for entry_id, seq, role, covers in rows:
            new_id, new_role = fixed(entry_id, role)
            relabeled[user].append([new_id, seq, new_role, covers])
    return History(ops), relabeled


def account(history: History, live: dict[str, list[list[Any]]], *, keyed: bool = False
            ) -> tuple[int, list[str], list[str]]:
    """Acknowledged appends that the final state must hold, the lost ones, and duplicates.

    ``keyed``: a smaller profile, whose entries are known by content and whose summaries
    show no covers; where a summary is live, what it may cover is the checker's to judge
    (SPEC "Profiles"), so a missing append counts as lost only for a user with none.

    An acknowledged append must be live or covered by exactly one live summary at
    the end unless a forget of its user may have taken effect after it: any forget
    that had not returned when the append was invoked (it overlaps the append or
    comes later), and any indeterminate one. Two replicas showed why "overlaps"
    counts: a forget invoked first may still take the user's lock second.
    """
    acked: dict[str, list[tuple[str, int]]] = {}  # entry id, index of the append's invoke
    forgets: dict[str, list[tuple[int, int, str]]] = {}
    for call in pair(history):
        op = call.completion
        if op is None:
            continue
        if op.f == "append" and op.type == "ok" and op.value is not None:
            acked.setdefault(op.user_id, []).append((op.value.id, call.lo))
        elif op.f == "forget" and op.type != "fail":
            forgets.setdefault(op.user_id, []).append((call.lo, op.index, op.type))
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
        if keyed and any(role == "summary" for _, _, role, _ in live.get(user, [])):
            continue
        lost += [f"{user!r}: {i}" for i in sorted(required.get(user, set())) if not seen[i]]
    return total, lost, duplicates
