"""The keyed checker as it was before it was made near-linear: the reference for
tests/test_checker_keyed_diff.py, kept verbatim but for imports (and this note).

It is O(reads x acknowledged appends), with a breadth-first search per pair: clear
enough to trust, too slow for a nemesis history (~450 s on 143k events). The fast
``nomnesia.suite.core.checker_keyed`` must give exactly the same anomalies.
"""


from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from nomnesia.suite.contract import SUMMARY_ROLE, Guarantee
from nomnesia.suite.core.checker import Anomaly, shrink
from nomnesia.suite.core.history import UNBOUNDED, Call, History, Op, Rec, pair
from nomnesia.suite.core.view import content_key

__all__ = ["check_keyed_reference"]

_PER_KIND = 3
_MINIMISE = 10


def check_keyed_reference(history: History | Sequence[Op], *, recover: bool, compact: bool,
                search_staleness: float = 0.0, minimise: bool = True) -> list[Anomaly]:
    """Every anomaly found, earliest first; ``[]`` when some legal execution explains it all.

    ``recover``/``compact``: whether the store's profile has those methods (a
    summary is legal only where a compaction may have made it).
    """
    ops = list(history)
    calls = pair(ops)
    recovers = [c for c in calls if c.f == "recover" and c.ok]
    by_user: dict[str, list[Call]] = {}
    owners: dict[str, set[str]] = {}  # content key -> users whose (not rejected) appends wrote it
    for c in calls:
        if c.f in ("recover", "open", "close", "consistent"):
            continue
        by_user.setdefault(c.invoke.user_id, []).append(c)
        if c.f == "append" and not c.failed and isinstance(c.arg, tuple):
            owners.setdefault(_key_of(c), set()).add(c.invoke.user_id)
    found: list[Anomaly] = []
    for user, ucalls in by_user.items():
        found += _User(user, ucalls, recovers if recover else None, owners, compact,
                       search_staleness).run()
    found.sort(key=lambda a: (a.ops[-1].index if a.ops else 0, a.guarantee.number))
    if minimise:
        def recheck(part: list[Op]) -> list[Anomaly]:
            return check_keyed_reference(part, recover=recover, compact=compact,
                               search_staleness=search_staleness, minimise=False)

        found = [shrink(a, recheck) if i < _MINIMISE else a for i, a in enumerate(found)]
    return found


def _key_of(append: Call) -> str:
    """The id the keyed view gives an appended content (its ``content_key``)."""
    return content_key(str(append.arg[1]))


def _show(key: str) -> str:
    return repr(key if len(key) <= 40 else key[:37] + "...")


def _ops(*calls: Call | None) -> list[Op]:
    seen: dict[int, Op] = {}
    for c in calls:
        if c is not None:
            for op in c.ops:
                seen[op.index] = op
    return [seen[i] for i in sorted(seen)]


@dataclass
class _Read:
    """One read's own messages (in order), its summaries, and whether it may be partial."""

    call: Call
    messages: list[str]
    summaries: int
    full: bool
    """It returned ``limit`` entries: older ones may exist beyond it."""
    position: dict[str, int] = field(default_factory=dict)


class _User:
    """Every check for one user's calls."""

    def __init__(self, user: str, calls: list[Call], recovers: list[Call] | None,
                 owners: dict[str, set[str]], compact: bool, staleness: float) -> None:
        self.user = user
        self.owners = owners
        self.compact = compact
        self.staleness_ns = int(staleness * 1e9)
        self.found: list[Anomaly] = []
        self._counts: dict[tuple[Guarantee, str], int] = {}
        self.appends = [c for c in calls if c.f == "append"]
        self.compacts = [c for c in calls if c.f == "compact"]
        self.forgets = [c for c in calls if c.f == "forget" and not c.failed]
        self.reads = [c for c in calls if c.f == "read" and c.ok]
        self.searches = [c for c in calls if c.f == "search" and c.ok]
        self.acked: dict[str, Call] = {}
        self.made: dict[str, Call] = {}  # key -> an append that may have written it
        self.rejected: dict[str, Call] = {}
        for c in self.appends:
            key = _key_of(c)
            if c.ok:
                self.acked.setdefault(key, c)
            if c.failed:
                self.rejected.setdefault(key, c)
            else:
                self.made.setdefault(key, c)
        self.taints = self._taints(calls, recovers)
        self.views: dict[int, _Read] = {}
        self.edges: dict[str, dict[str, Call]] = {}  # a -> b -> read that showed a just before b

    def report(self, guarantee: Guarantee, kind: str, message: str, *calls: Call | None) -> None:
        key = (guarantee, kind.split(":", 1)[0])
        n = self._counts.get(key, 0)
        if n < _PER_KIND:
            self._counts[key] = n + 1
            self.found.append(Anomaly(guarantee, message, _ops(*calls), kind))

    @staticmethod
    def _taints(calls: list[Call], recovers: list[Call] | None) -> list[tuple[int, int]]:
        spans = []
        for c in calls:
            end = c.completion
            if end is not None and end.type == "info" and c.f in ("append", "compact", "forget"):
                if recovers is None:  # no recover(): whole again once the call has returned
                    spans.append((c.lo, end.index))
                else:
                    after = [r.hi for r in recovers if r.lo > end.index]
                    spans.append((c.lo, min(after, default=UNBOUNDED)))
        return spans

    def tainted(self, c: Call) -> bool:
        return any(lo < c.hi and c.lo < hi for lo, hi in self.taints)

    def forgotten_between(self, lo: int, hi: int) -> bool:
        """Whether a forget may have taken effect after ``lo`` and before ``hi``."""
        return any(f.lo < hi and f.hi > lo for f in self.forgets)

    def compacted_before(self, hi: int) -> bool:
        return self.compact and any(k.lo < hi for k in self.compacts)

    # -- the checks -----------------------------------------------------------------------

    def run(self) -> list[Anomaly]:
        for c in self.reads + self.searches:
            self.check_read(c)
        clean = [self.views[c.lo] for c in self.reads if c.lo in self.views]
        self.check_order(clean)
        self.check_durability(clean)
        self.check_forget()
        self.check_searches()
        return self.found

    def check_read(self, c: Call) -> None:
        """Isolation for every read; size, duplicates, shape and phantoms for clean ones."""
        entries: tuple[Rec, ...] = c.value or ()
        is_read = c.f == "read"
        own: list[Rec] = []
        for r in entries:
            others = self.owners.get(r.id, set()) - {self.user}
            if r.role != SUMMARY_ROLE and r.id not in self.made and others:
                self.report(Guarantee.ISOLATION, f"foreign:{c.lo}",
                            f"{c} for {self.user!r} returned {_show(r.id)}, written for user "
                            f"{sorted(others)[0]!r}", c)
            elif r.user_id != self.user:
                self.report(Guarantee.ISOLATION, f"foreign:{c.lo}",
                            f"{c} for {self.user!r} returned {_show(r.id)} of user "
                            f"{r.user_id!r}", c)
            else:
                own.append(r)
        if self.tainted(c):
            return
        bound = c.arg if is_read else c.arg[1]
        g = Guarantee.READ_YOUR_WRITES if is_read else Guarantee.SEARCH
        if isinstance(bound, int) and len(entries) > bound:
            self.report(g, f"too-many:{c.lo}",
                        f"{c} returned {len(entries)} entries, more than {bound}", c)
        messages: list[str] = []
        summaries = 0
        for r in own:
            if r.role == SUMMARY_ROLE:
                summaries += 1
                if messages and is_read:
                    self.report(Guarantee.ATOMIC_COMPACTION, f"shape:{c.lo}",
                                f"{c} shows a summary after a message: summaries come first",
                                c)
                continue
            if r.id in messages:
                self.report(Guarantee.EXACTLY_ONCE if is_read else Guarantee.SEARCH,
                            f"duplicate:{c.lo}", f"{c} returned {_show(r.id)} twice", c,
                            self.made.get(r.id))
                continue
            if r.id in self.rejected and r.id not in self.made:
                self.report(Guarantee.INPUTS, f"rejected:{r.id}",
                            f"{c} returned {_show(r.id)}, whose {self.rejected[r.id]} was "
                            "rejected: a rejected call must write nothing", self.rejected[r.id], c)
            messages.append(r.id)
        if summaries and not self.compacted_before(c.hi):
            why = "no compaction ran before it" if self.compact else \
                "the store has no compact, so it cannot be a summary"
            self.report(Guarantee.EXACTLY_ONCE if is_read else Guarantee.SEARCH,
                        f"phantom:{c.lo}",
                        f"{c} returned {summaries} entries that no append wrote ({why})", c)
        if is_read:
            full = isinstance(bound, int) and len(entries) >= bound
            view = _Read(c, messages, summaries, full)
            view.position = {m: n for n, m in enumerate(messages)}
            self.views[c.lo] = view

    # -- G5 -------------------------------------------------------------------------------

    def reaches(self, a: str, b: str) -> Call | None:
        """A read on a path that shows ``a`` before ``b`` (None: no read orders them so)."""
        if a == b:
            return None
        seen = {a}
        todo: deque[tuple[str, Call | None]] = deque([(a, None)])
        while todo:
            node, witness = todo.popleft()
            for nxt, read in self.edges.get(node, {}).items():
                if nxt in seen:
                    continue
                w = witness or read
                if nxt == b:
                    return w
                seen.add(nxt)
                todo.append((nxt, w))
        return None

    def check_order(self, clean: list[_Read]) -> None:
        """Every read agrees on one order; none puts a message before an older one."""
        for view in clean:
            c = view.call
            for a, b in pairwise(view.messages):
                if b in self.edges.get(a, {}):
                    continue
                other = self.reaches(b, a)
                if other is not None and not self.forgotten_between(min(other.lo, c.lo),
                                                                     max(other.hi, c.hi)):
                    self.report(Guarantee.ORDER, f"flip:{c.lo}",
                                f"{other} and {c} order {_show(a)} and {_show(b)} "
                                "differently: every read agrees on one order", other, c)
                    continue
                self.edges.setdefault(a, {})[b] = c
            # Real time: a message after one whose append began after its own returned.
            latest: tuple[int, str] | None = None  # the latest-invoked append shown so far
            for m in view.messages:
                acked = self.acked.get(m)
                if acked is not None and latest is not None and acked.hi < latest[0]:
                    later = self.made[latest[1]]
                    self.report(Guarantee.ORDER, f"real-time:{c.lo}",
                                f"{c} shows {_show(latest[1])} before {_show(m)}, but {acked} "
                                f"returned before {later} began: the order must follow real "
                                "time", acked, later, c)
                    break
                w = self.made.get(m)
                if w is not None and (latest is None or w.lo > latest[0]):
                    latest = (w.lo, m)

    def newer(self, first: str, key: str) -> bool:
        """Whether ``key`` is proven newer than ``first`` (real time, or a read's order)."""
        a, b = self.acked.get(first), self.made.get(key)
        if a is not None and b is not None and a.hi < b.lo:
            return True
        return self.reaches(first, key) is not None

    # -- G1, G2, G3, G7 --------------------------------------------------------------------

    def check_durability(self, clean: list[_Read]) -> None:
        """Whatever existed before a read began is in it, or may be left out of it."""
        facts: list[tuple[int, str, Call]] = [(c.hi, k, c) for k, c in self.acked.items()]
        for view in clean:
            facts.extend((view.call.hi, m, view.call) for m in view.messages)
        facts.sort(key=lambda f: f[0])
        covered_at: dict[str, tuple[int, Call]] = {}
        required: dict[str, Call] = {}  # key -> its earliest fact's call (keys never repeat)
        lost = i = 0
        for view in clean:  # in invoke order
            c = view.call
            while i < len(facts) and facts[i][0] < c.lo:
                required.setdefault(facts[i][1], facts[i][2])
                i += 1
            first = view.messages[0] if view.messages else None
            for key, witness in required.items():
                if key in view.position or self.forgotten_between(witness.lo, c.hi):
                    continue
                newer = first is not None and self.newer(first, key)
                if not newer and (view.summaries or view.full):
                    if view.summaries and key not in covered_at:
                        covered_at[key] = (c.hi, c)
                    continue
                lost += 1
                if lost <= _PER_KIND:
                    self.missing(key, witness, view, clean)
        for view in clean:
            c = view.call
            for key in view.messages:
                hit = covered_at.get(key)
                if hit is not None and hit[0] < c.lo and not self.forgotten_between(
                        hit[1].lo, c.hi):
                    self.report(Guarantee.ATOMIC_COMPACTION, f"uncovered:{key}",
                                f"{hit[1]} left out {_show(key)} as covered by a summary "
                                f"(it is older than the oldest live message), then {c} shows it "
                                "live again: accounted for twice", hit[1], c)

    def missing(self, key: str, witness: Call, view: _Read, clean: list[_Read]) -> None:
        """Name a missed message's guarantee: a read that missed it (G3), a compaction that
        showed a torn view or lost it (G7), or a loss with no compaction to blame (G1)."""
        c = view.call
        how = "was acknowledged" if witness.f == "append" else f"was returned by {witness}"
        during = next((k for k in self.compacts if k.lo < c.hi and k.hi > c.lo), None)
        later = next((v.call for v in clean if v.call.lo > c.hi and key in v.position), None)
        if later is not None:
            if during is not None:
                self.report(Guarantee.ATOMIC_COMPACTION, f"torn:{key}",
                            f"{c} misses {_show(key)}, which {how} before it began, while "
                            f"{during} runs (it reappears in {later}): a read sees the whole "
                            "old view or the whole new view", witness, during, c)
            else:
                self.report(Guarantee.READ_YOUR_WRITES, f"missing:{key}",
                            f"{c} misses {_show(key)}, which {how} before it began (it "
                            f"reappears in {later})", witness, c)
            return
        culprit = next((k for k in self.compacts if k.lo < c.hi and k.hi > witness.lo), None)
        if culprit is not None:
            self.report(Guarantee.ATOMIC_COMPACTION, f"lost:{key}",
                        f"{_show(key)} {how}, then {culprit} ran, and {c} neither returns it "
                        "nor may leave it out (it is not older than the oldest live message): "
                        "the compaction lost it", witness, culprit, c)
            return
        where = "newer than the oldest message it returns" if view.messages else "missing"
        self.report(Guarantee.DURABILITY, f"missing:{key}",
                    f"{_show(key)} {how}, then {c} does not return it, though it is {where}"
                    + ("" if view.summaries or view.full else
                       " and the read is whole (no summary, fewer entries than its limit)"),
                    witness, c)

    # -- G8, G4 ----------------------------------------------------------------------------

    def check_forget(self) -> None:
        """After forget returned, nothing written before it began comes back (G8)."""
        done = [f for f in self.forgets if f.ok]
        if not done:
            return
        for c in self.reads + self.searches:
            if self.tainted(c):
                continue
            for r in c.value or ():
                a = self.made.get(r.id)
                if a is None or r.role == SUMMARY_ROLE:
                    continue
                for f in done:  # contents never repeat, so no re-append can explain it
                    if f.hi < c.lo and a.hi < f.lo:
                        self.report(Guarantee.FORGET, f"forgotten:{r.id}",
                                    f"{c} returns {_show(r.id)}, written before {f} began",
                                    a, f, c)
                        break

    def check_searches(self) -> None:
        """G4: the exact content of a live, acknowledged message is found once staleness passed."""
        for c in self.searches:
            if self.tainted(c):
                continue
            query, k = c.arg
            key = _key_content(query)
            a = self.acked.get(key)
            if a is None or a.completion is None or not isinstance(k, int) or k < 2:
                continue
            if (a.completion.time + self.staleness_ns >= c.invoke.time
                    or self.forgotten_between(a.lo, c.hi) or self.compacted_before(c.hi)):
                continue
            if all(r.id != key for r in c.value or ()):
                lag = (c.invoke.time - a.completion.time) / 1e9
                self.report(Guarantee.SEARCH, f"search-miss:{c.lo}",
                            f"{c} for the exact content of {_show(key)} misses it, {lag:.3f} s "
                            f"after {a} returned (search_staleness "
                            f"{self.staleness_ns / 1e9:g} s)", a, c)


def _key_content(query: object) -> str:
    return content_key(query) if isinstance(query, str) else ""
