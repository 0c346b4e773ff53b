"""What the sequential and interruption tests know, and the invariants they check against it.

``Model`` remembers, per user, every append the test made and whether it was
acknowledged or is indeterminate (interrupted). ``check_user`` then reads the
store and checks everything SPEC.md promises about that user's state at
quiescence (G1-G5, G7-G9, G11), naming the broken guarantee. It never assumes
a seq scheme, an id format, a ranking or a keep_last: only what SPEC.md says.

A store of a smaller profile is read as SPEC.md's "Profiles" section says (the
*keyed* reading, ``LoggedStore.keyed``): entries are known by their content, a
summary is an entry the suite did not write and its covers are unseen, so
guarantees 1, 2 and 7 read: summaries first, then the acknowledged messages in
the order they were acknowledged, none twice, every one of them live but those
older than the oldest live message, which only a compaction may have covered.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..contract import (
    G1,
    G2,
    G4,
    G5,
    G6,
    G7,
    G8,
    G9,
    G11,
    ROLES,
    SUMMARY_ROLE,
    ConsistencyReport,
    EntryLike,
)
from .loop import wait_until
from .recorder import LoggedStore
from .settings import settings
from .violations import expect

__all__ = ["Model", "UserModel", "check_hits", "check_user", "search_finds", "snapshot"]


@dataclass
class UserModel:
    acked: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Acknowledged message id -> (role, content), in acknowledgement order."""
    maybe: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Indeterminate appends with a known message id: accounted for once or not at all."""
    maybe_contents: list[str] = field(default_factory=list)
    """Indeterminate appends without a message id: their content may show up live once."""
    summaries: set[str] = field(default_factory=set)
    """Ids of every summary seen, which covers may never contain."""
    gone: dict[str, str] = field(default_factory=dict)
    """Forgotten ids -> content: no method may return them again (unless re-appended)."""


class Model:
    """The test's own account of what it wrote, per user."""

    def __init__(self) -> None:
        self.users: dict[str, UserModel] = {}

    def user(self, user_id: str) -> UserModel:
        return self.users.setdefault(user_id, UserModel())

    async def append(self, s: LoggedStore, user_id: str, content: str, *, role: str = "user",
                     message_id: str | None = None) -> EntryLike:
        """Append, check the returned entry, and remember it as acknowledged."""
        entry = await s.append_message(user_id, role, content, message_id=message_id)
        check_returned(entry, user_id, role, content, message_id, s)
        u = self.user(user_id)
        u.acked[entry.id] = (role, content)
        u.maybe.pop(entry.id, None)
        u.gone.pop(entry.id, None)
        return entry

    def owner(self, entry_id: str, content: str, not_user: str) -> str | None:
        """Another user who wrote this id or content: a leak to report as G9, not a phantom."""
        for name, u in self.users.items():
            if name == not_user:
                continue
            known = u.acked | u.maybe
            if entry_id in known or any(c == content for _, c in known.values()):
                return name
        return None

    def forgot(self, user_id: str) -> None:
        u = self.user(user_id)
        gone = {**u.gone, **{i: c for i, (_, c) in (u.acked | u.maybe).items()}}
        self.users[user_id] = UserModel(summaries=u.summaries, gone=gone)


def _leak(call: str, user_id: str, entry: EntryLike, other: object) -> str:
    """One wording for every leak, whichever way it was found: one cause in the summary."""
    return (f"{call}({user_id!r}) returned an entry of another user: {entry.id!r} "
            f"({entry.content[:40]!r}), written for user {other!r}")


def _pair(user_id: str, other: object) -> frozenset[object]:
    """The two users a leak involves: the smallest story that shows it is theirs alone."""
    return frozenset((user_id, other))


def check_returned(entry: EntryLike, user_id: str, role: str, content: str,
                   message_id: str | None, s: LoggedStore) -> None:
    """The entry an append returns is the message that was appended."""
    expect(entry.user_id == user_id, G9, f"append_message for user {user_id!r} returned an "
                                         f"entry of user {entry.user_id!r}", s.log,
           user=_pair(user_id, entry.user_id))
    got = (entry.user_id, entry.role, entry.content, tuple(entry.covers))
    expect(got == (user_id, role, content, ()), G1,
           lambda: f"append_message returned {got!r}, not the appended "
                   f"{(user_id, role, content, ())!r}", s.log, user=user_id)
    expect(isinstance(entry.id, str) and entry.id, G1,
           f"append_message returned an entry without a str id: {entry.id!r}", s.log,
           user=user_id)
    expect(isinstance(entry.seq, int) and not isinstance(entry.seq, bool), G5,
           f"append_message returned a non-int seq {entry.seq!r}", s.log, user=user_id)
    if message_id is not None and not s.keyed:  # keyed: an entry's id is its content
        expect(entry.id == message_id, G6,
               f"append_message(message_id={message_id!r}) returned id {entry.id!r}", s.log,
               user=user_id)


def snapshot(entries: list[EntryLike]) -> list[tuple[str, str, int, str, str, tuple[str, ...]]]:
    """Entries as plain tuples, for exact before/after comparisons."""
    return [(e.id, e.user_id, e.seq, e.role, e.content, tuple(e.covers)) for e in entries]


def _within(s: LoggedStore) -> float:
    staleness = s.search_staleness
    return staleness + 0.05 if staleness > 0 else 0.0


async def search_finds(s: LoggedStore, user_id: str, content: str, k: int = 5) -> list[EntryLike]:
    """Search the exact content; it must come back within the top k, within search_staleness."""
    found, waited = await wait_until(
        lambda: s.search(user_id, content, k),
        lambda hits: any(h.content == content for h in hits), within=_within(s))
    expect(any(h.content == content for h in found), G4,
           lambda: f"search({user_id!r}, <exact content {content[:40]!r}>, k={k}) did not return "
                   f"the live entry with that content within {waited:.3f}s "
                   f"(search_staleness={s.search_staleness:g})", s.log,
           user=user_id)
    return found


def check_hits(hits: list[EntryLike], user_id: str, k: int, live: dict[str, EntryLike],
               model: Model, s: LoggedStore) -> None:
    """Search results: at most k, all live entries of this user, as get_history has them."""
    u = model.user(user_id)
    expect(len(hits) <= k, G4, f"search returned {len(hits)} entries for k={k}", s.log,
           user=user_id)
    for h in hits:
        if h.user_id != user_id:
            expect(False, G9, _leak("search", user_id, h, h.user_id), s.log,
                   user=_pair(user_id, h.user_id))
        other = None if h.id in live else model.owner(h.id, h.content, user_id)
        if other is not None:
            expect(False, G9, _leak("search", user_id, h, other), s.log,
                   user=_pair(user_id, other))
        expect(h.id not in u.gone or h.id in live, G8,
               f"search returned forgotten entry {h.id!r}", s.log, user=user_id)
        expect(h.id in live, G4, f"search returned {h.id!r}, which is not a live entry "
                                 "(covered by a summary, or never written)", s.log,
               user=user_id)
        expect(h.content == live[h.id].content, G4,
               f"search and get_history disagree on the content of {h.id!r}", s.log,
               user=user_id)


async def check_user(s: LoggedStore, model: Model, user_id: str, *,
                     searches: int = 3) -> list[EntryLike]:
    """Check every quiescent invariant of one user; returns the live history."""
    u = model.user(user_id)
    limit = len(u.acked) + len(u.maybe) + len(u.maybe_contents) + 10
    history = await s.get_history(user_id, limit)
    log = s.log
    ids = [e.id for e in history]
    live = {e.id: e for e in history}

    for e in history:
        if e.user_id != user_id:
            expect(False, G9, _leak("get_history", user_id, e, e.user_id), log,
                   user=_pair(user_id, e.user_id))
    expect(len(ids) == len(live), G2,
           lambda: f"duplicate ids among live entries: "
                   f"{sorted({i for i in ids if ids.count(i) > 1})}", log, user=user_id)
    seqs = [e.seq for e in history]
    expect(seqs == sorted(seqs) and len(set(seqs)) == len(seqs), G5,
           f"get_history seqs are not strictly ascending: {seqs}", log, user=user_id)

    summaries = [e for e in history if e.role == SUMMARY_ROLE]
    u.summaries.update(e.id for e in summaries)
    if s.keyed:
        _check_keyed_shape(s, history, user_id)
    else:
        expect(len(summaries) <= 1 and (not summaries or history[0].role == SUMMARY_ROLE), G7,
               lambda: f"live history is not 'at most one summary, first': roles "
                       f"{[e.role for e in history]}", log, user=user_id)
    covered: list[str] = [c for e in summaries for c in e.covers]
    expect(len(covered) == len(set(covered)), G2,
           "a summary covers the same message twice", log, user=user_id)
    expect(not set(covered) & set(live), G2,
           lambda: f"entries both live and covered: {sorted(set(covered) & set(live))}",
           log, user=user_id)
    expect(not set(covered) & u.summaries, G7,
           lambda: f"a summary covers summary ids {sorted(set(covered) & u.summaries)}; "
                   "covers hold message ids only", log, user=user_id)

    known = u.acked | u.maybe
    unclaimed = list(u.maybe_contents)
    for e in history:
        if e.role == SUMMARY_ROLE:
            continue
        expect(e.role in ROLES, G1, f"live entry {e.id!r} has role {e.role!r}",
               log, user=user_id)
        if e.id in known:
            expect((e.role, e.content) == known[e.id], G1,
                   f"live entry {e.id!r} holds {(e.role, e.content[:40])!r}, "
                   "not what was appended", log, user=user_id)
        else:
            other = model.owner(e.id, e.content, user_id)
            if other is not None:
                expect(False, G9, _leak("get_history", user_id, e, other), log,
                       user=_pair(user_id, other))
            expect(e.content in unclaimed, G2,
                   f"phantom entry {e.id!r} ({e.content[:40]!r}): it was never appended, "
                   "or it duplicates an append under a new id", log)
            unclaimed.remove(e.content)
    for c in covered:
        expect(c in known or c in u.gone, G2, f"a summary covers unknown id {c!r}",
               log, user=user_id)

    accounted = set(live) | set(covered)
    if s.keyed and summaries:
        # Covers are unseen: every message older than the oldest live one may be covered.
        acked = list(u.acked)
        oldest = next((acked.index(e.id) for e in history if e.id in u.acked), len(acked))
        accounted |= set(acked[:oldest])
    lost = [i for i in u.acked if i not in accounted]
    if s.keyed:
        expect(not lost, G1, lambda: "acknowledged appends are not live"
               + (" (and not older than the oldest live message, so no summary covers them)"
                  if summaries else " (and no summary is live that could cover them)")
               + f": {[u.acked[i][1][:40] for i in lost]}", log, user=user_id)
    expect(not lost, G1, lambda: f"acknowledged appends are neither live nor covered by the "
                                 f"live summary: {lost}", log, user=user_id)

    order = [i for i in u.acked if i in live]
    expect(order == [i for i in ids if i in u.acked], G5,
           lambda: "live entries are not in the order their appends were acknowledged",
           log, user=user_id)

    if s.can("consistent"):
        report, waited = await consistent(s, user_id)
        polled = f" (polled for {waited:.1f}s)" if s.keyed else ""
        expect(report, G11, f"consistent_state({user_id!r}) is falsy at quiescence{polled}:"
                            f"\n{report}", log, user=user_id)

    messages = [e for e in history if e.role != SUMMARY_ROLE]
    sample = messages[-searches:] if searches and s.can("search") else []
    for e in sample:
        hits = await search_finds(s, user_id, e.content)
        check_hits(hits, user_id, 5, live, model, s)
    if searches and s.can("search") and (u.gone or covered):
        # Search never lags behind compaction or forget: probe what must be gone.
        dead = [(i, c) for i, c in u.gone.items() if i not in live][:2]
        dead += [(i, known[i][1]) for i in covered if i in known][:2]
        for _, content in dead:
            hits = await s.search(user_id, content, 5)
            check_hits(hits, user_id, 5, live, model, s)
    if not history and s.can("search"):
        hits = await s.search(user_id, "anything at all", 5)
        expect(not hits, G8 if u.gone else G4,
               f"search for user {user_id!r} with no live entries returned {len(hits)}",
               log, user=user_id)
    return history


async def consistent(s: LoggedStore, user_id: str) -> tuple[ConsistencyReport, float]:
    """``consistent_state`` at quiescence, and how long it took to become truthy.

    A store that declares no staleness bound (every keyed profile: the seed's
    store has none) is polled until it is truthy or ``settings.eventually``
    passes, as the seed's own ``assert_eventually`` does; a full-profile store
    must be consistent at once (G11).
    """
    within = settings.eventually if s.keyed else 0.0
    report, waited = await wait_until(lambda: s.consistent_state(user_id), bool, within=within,
                                      interval=0.01)
    return report, waited


def _check_keyed_shape(s: LoggedStore, history: list[EntryLike], user_id: str) -> None:
    """The keyed reading of a live history: zero or more summaries, then only messages.

    A summary is an entry the suite did not write: without ``compact`` (or
    before any) it can only be a phantom, an entry no append made (G2).
    """
    first_message = next((n for n, e in enumerate(history) if e.role != SUMMARY_ROLE),
                         len(history))
    late = [e for e in history[first_message:] if e.role == SUMMARY_ROLE]
    summaries = [e for e in history if e.role == SUMMARY_ROLE]
    compacted = s.can("compact") and any(
        op.f == "compact" and op.user_id == s.store_user(user_id) for op in s.log)
    if summaries and not compacted:
        expect(False, G2, lambda: f"get_history({user_id!r}) returned entries that no append "
                                  f"wrote: {[e.content[:40] for e in summaries[:3]]}"
               + ("" if s.can("compact") else " (the store has no compact, so they cannot be "
                                              "summaries)"), s.log, user=user_id)
    expect(not late, G7, lambda: f"get_history({user_id!r}) returned an entry the suite did not "
                                 f"write (a summary) after a message: "
                                 f"{[e.content[:40] for e in late[:3]]}; summaries come first",
           s.log, user=user_id)
