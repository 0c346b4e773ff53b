"""The sequential contract tests' longer checks, each run by one test of ``test_contract``.

Its own module because these are the steps and expectations a test runs, not the
tests: ``suite/test_contract.py`` keeps each test (its marks, its docstring with
the troubleshooting advice, its node id) and calls the check it names here. What
each asserts is unchanged; a failure still names its guarantee and the operations.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..contract import (
    G1,
    G4,
    G5,
    G6,
    G7,
    G8,
    G9,
    G12,
    SUMMARY_ROLE,
)
from .attempts import Attempts
from .checks import Model, check_user, snapshot
from .history import short_repr
from .recorder import LoggedStore, StoreFactory
from .settings import settings
from .violations import expect


async def fill(s: LoggedStore, model: Model, user_id: str, n: int, tag: str = "m") -> list[str]:
    """Append ``n`` messages for ``user_id`` (roles in turn) through the model; their ids."""
    ids = []
    for i in range(n):
        e = await model.append(s, user_id, f"{tag} {user_id} message number {i}",
                                role=("user", "assistant", "system", "tool")[i % 4])
        ids.append(e.id)
    return ids


async def check_declared_bounds(s: LoggedStore) -> None:
    """G4/G7: ``keep_last`` is an int >= 1 and ``search_staleness`` a number >= 0."""
    keep = getattr(s.inner, "keep_last", None)
    expect(isinstance(keep, int) and not isinstance(keep, bool) and keep >= 1, G7,
           f"store.keep_last must be an int >= 1, is {keep!r}")
    lag = getattr(s.inner, "search_staleness", None)
    expect(isinstance(lag, (int, float)) and not isinstance(lag, bool) and lag >= 0, G4,
           f"store.search_staleness must be a number >= 0, is {lag!r}")


async def check_compaction(s: LoggedStore, m: Model) -> None:
    """G7: compact keeps the newest keep_last entries, one summary first; twice, folding covers."""
    keep = s.keep_last
    ids = await fill(s, m, "ann", keep + 3)
    summary = await s.compact("ann")
    expect(summary is not None, G7, f"compact with keep_last+3={keep + 3} live entries "
                                    "returned None", s.log)
    assert summary is not None
    m.user("ann").summaries.add(summary.id)
    expect(summary.role == SUMMARY_ROLE and summary.user_id == "ann", G7,
           f"compact returned role {summary.role!r} for user {summary.user_id!r}", s.log)
    expect(sorted(summary.covers) == sorted(ids[:3]) and len(summary.covers) == 3, G7,
           f"the summary covers {list(summary.covers)}, not the 3 oldest {ids[:3]}", s.log)
    history = await s.get_history("ann", 100)
    expect([e.id for e in history] == [summary.id, *ids[3:]], G7,
           "after compact the history is not [summary, newest keep_last]", s.log)
    expect(history[0].seq < history[1].seq, G5,
           "the summary's seq is not below the entries it did not cover", s.log)
    await check_user(s, m, "ann")

    # A second compaction folds the first summary's covers in, never its id.
    later = await fill(s, m, "ann", 2, tag="later")
    second = await s.compact("ann")
    expect(second is not None, G7, "second compact returned None", s.log)
    assert second is not None
    m.user("ann").summaries.add(second.id)
    expect(summary.id not in second.covers, G7,
           "the second summary covers the first summary's id", s.log)
    tail = [*ids[3:], *later]
    expected = set(ids[:3]) | set(tail[:-keep])
    expect(set(second.covers) == expected and len(second.covers) == len(expected), G7,
           f"the second summary covers {sorted(second.covers)}, "
           f"not {sorted(expected)}", s.log)
    history = await s.get_history("ann", 100)
    expect([e.id for e in history] == [second.id, *tail[-keep:]], G7,
           "after the second compact the history is not [summary, newest keep_last]",
           s.log)
    await check_user(s, m, "ann")


WHOLE = 100
"""A read of a whole history in these checks (each user has far fewer entries)."""


async def forget_alone(s: LoggedStore, user_id: str, others: Sequence[str]) -> None:
    """``forget(user_id)``, held to leaving every other user's history as it was.

    Users never disturb each other (SPEC.md, "Guarantees"), so each of ``others`` must
    read exactly the same just after the forget as just before it. The comparison is with
    that snapshot, not with what the suite wrote: a loss that predates the forget (a
    library that drops ``system`` messages, mem0 1.x) would fail the model check the
    same way whether or not the forget also dropped the rest, and so hide it (mem0
    1.0.5's ``delete_all`` resets every user's collection: the benchmark's
    ``mem0-sync-delete-all-reset``). A difference is the forget's own failure (G1:
    acknowledged appends of another user are no longer accounted for)."""
    before = {u: snapshot(await s.get_history(u, WHOLE)) for u in others}
    await s.forget(user_id)
    changed = []
    for u in others:
        after = snapshot(await s.get_history(u, WHOLE))
        if after != before[u]:
            gone = [e[4] for e in before[u] if e not in after]
            new = [e[4] for e in after if e not in before[u]]
            changed.append(f"{u!r}: {len(before[u])} entries just before it, {len(after)} "
                           f"after ({len(gone)} gone: {short_repr(gone[:3], 120)}; "
                           f"{len(new)} new or changed: {short_repr(new[:3], 120)})")
    expect(not changed, G1, lambda: f"forget({user_id!r}) changed another user's history: "
                                     + "; ".join(changed), s.log)


async def check_forget(s: LoggedStore, m: Model,
                       inside: Callable[[LoggedStore, str], Awaitable[None]] | None = None
                       ) -> None:
    """G8: after forget nothing written before is returned; a re-append starts anew.

    ``inside(s, user)``, where given, looks inside the store's engines once the forget and
    its reads are done, before the user writes again (``suite/forget_scan.py``)."""
    mid = "keep-id" if s.can("message_id") else None
    await fill(s, m, "ann", s.keep_last + 2)
    await m.append(s, "ann", "secret to forget", message_id=mid)
    if s.can("compact"):
        await s.compact("ann")
    await fill(s, m, "bob", 3)
    await forget_alone(s, "ann", ["bob"])
    m.forgot("ann")
    expect(await s.get_history("ann", 100) == [], G8,
           "get_history returns entries after forget", s.log)
    for q in ("secret to forget", "m ann message number 0", "summary"):
        if s.can("search"):
            expect(await s.search("ann", q, 5) == [], G8,
                   f"search({q!r}) returns entries after forget", s.log)
    if s.can("compact"):
        expect(await s.compact("ann") is None, G8,
               "compact after forget did not return None", s.log)
    if s.can("consistent"):
        expect(await s.consistent_state("ann"), G8,
               "consistent_state is falsy after forget", s.log)
    await s.forget("ann")  # twice is fine
    await check_user(s, m, "ann")
    await check_user(s, m, "bob")
    if inside is not None:
        await inside(s, "ann")
    again = await m.append(s, "ann", "a new life", message_id=mid)
    expect([e.id for e in await s.get_history("ann", 100)] == [again.id], G8,
           "after forget and a re-append, history is not just the new entry", s.log)
    await check_user(s, m, "ann")


async def check_bounded_calls(s: LoggedStore, m: Model) -> None:
    """G12: every method the store has answers within ``settings.op_timeout`` on a healthy store."""
    calls: list[tuple[str, str, Callable[[], Awaitable[Any]]]] = [
        ("append", "append_message", lambda: m.append(s, "ann", "bounded")),
        ("read", "get_history", lambda: s.get_history("ann", 5)),
        ("search", "search", lambda: s.search("ann", "bounded", 5)),
        ("compact", "compact", lambda: s.compact("ann")),
        ("consistent", "consistent_state", lambda: s.consistent_state("ann")),
        ("recover", "recover", s.recover),
        ("forget", "forget", lambda: s.forget("ann")),
    ]
    for feature, name, call in calls:
        if not s.can(feature):
            continue
        try:
            await asyncio.wait_for(call(), settings.op_timeout)
        except asyncio.TimeoutError:
            expect(False, G12, f"{name} did not answer within {settings.op_timeout:g}s "
                               "on a healthy store", s.log)


async def check_conflicting_retries(store: StoreFactory) -> None:
    """G6: each conflicting retry of one message_id, on a store of its own, raises
    ValueError and changes nothing."""
    async def setup(s: LoggedStore) -> tuple[Model, list[Any]]:
        m = Model()
        await m.append(s, "ann", "pay rent", message_id="req-1")
        await fill(s, m, "ann", 2)
        return m, snapshot(await s.get_history("ann", 100))

    async def conflict(s: LoggedStore, state: tuple[Model, list[Any]],
                       variant: tuple[str, str]) -> None:
        role, content = variant
        try:
            await s.append_message("ann", role, content, message_id="req-1")
        except ValueError:
            pass
        else:
            expect(False, G6, f"a retry of 'req-1' with {(role, content)!r} did not "
                              "raise ValueError", s.log)
        expect(snapshot(await s.get_history("ann", 100)) == state[1], G6,
               "a conflicting retry changed the history", s.log)

    async def finish(s: LoggedStore, state: tuple[Model, list[Any]]) -> None:
        await check_user(s, state[0], "ann")

    variants = [("user", "pay RENT"), ("assistant", "pay rent"), ("user", "pay rent "),
                ("user", "")]
    # Each conflicting retry on its own; one that slipped through poisons the history.
    attempts = Attempts("conflicting retry", len(variants), odd=False)
    await attempts.each(store, variants, setup, conflict, finish=finish)
    attempts.check()


async def check_isolation(s: LoggedStore, m: Model) -> None:
    """G9: three users whose ids share a prefix; nothing of one is returned, compacted or
    forgotten through another."""
    users = ["ann", "anna", "bob"]
    for u in users:
        await fill(s, m, u, s.keep_last + 1, tag="shared words")
    if s.can("compact"):
        await s.compact("ann")
    attempts = Attempts("user", len(users), odd=False)
    for u in users:
        with attempts(u):
            await check_user(s, m, u)
            hits = await s.search(u, f"shared words {u} message number 1", 10) \
                if s.can("search") else []
            for h in hits:
                expect(h.user_id == u, G9, f"search for {u!r} returned "
                                           f"{h.user_id!r}'s entry", s.log)
    if not s.can("forget"):
        attempts.check()
        return
    # The forget is judged even when a user failed above: against a snapshot of the others
    # taken just before it (forget_alone), so an earlier loss cannot hide one it causes; the
    # users that passed are then checked against the model as well.
    with attempts("anna", label="forget('anna')"):
        await forget_alone(s, "anna", [u for u in users if u != "anna"])
    m.forgot("anna")
    for u in users:
        if attempts.failed(u):
            continue
        with attempts(u, label=f"user {u!r} after forget('anna')"):
            await check_user(s, m, u)
    attempts.check()
