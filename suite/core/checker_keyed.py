"""The history checker for stores without entry ids: SPEC.md's "Profiles" reading, in code.

A store of the ``seed``, ``history`` or ``memory`` profile returns entries the
suite can know only by their content (``view.KeyedView`` gives each its content
as its id, and calls an entry the suite never wrote a summary). Without ids,
seqs or covers, SPEC.md reads guarantees 1, 2 and 7 this way: *every read
returns zero or more summaries, then a contiguous run of acknowledged messages
in the order all reads agree on, none twice, ending with the newest message
that guarantee 3 says the read must see; only messages older than the oldest
live message may have been covered, and only by a compaction.*

Like ``checker``, it reasons only from what the history proves and resolves
every doubt in the store's favour: a message is *newer* than another only when
real time says so (the other's append returned before its append began) or a
read showed them in that order; a read with a summary or with exactly
``limit`` entries may leave out anything not proven newer than its oldest
message. What it finds:

- G9: a read for one user returns a content written for another;
- G2: a message twice in one read; an entry no append wrote, where no
  compaction could have made it (a phantom); a covered message live again;
- G7: a summary after a message; a read that misses a message while a
  compaction runs; an append that raced a compaction and was lost;
- G5: two reads that order two messages differently, or a read that puts a
  message before one whose append returned before it began;
- G1 and G3: a message proven to exist before a read began (acknowledged, or
  returned by an earlier read) that the read neither returns nor may leave out;
- G8: a read or search after ``forget`` returned that shows what was written
  before it began; G4 for searches (at most ``k``, only live entries, the
  exact content found once ``search_staleness`` passed).

Interrupted writes (an append, compaction or forget that raised) are
indeterminate, and reads that overlap one are checked for isolation only, until
the next ``recover()``; a store without ``recover`` must be whole again as soon
as the interrupted call has returned (SPEC G10 for such profiles).

It runs in about linear time (a 150k-event history in seconds, where a check per
read and acknowledged append took minutes: tests/bench_checker.py ``--keyed``):
time intervals are answered from sorted prefix maxima, the order graph's strongly
connected components are found once (only an edge inside one can close a cycle),
and a read is compared with what it must show by counting, or by walking only
the part of the order graph that can hold a message it missed.
tests/keyed_reference.py keeps the straightforward algorithm, and
tests/test_checker_keyed_diff.py holds the two to the same anomalies.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate, pairwise

from ..contract import SUMMARY_ROLE, Guarantee
from .checker_common import PER_KIND, Anomaly, Reporter, Spans, ranked, taints
from .checker_graph import Reach, components, first_witness
from .history import UNBOUNDED, Call, History, Op, Rec, pair
from .view import content_key

__all__ = ["check_keyed"]


def check_keyed(history: History | Sequence[Op], *, recover: bool, compact: bool,
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

    def recheck(part: list[Op]) -> list[Anomaly]:
        return check_keyed(part, recover=recover, compact=compact,
                           search_staleness=search_staleness, minimise=False)

    return ranked(found, recheck, minimise)


def _key_of(append: Call) -> str:
    """The id the keyed view gives an appended content (its ``content_key``)."""
    return content_key(str(append.arg[1]))


def _show(key: str) -> str:
    return repr(key if len(key) <= 40 else key[:37] + "...")


@dataclass
class _Read:
    """One read's own messages (in order), its summaries, and whether it may be partial."""

    call: Call
    messages: list[str]
    summaries: int
    full: bool
    """It returned ``limit`` entries: older ones may exist beyond it."""
    position: dict[str, int] = field(default_factory=dict)


class _User(Reporter):
    """Every check for one user's calls."""

    def __init__(self, user: str, calls: list[Call], recovers: list[Call] | None,
                 owners: dict[str, set[str]], compact: bool, staleness: float) -> None:
        super().__init__()
        self.user = user
        self.owners = owners
        self.compact = compact
        self.staleness_ns = int(staleness * 1e9)
        self.appends = [c for c in calls if c.f == "append"]
        self.compacts = [c for c in calls if c.f == "compact"]
        self.forgets = [c for c in calls if c.f == "forget" and not c.failed]
        self.reads = [c for c in calls if c.f == "read" and c.ok]
        self.searches = [c for c in calls if c.f == "search" and c.ok]
        self.forget_spans = Spans((f.lo, f.hi) for f in self.forgets)
        self._first_compact = min((k.lo for k in self.compacts), default=UNBOUNDED)
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
        self.taints = taints(calls, recovers)
        self.views: dict[int, _Read] = {}
        self.edges: dict[str, dict[str, Call]] = {}  # a -> b -> read that showed a just before b
        self.order = Reach({})

    def forget_end(self, hi: int) -> int:
        """The latest end of a forget invoked before ``hi`` (-1: none): a write whose call
        began before it may have been forgotten by ``hi``."""
        return self.forget_spans.end_before(hi)

    def forgotten_between(self, lo: int, hi: int) -> bool:
        """Whether a forget may have taken effect after ``lo`` and before ``hi``."""
        return self.forget_spans.overlaps(lo, hi)

    def compacted_before(self, hi: int) -> bool:
        return self.compact and self._first_compact < hi

    # -- the checks -----------------------------------------------------------------------

    def run(self) -> list[Anomaly]:
        for c in self.reads + self.searches:
            self.check_read(c)
        clean = [self.views[c.lo] for c in self.reads if c.lo in self.views]
        self.check_order(clean)
        self.order = Reach(self.edges)
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
        if self.taints.touch(c):
            return
        bound = c.arg if is_read else c.arg[1]
        g = Guarantee.READ_YOUR_WRITES if is_read else Guarantee.SEARCH
        if isinstance(bound, int) and len(entries) > bound:
            self.report(g, f"too-many:{c.lo}",
                        f"{c} returned {len(entries)} entries, more than {bound}", c)
        messages: list[str] = []
        position: dict[str, int] = {}
        summaries = 0
        for r in own:
            if r.role == SUMMARY_ROLE:
                summaries += 1
                if messages and is_read:
                    self.report(Guarantee.ATOMIC_COMPACTION, f"shape:{c.lo}",
                                f"{c} shows a summary after a message: summaries come first",
                                c)
                continue
            if r.id in position:
                self.report(Guarantee.EXACTLY_ONCE if is_read else Guarantee.SEARCH,
                            f"duplicate:{c.lo}", f"{c} returned {_show(r.id)} twice", c,
                            self.made.get(r.id))
                continue
            if r.id in self.rejected and r.id not in self.made:
                self.report(Guarantee.INPUTS, f"rejected:{r.id}",
                            f"{c} returned {_show(r.id)}, whose {self.rejected[r.id]} was "
                            "rejected: a rejected call must write nothing", self.rejected[r.id], c)
            position[r.id] = len(messages)
            messages.append(r.id)
        if summaries and not self.compacted_before(c.hi):
            why = "no compaction ran before it" if self.compact else \
                "the store has no compact, so it cannot be a summary"
            self.report(Guarantee.EXACTLY_ONCE if is_read else Guarantee.SEARCH,
                        f"phantom:{c.lo}",
                        f"{c} returned {summaries} entries that no append wrote ({why})", c)
        if is_read:
            full = isinstance(bound, int) and len(entries) >= bound
            self.views[c.lo] = _Read(c, messages, summaries, full, position)

    # -- G5 -------------------------------------------------------------------------------

    def check_order(self, clean: list[_Read]) -> None:
        """Every read agrees on one order; none puts a message before an older one.

        An edge ``a -> b`` can be refused (a flip) only if ``b`` already reaches ``a``,
        which needs a cycle through ``a -> b`` in the graph of every pair any read shows:
        so only pairs inside one of that graph's strongly connected components are
        searched, and there only among the component's nodes."""
        every: dict[str, dict[str, None]] = {}
        for view in clean:
            every.update((m, every.get(m, {})) for m in view.messages)
            for a, b in pairwise(view.messages):
                every[a][b] = None
        component = components(every)
        for view in clean:
            c = view.call
            for a, b in pairwise(view.messages):
                if b in self.edges.get(a, {}):
                    continue
                if component[a] == component[b]:
                    other = first_witness(self.edges, b, a, component)
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
        return self.order.reaches(first, key)

    # -- G1, G2, G3, G7 --------------------------------------------------------------------

    def check_durability(self, clean: list[_Read]) -> None:
        """Whatever existed before a read began is in it, or may be left out of it.

        A key is *required* by a read once a fact (its acknowledgement, or an earlier read
        that returned it) ended before the read began; a required key the read leaves out
        is *lost* unless a forget may have taken it, or the read is partial (a summary, or
        ``limit`` entries) and the key is not proven newer than the read's oldest message.
        Lost keys are found per read without visiting every required key: a whole read
        must show all of them (a count tells), a partial one only those newer than its
        first message, which are newer in real time (a sorted sweep) or lie below one of
        its messages in the order graph (a walk that enters only parts holding a key
        required in time). Only the first few lost keys are reported, in the order the
        keys became required; after that, lost keys change nothing."""
        facts: list[tuple[int, str, Call]] = [(c.hi, k, c) for k, c in self.acked.items()]
        for view in clean:
            facts.extend((view.call.hi, m, view.call) for m in view.messages)
        facts.sort(key=lambda f: f[0])
        fact_hi: dict[str, int] = {}  # key -> the end of its earliest fact
        for hi, k, _ in facts:
            fact_hi.setdefault(k, hi)
        self.order.index_facts(fact_hi)
        required: dict[str, Call] = {}  # key -> its earliest fact's call (keys never repeat)
        rank: dict[str, int] = {}  # key -> when it became required
        w_los: list[int] = []  # sorted: the witnesses' invokes (forgotten: one before F)
        made_los: list[int] = []  # sorted, with made_keys: required keys by their append
        made_keys: list[str] = []
        lost = i = 0
        for view in clean:  # in invoke order
            c = view.call
            while i < len(facts) and facts[i][0] < c.lo:
                _, key, witness = facts[i]
                i += 1
                if key in required:
                    continue
                rank[key] = len(required)
                required[key] = witness
                insort(w_los, witness.lo)
                append = self.made.get(key)
                if append is not None:
                    j = bisect_right(made_los, append.lo)
                    made_los.insert(j, append.lo)
                    made_keys.insert(j, key)
            if lost >= PER_KIND:
                continue  # only the first few lost keys are reported
            gone = self.forget_end(c.hi)  # a witness invoked before it may be forgotten
            if view.summaries or view.full:
                candidates: set[str] = set()
                first = view.messages[0] if view.messages else None
                acked = None if first is None else self.acked.get(first)
                if acked is not None:  # newer in real time: appended after `first` returned
                    for key in made_keys[bisect_right(made_los, acked.hi):]:
                        if key not in view.position and required[key].lo >= gone:
                            candidates.add(key)
                for key in self.order.below(view.messages, view.position, c.lo):
                    if required[key].lo >= gone and first is not None and \
                            self.order.reaches(first, key):
                        candidates.add(key)
                missed = sorted(candidates, key=rank.__getitem__)
            else:  # a whole read: every required key not forgotten, or lost
                shown = sum(1 for m in view.messages if m in required and required[m].lo >= gone)
                if len(w_los) - bisect_left(w_los, gone) == shown:
                    continue
                missed = [k for k, w in required.items()
                          if k not in view.position and w.lo >= gone]
            for key in missed:
                lost += 1
                if lost <= PER_KIND:
                    self.missing(key, required[key], view, clean)
        self.check_covered(clean, fact_hi, required)

    def check_covered(self, clean: list[_Read], fact_hi: dict[str, int],
                      required: dict[str, Call]) -> None:
        """A message a read left out as covered by a summary is never live again (G7).

        A read with a summary covers every required key it leaves out that is neither
        forgotten nor newer than its first message; only the first such read of a key
        matters, and only for a key some later read shows. So each shown key looks for it
        among the reads with a summary, from when it became required up to its last
        showing: past reads that show it, a forget's and a loss's few, to the first cover."""
        summarised = [v for v in clean if v.summaries]
        s_los = [v.call.lo for v in summarised]
        last: dict[str, int] = {}  # key -> the invoke of the last read that shows it
        for view in clean:
            for key in view.messages:
                last[key] = view.call.lo
        covered_at: dict[str, tuple[int, Call]] = {}
        for key, until in last.items():
            witness = required.get(key)
            if witness is None:
                continue  # never required before a read began: no read can cover it
            for j in range(bisect_right(s_los, fact_hi[key]), len(summarised)):
                w = summarised[j]
                if w.call.lo >= until:
                    break
                if key in w.position or self.forgotten_between(witness.lo, w.call.hi):
                    continue
                if w.messages and self.newer(w.messages[0], key):
                    continue
                covered_at[key] = (w.call.hi, w.call)
                break
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
        # By end: the latest invoke among the forgets that returned before a read began.
        by_end = sorted(done, key=lambda f: f.hi)
        ends = [f.hi for f in by_end]
        latest = list(accumulate((f.lo for f in by_end), max))
        for c in self.reads + self.searches:
            if self.taints.touch(c):
                continue
            n = bisect_left(ends, c.lo)
            if not n:
                continue
            for r in c.value or ():
                a = self.made.get(r.id)
                if a is None or r.role == SUMMARY_ROLE or latest[n - 1] <= a.hi or \
                        self.capped(Guarantee.FORGET, "forgotten"):
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
            if self.taints.touch(c):
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
