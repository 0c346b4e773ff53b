"""A history checker for memory stores, in the manner of Jepsen's checkers and Elle.

Given a recorded :class:`~nomnesia.suite.core.history.History`, ``check`` looks for
histories that no legal execution of SPEC.md could have produced, per user:
acknowledged appends lost or counted twice, phantoms, reads that disagree on
the order or break real time, half-finished compactions, leaks between users,
memory that survives ``forget``, and searches that lag or see covered entries.

It only ever reasons from what the history proves. An indeterminate (info)
operation may or may not have taken effect; an operation running concurrently
with another may have taken effect before or after it; a read of ``limit``
entries that returned exactly ``limit`` says nothing about older ones. Every
such doubt is resolved in the store's favour, so a correct store is never
flagged, and the freedoms SPEC.md grants (gaps in seq, other id formats,
another ``keep_last``, search lag within ``search_staleness``) are accepted.

SPEC guarantee 10 allows broken guarantees between an interrupted write and
the next ``recover()``: reads in that window are only checked for isolation.

Each anomaly carries the smallest part of the history that shows it: the
checker builds it from the evidence, then shrinks it by re-checking the
evidence with one call left out at a time.

This module is longer than the project's 500 lines on purpose. What it shared with
``checker_keyed`` (anomalies, reporting, shrinking, taint and forget windows) is in
``checker_common``; what is left is one user's indexes and the rules that read them,
each rule a method over the same indexes: the checker's rules stay one concern, and
cutting them in two would only scatter them.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

from ..contract import SUMMARY_ROLE, Guarantee
from .checker_common import PER_KIND, Anomaly, Reporter, Spans, ranked, shrink, taints
from .history import UNBOUNDED, Call, History, Op, Rec, pair, short_id

__all__ = ["Anomaly", "check", "shrink"]  # Anomaly and shrink: checker_common's, as before


def check(history: History | Sequence[Op], *, keep_last: int, search_staleness: float,
          minimise: bool = True) -> list[Anomaly]:
    """Every anomaly found, earliest first; ``[]`` when some legal execution explains it all.

    ``keep_last`` and ``search_staleness`` are the store's own values: the
    checker grants the store exactly the freedom it declares.
    """
    ops = list(history)
    calls = pair(ops)
    recovers = [c for c in calls if c.f == "recover" and c.ok]
    by_user: dict[str, list[Call]] = {}
    for c in calls:
        if c.f != "recover":
            by_user.setdefault(c.invoke.user_id, []).append(c)
    owners: dict[str, set[str]] = {}  # entry id -> users whose appends produced it
    for user, ucalls in by_user.items():
        for c in ucalls:
            if c.f == "append" and c.ok and isinstance(c.value, Rec):
                owners.setdefault(c.value.id, set()).add(user)
    found: list[Anomaly] = []
    for user, ucalls in by_user.items():
        found += _UserChecker(user, ucalls, recovers, owners, keep_last, search_staleness).run()

    def recheck(ops: list[Op]) -> list[Anomaly]:
        return check(ops, keep_last=keep_last, search_staleness=search_staleness, minimise=False)

    return ranked(found, recheck, minimise)


def _unaccounted(need: Mapping[str, Any], live: Mapping[str, Any], cov: frozenset[str]
                 ) -> list[str]:
    """The required messages a whole read neither returns nor covers with its summary.

    Counted from the read's side first (linear in what the read returned): only a read
    that lacks some required message pays for visiting them all.
    """
    found = sum(1 for m in live if m in need)
    if cov and found < len(need):
        if len(cov) < len(need):
            found += sum(1 for m in cov if m in need and m not in live)
        else:
            found += sum(1 for m in need if m in cov and m not in live)
    if found == len(need):
        return []
    return [m for m in need if m not in live and m not in cov]


class _UserChecker(Reporter):
    """All checks for one user's calls; different users never interact (G9 aside)."""

    def __init__(self, user: str, calls: list[Call], recovers: list[Call],
                 owners: dict[str, set[str]], keep_last: int, staleness: float) -> None:
        super().__init__()
        self.user = user
        self.keep_last = keep_last
        self.staleness_ns = int(staleness * 1e9)
        self.owners = owners
        self._missing = 0
        self.appends = [c for c in calls if c.f == "append"]
        self.reads = [c for c in calls if c.f == "read" and c.ok]
        self.searches = [c for c in calls if c.f == "search" and c.ok]
        self.compacts = [c for c in calls if c.f == "compact"]
        self.forgets = [(c.lo, c.hi, c) for c in calls if c.f == "forget" and not c.failed]
        self.forget_spans = Spans((lo, hi) for lo, hi, _ in self.forgets)
        self.taints = taints(calls, recovers)
        self.clean_reads = [r for r in self.reads if not self.taints.touch(r)]
        # Who may have produced each id: appends (ok, or indeterminate with a
        # message_id) and compactions (ok).
        self.producers: dict[str, list[Call]] = {}
        self.failed_ids: dict[str, Call] = {}
        self.ack: dict[str, Call] = {}  # id -> first acknowledged append or compaction
        self.acks: dict[str, list[Call]] = {}  # id -> every acknowledged append
        for c in self.appends:
            mid = c.arg[2] if isinstance(c.arg, tuple) and len(c.arg) > 2 else None
            if c.ok and isinstance(c.value, Rec):
                self.producers.setdefault(c.value.id, []).append(c)
                self.ack.setdefault(c.value.id, c)
                self.acks.setdefault(c.value.id, []).append(c)
            elif c.failed:
                if mid is not None:
                    self.failed_ids.setdefault(mid, c)
            elif mid is not None:
                self.producers.setdefault(mid, []).append(c)
        self.covers: dict[str, frozenset[str]] = {}
        for c in self.compacts:
            if c.ok and isinstance(c.value, Rec):
                self.producers.setdefault(c.value.id, []).append(c)
                self.ack.setdefault(c.value.id, c)
                self.covers.setdefault(c.value.id, frozenset(c.value.covers))
        self.indeterminate_compact_lo = min(
            (c.lo for c in self.compacts if not c.ok and not c.failed), default=UNBOUNDED)

    # -- plumbing -------------------------------------------------------------------------

    def forget_between(self, lo: int, hi: int) -> bool:
        """Whether some forget may have taken effect after ``lo`` and before ``hi``."""
        return self.forget_spans.overlaps(lo, hi)

    def cut(self, hi: int) -> int:
        """Facts established by calls invoked at or before this index may have been forgotten.

        The latest end of a forget invoked before ``hi`` (one bisection).
        """
        return self.forget_spans.end_before(hi)

    def who(self, entry_id: str) -> str:
        c = self.ack.get(entry_id)
        return f"{short_id(entry_id)} ({c})" if c else short_id(entry_id)

    def covers_of(self, r: Rec) -> frozenset[str]:
        cov = self.covers.get(r.id)
        if cov is None:
            cov = self.covers[r.id] = frozenset(r.covers)
        return cov

    # -- the checks -----------------------------------------------------------------------

    def run(self) -> list[Anomaly]:
        self.check_results()
        views = self.check_views()
        self.check_phantoms()
        self.check_covering(views)
        self.check_durability(views)
        self.check_real_time()
        self.check_read_orders(views)
        self.check_searches()
        self.check_retries()
        return self.found

    def check_results(self) -> None:
        """What append and compact themselves returned."""
        for c in self.appends:
            if not c.ok or not isinstance(c.value, Rec):
                continue
            r = c.value
            if r.user_id != self.user:
                self.report(Guarantee.ISOLATION, f"append-user:{c.lo}",
                            f"{c} for {self.user!r} returned an entry of user {r.user_id!r}", c)
            mid = c.arg[2] if isinstance(c.arg, tuple) and len(c.arg) > 2 else None
            if mid is not None and r.id != mid:
                self.report(Guarantee.IDEMPOTENT_APPENDS, f"append-id:{c.lo}",
                            f"{c} with message_id {mid!r} returned id {r.id!r}", c)
        for c in self.compacts:
            if not c.ok or not isinstance(c.value, Rec):
                continue
            r = c.value
            if r.user_id != self.user:
                self.report(Guarantee.ISOLATION, f"compact-user:{c.lo}",
                            f"{c} for {self.user!r} returned an entry of user {r.user_id!r}", c)
            if r.role != SUMMARY_ROLE or not r.covers:
                self.report(Guarantee.ATOMIC_COMPACTION, f"compact-shape:{c.lo}",
                            f"{c} returned {short_id(r.id)} with role {r.role!r} covering "
                            f"{len(r.covers)} entries: a summary must cover what it replaces", c)

    def check_views(self) -> dict[int, tuple[dict[str, Rec], Rec | None]]:
        """Per read: isolation, size, duplicates, order and shape. Returns each clean view."""
        views: dict[int, tuple[dict[str, Rec], Rec | None]] = {}
        summary_ids = {sid for sid in self.covers}
        for c in self.reads + self.searches:
            entries: tuple[Rec, ...] = c.value or ()
            is_read = c.f == "read"
            bound = c.arg if is_read else c.arg[1]
            mine = []
            for r in entries:
                if r.user_id != self.user:
                    self.report(Guarantee.ISOLATION, f"foreign:{c.lo}",
                                f"{c} for {self.user!r} returned {short_id(r.id)} of user "
                                f"{r.user_id!r}", c)
                else:
                    mine.append(r)
            if self.taints.touch(c):
                continue
            g = Guarantee.READ_YOUR_WRITES if is_read else Guarantee.SEARCH
            if isinstance(bound, int) and len(entries) > bound:
                self.report(g, f"too-many:{c.lo}",
                            f"{c} returned {len(entries)} entries, more than {bound}", c)
            live: dict[str, Rec] = {}
            summary: Rec | None = None
            for r in mine:
                if r.id in live or (summary is not None and r.id == summary.id):
                    retried = sum(1 for a in self.producers.get(r.id, ()) if a.f == "append") > 1
                    self.report(Guarantee.IDEMPOTENT_APPENDS if retried else
                                Guarantee.EXACTLY_ONCE if is_read else Guarantee.SEARCH,
                                f"duplicate:{c.lo}",
                                f"{c} returned {short_id(r.id)} twice", c,
                                *self.producers.get(r.id, ())[:2])
                    continue
                if r.role == SUMMARY_ROLE:
                    summary = r
                    summary_ids.add(r.id)
                else:
                    live[r.id] = r
            if not is_read:
                continue
            for prev, r in pairwise(mine):
                if r.seq <= prev.seq:
                    what = "share seq" if r.seq == prev.seq else "are out of order"
                    self.report(Guarantee.ORDER, f"read-order:{c.lo}",
                                f"{c}: {short_id(prev.id)}@{prev.seq} and {short_id(r.id)}@"
                                f"{r.seq} {what}: a read returns live entries in ascending, "
                                f"unique seq order", c)
                    break
            summaries = [r for r in mine if r.role == SUMMARY_ROLE]
            if len(summaries) > 1 or (summaries and mine[0].role != SUMMARY_ROLE):
                self.report(Guarantee.ATOMIC_COMPACTION, f"shape:{c.lo}",
                            f"{c} shows {len(summaries)} summaries, not first: a live history "
                            f"is at most one summary followed by messages", c)
            if summary is not None:
                cov = self.covers_of(summary)
                if cov != frozenset(summary.covers):
                    self.report(Guarantee.ATOMIC_COMPACTION, f"covers-changed:{summary.id}",
                                f"summary {short_id(summary.id)} covers different entries in {c} "
                                f"than when first seen", c, self.ack.get(summary.id))
                both = [m for m in live if m in cov]
                if both:
                    self.report(Guarantee.ATOMIC_COMPACTION, f"both:{both[0]}",
                                f"{c} sees summary {short_id(summary.id)} and the entry "
                                f"{self.who(both[0])} it covers", c, self.ack.get(summary.id))
                nested = [s for s in summary.covers if s in summary_ids]
                if nested:
                    self.report(Guarantee.ATOMIC_COMPACTION, f"nested:{summary.id}",
                                f"summary {short_id(summary.id)} (seen by {c}) covers summary "
                                f"{short_id(nested[0])}: covers hold message ids only", c,
                                self.ack.get(nested[0]))
            views[c.lo] = (live, summary)
        return views

    def check_read_orders(self, views: dict[int, tuple[dict[str, Rec], Rec | None]]) -> None:
        """G5: every read agrees on one order, even if a store changed an entry's seq.

        Reads are sorted by seq (checked per read), so two reads can only
        disagree on an order through an entry shown with two seqs; only those
        entries are examined, pairwise over the reads that show them.
        """
        first: dict[str, tuple[int, Call]] = {}
        moved: dict[str, list[Call]] = {}
        for c in self.clean_reads:
            for m, r in views[c.lo][0].items():
                seen = first.get(m)
                if seen is None:
                    first[m] = (r.seq, c)
                elif seen[0] != r.seq and not self.forget_between(seen[1].lo, c.hi):
                    moved.setdefault(m, [seen[1]]).append(c)
        for m, reads in moved.items():
            sides = []
            for c in reads[:50]:
                order = list(views[c.lo][0])
                at = order.index(m)
                sides.append((c, set(order[:at]), set(order[at + 1:])))
            for i, (c1, before1, after1) in enumerate(sides):
                for c2, before2, after2 in sides[i + 1:]:
                    flipped = (before1 & after2) or (after1 & before2)
                    if flipped and not self.forget_between(c1.lo, c2.hi):
                        other = sorted(flipped)[0]
                        self.report(Guarantee.ORDER, f"flip:{m}",
                                    f"{c1} and {c2} order {short_id(m)} and {short_id(other)} "
                                    f"differently: every read agrees on one order", c1, c2)
                        return

    def check_phantoms(self) -> None:
        """Every id a read shows was produced by an append or compaction that may have run."""
        unknown: dict[str, tuple[Call, bool]] = {}
        for c in self.reads + self.searches:
            for r in c.value or ():
                if r.user_id != self.user:
                    continue
                if r.id not in self.producers and r.id not in unknown:
                    unknown[r.id] = (c, r.role == SUMMARY_ROLE)
                if r.role == SUMMARY_ROLE:
                    for m in r.covers:
                        if m not in self.producers and m not in unknown:
                            unknown[m] = (c, False)
        if not unknown:
            return
        # Store-made ids of indeterminate calls are unknown to us: match each
        # unknown id to a distinct indeterminate call invoked before it was seen.
        pools = {False: sorted(c.lo for c in self.appends
                               if not c.ok and not c.failed and c.arg[2] is None),
                 True: sorted(c.lo for c in self.compacts if not c.ok and not c.failed)}
        for entry_id, (c, is_summary) in sorted(unknown.items(), key=lambda kv: kv[1][0].hi):
            pool = pools[is_summary]
            if pool and pool[0] < c.hi:
                pool.pop(0)
                continue
            others = self.owners.get(entry_id, set()) - {self.user}
            failed = self.failed_ids.get(entry_id)
            if others:
                self.report(Guarantee.ISOLATION, f"phantom:{entry_id}",
                            f"{c} for {self.user!r} returned {short_id(entry_id)}, appended "
                            f"for user {sorted(others)[0]!r}", c)
            elif failed is not None:
                self.report(Guarantee.INPUTS, f"phantom:{entry_id}",
                            f"{c} returned {short_id(entry_id)}, whose {failed} was rejected: "
                            f"a rejected call must write nothing", c, failed)
            else:
                what = "summary" if is_summary else "entry"
                self.report(Guarantee.EXACTLY_ONCE, f"phantom:{entry_id}",
                            f"{c} returned {what} {short_id(entry_id)} that no append or "
                            f"compact produced", c)

    def check_covering(self, views: dict[int, tuple[dict[str, Rec], Rec | None]]) -> None:
        """G7 across calls: late covers, prefixes, covered entries coming back."""
        # When each id became covered: the earliest ok compaction or clean read proving it.
        first: dict[str, tuple[int, Call]] = {}
        for c in self.compacts:
            if c.ok and isinstance(c.value, Rec):
                first.setdefault(c.value.id, (c.hi, c))
        for c in self.clean_reads:
            s = views[c.lo][1]
            if s is not None and (s.id not in first or c.hi < first[s.id][0]):
                first[s.id] = (c.hi, c)
        self.covered_at: dict[str, tuple[int, Call, str]] = {}
        for sid, (at, witness) in first.items():
            for m in self.covers.get(sid, ()):
                known = self.covered_at.get(m)
                if known is None or at < known[0]:
                    self.covered_at[m] = (at, witness, sid)
        for c in self.compacts:
            if not (c.ok and isinstance(c.value, Rec)):
                continue
            for m in c.value.covers:
                makers = [a for a in self.producers.get(m, ()) if a.f == "append"]
                if makers and min(a.lo for a in makers) > c.hi:
                    self.report(Guarantee.ATOMIC_COMPACTION, f"late-cover:{m}",
                                f"summary {short_id(c.value.id)} of {c} covers "
                                f"{short_id(m)}, appended only after {c} returned", c, makers[0])
        max_cov: dict[str, tuple[int, str, Call] | None] = {}
        covered_at = self.covered_at
        for c in self.clean_reads:
            live, s = views[c.lo]
            for m in live:
                hit = covered_at.get(m)
                if hit is None or hit[0] >= c.lo or (s is not None and m in self.covers_of(s)):
                    continue
                if not self.forget_between(hit[1].lo, c.hi):
                    self.report(Guarantee.ATOMIC_COMPACTION, f"uncovered:{m}",
                                f"{c} shows {self.who(m)} live again after summary "
                                f"{short_id(hit[2])} covered it", hit[1], c)
            if s is None or not live:
                continue
            made = [p for p in self.producers.get(s.id, ()) if p.f == "compact"]
            if not made or self.forget_between(made[0].lo, c.hi):
                continue
            k = made[0]
            if s.id not in max_cov:
                # Seqs as acknowledged in the compaction's own epoch: a message id
                # reused after a forget names a new entry with a new seq.
                seqs = [(a.value.seq, m, a) for m in self.covers_of(s)
                        for a in self.acks.get(m, ()) if not self.forget_between(a.lo, k.hi)]
                max_cov[s.id] = max(seqs, key=lambda t: t[0], default=None)
            top = max_cov[s.id]
            if top is None:
                continue
            for m, r in live.items():  # in seq order (or check_views reported it)
                if r.seq >= top[0]:
                    break
                before = [a for a in self.acks.get(m, ())
                          if a.hi < k.lo and not self.forget_between(a.lo, c.hi)]
                if before:
                    self.report(Guarantee.ATOMIC_COMPACTION, f"prefix:{s.id}",
                                f"summary {short_id(s.id)} covers {short_id(top[1])}@{top[0]} "
                                f"but not the older {short_id(m)}@{r.seq} (live in {c}): covers "
                                f"must be a prefix", before[0], top[2], k, c)
                    break

    def check_durability(self, views: dict[int, tuple[dict[str, Rec], Rec | None]]) -> None:
        """G1/G2/G3: everything proven to exist before a read started is accounted for in it.

        Facts (an acknowledged append, a compaction, an entry a read returned)
        become requirements for every read invoked after the fact's call
        returned, unless a forget may have run in between. Requirements are kept
        compressed: a summary stands for everything it covers.
        """
        # (returned, invoked, call): facts become known when their call returns.
        events: list[tuple[int, int, Call]] = [
            (c.hi, c.lo, c) for c in (*self.appends, *self.compacts)
            if c.ok and isinstance(c.value, Rec)]
        events.extend((c.hi, c.lo, c) for c in self.clean_reads)
        events.sort(key=lambda e: e[0])
        need_m: dict[str, tuple[Call, int]] = {}
        need_s: dict[str, Call] = {}
        subset: dict[tuple[str, str], frozenset[str]] = {}
        ever_covered = set(self.covered_at)
        covers = self.covers
        empty: frozenset[str] = frozenset()
        applied = -1
        i = 0

        def minus(a: str, b: str) -> frozenset[str]:
            key = (a, b)
            d = subset.get(key)
            if d is None:
                d = subset[key] = covers.get(a, empty) - covers.get(b, empty)
            return d

        # need_m's keys by seq (sorted; stale pairs skipped, rebuilt at a cut), and the
        # order they became required in, so that a partial read visits only the required
        # messages newer than its oldest entry and losses are reported in the same order.
        by_seq: list[tuple[int, str]] = []
        rank: dict[str, int] = {}

        def add_message(entry_id: str, seq: int, w: Call) -> None:
            if entry_id not in need_m and not any(entry_id in covers.get(k, empty)
                                                  for k in need_s):
                need_m[entry_id] = (w, seq)
                rank[entry_id] = len(rank)
                if by_seq and by_seq[-1][0] > seq:
                    insort(by_seq, (seq, entry_id))
                else:
                    by_seq.append((seq, entry_id))

        def add_summary(entry_id: str, w: Call) -> None:
            if entry_id in need_s or any(not minus(entry_id, k) for k in need_s):
                return
            for k in [k for k in need_s if not minus(k, entry_id)]:
                del need_s[k]
            need_s[entry_id] = w
            cov = covers.get(entry_id, empty)
            for m in [m for m in need_m if m in cov]:
                del need_m[m]

        for c in self.clean_reads:
            while i < len(events) and events[i][0] < c.lo:
                _, lo, w = events[i]
                i += 1
                if lo <= applied:
                    continue
                if w.f == "read":
                    live, s = views[w.lo]
                    if s is not None:
                        add_summary(s.id, w)
                    for m, r in live.items():
                        add_message(m, r.seq, w)
                elif w.f == "compact":
                    add_summary(w.value.id, w)
                else:
                    add_message(w.value.id, w.value.seq, w)
            cut = self.cut(c.hi)
            if cut > applied:
                applied = cut
                need_m = {m: ws for m, ws in need_m.items() if ws[0].lo > cut}
                need_s = {k: w for k, w in need_s.items() if w.lo > cut}
                by_seq = sorted((seq, m) for m, (_, seq) in need_m.items())
            elif cut < applied:
                continue  # a forget may separate this read from facts already dropped
            if self._missing > PER_KIND:
                return  # the first few losses tell the story; more change nothing
            live, summary = views[c.lo]
            entries: tuple[Rec, ...] = c.value
            complete = summary is not None or len(entries) < c.arg
            cov = self.covers_of(summary) if summary is not None else frozenset()
            first_seq = entries[0].seq if entries else 0
            if complete:
                lost = _unaccounted(need_m, live, cov)
            elif c.hi > self.indeterminate_compact_lo:
                lost = []  # a compaction may be running: a partial read proves nothing
            else:  # a partial read: every required message newer than its oldest entry
                start = bisect_right(by_seq, (first_seq, "\U0010ffff"))
                lost = [m for seq, m in by_seq[start:] if m in need_m
                        and need_m[m][1] == seq and m not in live and m not in ever_covered]
            for m in sorted(lost, key=rank.__getitem__):
                self.missing(m, need_m[m][0], c, views)
            if not complete:
                continue
            for sid, w in need_s.items():
                if summary is not None and sid == summary.id:
                    continue
                lost = [m for m in minus(sid, summary.id if summary else "") if m not in live]
                if lost:
                    self.missing(lost[0], w, c, views)

    def missing(self, m: str, witness: Call, c: Call,
                views: dict[int, tuple[dict[str, Rec], Rec | None]]) -> None:
        self._missing += 1
        if self._missing > PER_KIND:
            return  # the first few losses tell the story; classifying more costs time
        for k in self.compacts:
            if k.lo < c.hi and k.hi > c.lo and (
                    not k.ok or (isinstance(k.value, Rec) and m in k.value.covers)):
                self.report(Guarantee.ATOMIC_COMPACTION, f"missing:{m}",
                            f"{c} misses {self.who(m)} while {k} runs: a read sees the whole "
                            f"old view or the whole new view", witness, k, c)
                return
        how = ("was acknowledged" if witness.f == "append" else
               f"was covered by {witness}" if witness.f == "compact" else f"was seen by {witness}")
        for later in self.clean_reads:
            if later.lo > c.hi:
                live, s = views[later.lo]
                if m in live or (s is not None and m in self.covers_of(s)):
                    self.report(Guarantee.READ_YOUR_WRITES, f"missing:{m}",
                                f"{c} misses {short_id(m)}, which {how} before it started "
                                f"(it reappears in {later})", witness, c)
                    return
        self.report(Guarantee.DURABILITY, f"missing:{m}",
                    f"{short_id(m)} {how}, then {c} neither returns it nor a summary covering it",
                    witness, c)

    def check_real_time(self) -> None:
        """G5: an append that returned before another started has the lower seq.

        For each append B (in invoke order) it asks for the highest seq among
        appends that returned before B started and were invoked after every
        forget that may separate them from B: a Fenwick tree over invoke order
        answers that in log time.
        """
        acked = sorted((c for c in self.appends if c.ok and isinstance(c.value, Rec)),
                       key=lambda c: c.hi)
        n = len(acked)
        if n < 2:
            return
        los = sorted(a.lo for a in acked)
        rank = {lo: n - i for i, lo in enumerate(los)}  # 1 = invoked last
        none = (-UNBOUNDED, -1)
        tree = [none] * (n + 1)
        j = 0
        for b in sorted(acked, key=lambda c: c.lo):
            while j < n and acked[j].hi < b.lo:
                r, item = rank[acked[j].lo], (acked[j].value.seq, j)
                while r <= n:
                    if item > tree[r]:
                        tree[r] = item
                    r += r & -r
                j += 1
            if any(p is not b and p.f == "append" and p.lo < b.lo
                   for p in self.producers.get(b.value.id, ())):
                continue  # a retry returns the existing, older entry
            r = n - bisect_right(los, self.cut(b.hi))
            best = none
            while r > 0:
                if tree[r] > best:
                    best = tree[r]
                r -= r & -r
            if best[1] >= 0 and best[0] >= b.value.seq:
                a = acked[best[1]]
                self.report(Guarantee.ORDER, f"real-time:{b.lo}",
                            f"{a} returned {short_id(a.value.id)}@{a.value.seq} before "
                            f"{b} started, yet {b} got {short_id(b.value.id)}@"
                            f"{b.value.seq}: seq must follow real time", a, b)

    def check_searches(self) -> None:
        """G4 and G8 for searches, G8 for reads: no covered, forgotten or missed entries."""
        content_ids: dict[str, set[str]] = {}
        first_ok: dict[str, Call] = {}
        for c in self.appends:
            if c.failed:
                continue
            content = c.arg[1]
            entry_id = c.value.id if c.ok and isinstance(c.value, Rec) else c.arg[2] or f"?{c.lo}"
            content_ids.setdefault(content, set()).add(entry_id)
            if c.ok:
                first_ok.setdefault(entry_id, c)
        cover_lo: dict[str, int] = {}
        # Search may lag appends but never compaction: once the compaction that
        # covered an entry *returned* (a read seeing the summary is not enough).
        covered_by: dict[str, Call] = {}
        for c in self.compacts:
            if c.ok and isinstance(c.value, Rec):
                for m in c.value.covers:
                    cover_lo[m] = min(cover_lo.get(m, UNBOUNDED), c.lo)
                    if m not in covered_by or c.hi < covered_by[m].hi:
                        covered_by[m] = c
        done = sorted((f for _, _, f in self.forgets if f.ok), key=lambda f: f.hi)
        done_his = [f.hi for f in done]
        latest: list[Call] = []  # prefix: the forget with the latest invoke among those done
        for f in done:
            latest.append(f if not latest or f.lo > latest[-1].lo else latest[-1])
        made_by: dict[str, int] = {}  # id -> when its last producer may have finished
        for entry_id, makers in self.producers.items():
            made_by[entry_id] = max(p.hi for p in makers)
        for c in self.searches + self.clean_reads:
            if self.taints.touch(c):
                continue
            entries: tuple[Rec, ...] = c.value or ()
            pos = bisect_left(done_his, c.lo)
            gone = latest[pos - 1] if pos else None
            if gone is not None:
                for r in entries:
                    if r.user_id == self.user and made_by.get(r.id, UNBOUNDED) < gone.lo:
                        self.report(Guarantee.FORGET, f"forgotten:{r.id}",
                                    f"{c} returns {short_id(r.id)}, written before {gone} "
                                    f"started", self.producers[r.id][0], gone, c)
            if c.f != "search":
                continue
            for r in entries:
                k_ = covered_by.get(r.id)
                if k_ is not None and k_.hi < c.lo and not self.forget_between(k_.lo, c.hi):
                    self.report(Guarantee.SEARCH, f"covered:{r.id}",
                                f"{c} returns {self.who(r.id)}, covered by the summary of {k_} "
                                f"which returned before the search started", k_, c)
            query, k = c.arg
            ids = content_ids.get(query)
            if not ids or len(ids) != 1 or k < 2:
                continue
            (m,) = ids
            a = first_ok.get(m)
            if (a is None or a.completion is None
                    or a.completion.time + self.staleness_ns >= c.invoke.time
                    or cover_lo.get(m, UNBOUNDED) < c.hi or self.indeterminate_compact_lo < c.hi
                    or self.forget_between(a.lo, c.hi)):
                continue
            if all(r.id != m for r in entries):
                lag = (c.invoke.time - a.completion.time) / 1e9
                self.report(Guarantee.SEARCH, f"search-miss:{c.lo}",
                            f"{c} for the exact content of live {short_id(m)} misses it, "
                            f"{lag:.3f} s after {a} returned (search_staleness "
                            f"{self.staleness_ns / 1e9:g} s)", a, c)

    def check_retries(self) -> None:
        """G6: a retry with a message_id returns the existing entry or rejects a conflict."""
        by_mid: dict[str, list[Call]] = {}
        for c in self.appends:
            if isinstance(c.arg, tuple) and c.arg[2] is not None and (c.ok or c.failed):
                by_mid.setdefault(c.arg[2], []).append(c)
        for calls in by_mid.values():
            if len(calls) < 2:
                continue
            for i, a in enumerate(calls):
                for b in calls[i + 1:]:
                    if self.forget_between(min(a.lo, b.lo), max(a.hi, b.hi)):
                        continue
                    same = a.arg[:2] == b.arg[:2]
                    if a.ok and b.ok:
                        if not same:
                            self.report(Guarantee.IDEMPOTENT_APPENDS, f"conflict:{b.lo}",
                                        f"{a} and {b} reuse message_id {a.arg[2]!r} with "
                                        f"different role or content, and both succeed", a, b)
                        elif a.value.seq != b.value.seq:
                            self.report(Guarantee.IDEMPOTENT_APPENDS, f"retry-seq:{b.lo}",
                                        f"retry {b} of {a} returned seq {b.value.seq}, not the "
                                        f"existing entry's {a.value.seq}", a, b)
                    elif same and a.ok != b.ok:
                        first, then = (a, b) if a.ok else (b, a)
                        if first.hi < then.lo:
                            self.report(Guarantee.IDEMPOTENT_APPENDS, f"retry-rejected:{then.lo}",
                                        f"{then} retries {first} with the same role and content "
                                        f"but was rejected", first, then)
