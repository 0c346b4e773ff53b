"""The sequential contract: every method, one call at a time, against SPEC.md.

Each test opens a fresh store, makes a few calls that a correct store must
answer in exactly one way (up to the freedoms SPEC.md allows: seq gaps, any
``keep_last``, any ranking, any id format, search lag within
``search_staleness``), and checks the full quiescent state with ``check_user``.
"""

from __future__ import annotations

import pytest

from .base import StoreTests
from .contract import (
    G1,
    G2,
    G3,
    G4,
    G5,
    G6,
    G7,
    G8,
    G9,
    G10,
    G11,
    G12,
    Guarantee,
)
from .core.attempts import Attempts
from .core.checks import Model, check_user, search_finds, snapshot
from .core.contract_checks import (
    check_bounded_calls,
    check_compaction,
    check_conflicting_retries,
    check_declared_bounds,
    check_forget,
    check_isolation,
    fill,
)
from .core.loop import suite_test
from .core.recorder import StoreFactory, recorded
from .core.violations import expect
from .forget_scan import scan_after_forget


class TestContract(StoreTests):
    """G1-G9 and G11, one operation at a time."""

    @pytest.mark.needs("entries")
    @pytest.mark.guarantee(G4, G7)
    @suite_test
    async def test_store_declares_keep_last_and_search_staleness(self, store: StoreFactory) -> None:
        """``keep_last`` is an int >= 1 and ``search_staleness`` a number >= 0.

        Troubleshooting: both are plain attributes of the store object that the
        factory's context manager yields (not of the factory). The suite reads
        them to know how many entries compaction keeps and how long search may lag.
        """
        async with recorded(store) as s:
            await check_declared_bounds(s)

    @pytest.mark.needs("entries", "message_id")
    @pytest.mark.guarantee(G1, G2, G3, G4, G5, G6, G11)
    @suite_test
    async def test_append_returns_the_entry_and_history_shows_it(self, store: StoreFactory) -> None:
        """An acknowledged append is returned as written and read back at once.

        Troubleshooting: the returned entry must carry the caller's user_id, role
        and content unchanged, empty ``covers`` and, when given, the caller's
        ``message_id`` as its id; ``get_history`` must read the tier that
        ``append_message`` wrote before returning (no lag is allowed).
        """
        async with recorded(store) as s:
            m = Model()
            a = await m.append(s, "ann", "hello there")
            b = await m.append(s, "ann", "and again", role="assistant", message_id="ann-2")
            history = await s.get_history("ann")
            expect([e.id for e in history] == [a.id, b.id], G3,
                   "get_history does not return both acknowledged appends, oldest first", s.log)
            expect(snapshot(history) == snapshot([a, b]), G1,
                   "get_history returns the entries differently from what append returned", s.log)
            await check_user(s, m, "ann")

    @pytest.mark.needs("entries")
    @pytest.mark.guarantee(G1, G2, G4, G5, G11)
    @suite_test
    async def test_seq_increases_for_sequential_appends(self, store: StoreFactory) -> None:
        """G5: if append A returned before B started, seq(A) < seq(B); gaps are allowed.

        Troubleshooting: take seq from a per-user counter or a sequence that
        only grows, assigned inside the same atomic step as the write.
        """
        async with recorded(store) as s:
            m = Model()
            seqs = []
            for i in range(12):
                seqs.append((await m.append(s, "ann", f"note {i}")).seq)
            expect(seqs == sorted(set(seqs)) and len(set(seqs)) == len(seqs), G5,
                   f"seq of sequential appends is not strictly increasing: {seqs}", s.log)
            await check_user(s, m, "ann")

    @pytest.mark.guarantee(G1, G2, G3, G4, G5, G11)
    @suite_test
    async def test_history_limit_returns_newest_in_ascending_order(
            self, store: StoreFactory) -> None:
        """G3: get_history(u, limit) is the newest ``limit`` live entries, ascending seq.

        Troubleshooting: select the newest ``limit`` (ORDER BY seq DESC LIMIT n)
        and reverse them; returning the oldest ``limit``, or newest-first, fails.
        The default limit is 10.
        """
        async with recorded(store) as s:
            m = Model()
            ids = await fill(s, m, "ann", 13)
            limits = (1, 2, 5, 12, 13, 14, 100)
            attempts = Attempts("limit", len(limits) + 1, odd=False)
            for limit in limits:
                with attempts(limit):
                    got = [e.id for e in await s.get_history("ann", limit)]
                    expect(got == ids[-limit:], G3,
                           f"get_history(limit={limit}) returned {len(got)} ids that are not "
                           f"the newest {limit} in ascending order", s.log)
            with attempts(None, label="the default limit"):
                got = [e.id for e in await s.get_history("ann")]
                expect(got == ids[-10:], G3, "get_history without limit is not the newest 10",
                       s.log)
            attempts.check()
            await check_user(s, m, "ann")

    @pytest.mark.guarantee(G1, G2, G3, G4, G5, G11)
    @suite_test
    async def test_history_past_page_sizes(self, store: StoreFactory) -> None:
        """G1/G3 at scale: 300 entries read back whole, past any backend's page size.

        Troubleshooting: backends page their scans (Redis SCAN, Qdrant scroll,
        Milvus query limits); a store must follow every page, and honour a
        large ``limit`` instead of capping it silently.
        """
        async with recorded(store) as s:
            m = Model()
            ids = await fill(s, m, "ann", 300)
            got = [e.id for e in await s.get_history("ann", 1000)]
            expect(got == ids, G3, f"get_history(limit=1000) returned {len(got)} of 300 "
                   "entries, or not in order", s.log)
            got = [e.id for e in await s.get_history("ann", 257)]
            expect(got == ids[-257:], G3, "get_history(limit=257) is not the newest 257", s.log)
            await check_user(s, m, "ann", searches=2)

    @pytest.mark.needs("search")
    @pytest.mark.guarantee(G1, G2, G4, G5, G11)
    @suite_test
    async def test_search_finds_exact_content(self, store: StoreFactory) -> None:
        """G4: searching a live entry's exact content returns it within the top k.

        Troubleshooting: the query must be embedded like the stored content,
        and the index written before ``append_message`` returns (or within
        ``search_staleness`` seconds, which the store must declare). The suite
        assumes no particular model or ranking beyond this.
        """
        async with recorded(store) as s:
            m = Model()
            contents = ["the cat sat on the mat", "quarterly revenue grew 4 percent",
                        "remind me to call the dentist", "my favourite colour is teal",
                        "deploy the service on friday", "42", "Straße", "a b c"]
            for c in contents:
                await m.append(s, "ann", c)
            live = {e.id: e for e in await s.get_history("ann", 100)}
            attempts = Attempts("content", len(contents), odd=False)
            for c in contents:
                with attempts(c):
                    for k in (1, 5):
                        hits = await search_finds(s, "ann", c, k)
                        expect(len(hits) <= k, G4, f"search with k={k} returned {len(hits)}",
                               s.log)
                        expect(all(h.id in live for h in hits), G4,
                               "search returned an entry that is not live", s.log)
            attempts.check()
            await check_user(s, m, "ann", searches=0)

    @pytest.mark.needs("search")
    @pytest.mark.guarantee(G1, G2, G4, G5, G9, G11)
    @suite_test
    async def test_search_returns_at_most_k(self, store: StoreFactory) -> None:
        """G4: search returns at most k entries (default 5), all live entries of that user.

        Troubleshooting: pass k to the backend as the limit and do not pad
        results with other users' hits or covered entries.
        """
        async with recorded(store) as s:
            m = Model()
            await fill(s, m, "ann", 9)
            await fill(s, m, "bob", 3)
            ks = (1, 2, 3, 8, 9, 50)
            attempts = Attempts("k", len(ks) + 1, odd=False)
            for k in ks:
                with attempts(k):
                    hits = await s.search("ann", "message number", k)
                    expect(len(hits) <= k, G4, f"search(k={k}) returned {len(hits)} entries",
                           s.log)
                    expect(all(h.user_id == "ann" for h in hits), G9,
                           "search for ann returned bob's entries", s.log)
            with attempts(None, label="the default k"):
                hits = await s.search("ann", "message number")
                expect(len(hits) <= 5, G4, f"search without k returned {len(hits)} > 5", s.log)
            attempts.check()
            await check_user(s, m, "ann", searches=0)

    @pytest.mark.guarantee(G1, G2, G3, G4, G5, G7, G9, G11)
    @suite_test
    async def test_unknown_user_is_empty(self, store: StoreFactory) -> None:
        """A user never written has no history, no search hits; compact is None, forget works.

        Troubleshooting: an unknown user must not raise (no "key not found",
        no missing collection or partition errors): it is simply empty.
        """
        async with recorded(store) as s:
            m = Model()
            await fill(s, m, "ann", 3)
            expect(await s.get_history("nobody") == [], G3,
                   "get_history of an unknown user is not empty", s.log)
            if s.can("search"):
                expect(await s.search("nobody", "message number", 5) == [], G4,
                       "search of an unknown user is not empty", s.log)
            if s.can("compact"):
                expect(await s.compact("nobody") is None, G7,
                       "compact of an unknown user did not return None", s.log)
            if s.can("forget"):
                await s.forget("nobody")
            if s.can("consistent"):
                expect(await s.consistent_state("nobody"), G11,
                       "consistent_state of an unknown user is falsy", s.log)
            await check_user(s, m, "ann")
            await check_user(s, m, "nobody")

    @pytest.mark.needs("entries", "message_id", "compact")
    @pytest.mark.guarantee(G1, G2, G4, G5, G6, G7, G11)
    @suite_test
    async def test_retry_with_same_message_id_returns_same_entry(
            self, store: StoreFactory) -> None:
        """G6: a retry with an accounted-for message_id returns the existing entry, changes nothing.

        Troubleshooting: look the message_id up before writing (and under the
        same lock or transaction as the write); a covered message is still
        accounted for, so a retry after compaction must not append it again.
        """
        async with recorded(store) as s:
            m = Model()
            first = await m.append(s, "ann", "pay rent", message_id="req-1")
            await fill(s, m, "ann", 2)
            before = snapshot(await s.get_history("ann", 100))
            again = await m.append(s, "ann", "pay rent", message_id="req-1")
            expect(snapshot([again]) == snapshot([first]), G6,
                   "a retry returned a different entry than the first append", s.log)
            expect(snapshot(await s.get_history("ann", 100)) == before, G6,
                   "a retry with the same message_id changed the history", s.log)
            await check_user(s, m, "ann")
            # Once covered by a summary, the message is still accounted for.
            await fill(s, m, "ann", s.keep_last + 1, tag="later")
            summary = await s.compact("ann")
            expect(summary is not None and "req-1" in summary.covers, G7,
                   "compaction with more than keep_last live entries did not cover the oldest",
                   s.log)
            before = snapshot(await s.get_history("ann", 100))
            again = await m.append(s, "ann", "pay rent", message_id="req-1")
            expect(again.id == "req-1" and again.content == "pay rent", G6,
                   "a retry of a covered message returned another entry", s.log)
            expect(snapshot(await s.get_history("ann", 100)) == before, G6,
                   "a retry of a covered message changed the history (appended it again?)", s.log)
            await check_user(s, m, "ann")

    @pytest.mark.needs("message_id")
    @pytest.mark.guarantee(G1, G2, G4, G5, G6, G11)
    @suite_test
    async def test_conflicting_retry_raises_and_changes_nothing(
            self, store: StoreFactory) -> None:
        """G6: the same message_id with another role or content raises ValueError, changes nothing.

        Troubleshooting: compare role and content of the stored message before
        returning it; raise ValueError (not a backend error) on a mismatch, and
        write nothing.
        """
        await check_conflicting_retries(store)

    @pytest.mark.needs("entries", "message_id")
    @pytest.mark.guarantee(G1, G2, G4, G5, G6, G11)
    @suite_test
    async def test_message_ids_are_unique(self, store: StoreFactory) -> None:
        """G2: ids the store makes are unique, and distinct message_ids stay distinct entries.

        Troubleshooting: generate ids from a UUID or a sequence, never from the
        content or a timestamp; a caller's message_id is the id verbatim.
        """
        async with recorded(store) as s:
            m = Model()
            made = [(await m.append(s, "ann", "same words")).id for _ in range(5)]
            expect(len(set(made)) == 5, G2, f"store-made ids repeat: {made}", s.log)
            given = ["x", "X", "x ", "x:1", "x/1"]
            for i in given:
                await m.append(s, "ann", "same words", message_id=i)
            history = await s.get_history("ann", 100)
            expect(len(history) == 10, G2,
                   f"10 distinct appends gave {len(history)} live entries", s.log)
            await check_user(s, m, "ann")

    @pytest.mark.needs("entries", "compact")
    @pytest.mark.guarantee(G1, G2, G4, G5, G7, G11)
    @suite_test
    async def test_compact_returns_none_up_to_keep_last(self, store: StoreFactory) -> None:
        """G7: with at most keep_last live entries, compact returns None and changes nothing.

        Troubleshooting: compare the live count with ``keep_last`` before
        summarising; never write a summary that covers nothing.
        """
        async with recorded(store) as s:
            m = Model()
            expect(await s.compact("ann") is None, G7, "compact of an empty user is not None",
                   s.log)
            await fill(s, m, "ann", s.keep_last)
            before = snapshot(await s.get_history("ann", 100))
            expect(await s.compact("ann") is None, G7,
                   f"compact with exactly keep_last={s.keep_last} live entries is not None", s.log)
            expect(snapshot(await s.get_history("ann", 100)) == before, G7,
                   "compact that returned None changed the history", s.log)
            await check_user(s, m, "ann")

    @pytest.mark.needs("entries", "compact")
    @pytest.mark.guarantee(G1, G2, G4, G5, G7, G11)
    @suite_test
    async def test_compact_replaces_the_prefix_with_one_summary(
            self, store: StoreFactory) -> None:
        """G7: compact keeps the newest keep_last entries and puts one summary first.

        Troubleshooting: in one atomic step, write the summary (covers = every
        message id it replaces, including what an earlier summary covered, never
        a summary id; seq below every kept entry) and remove what it covers
        from every tier, the search index included, before returning.
        """
        async with recorded(store) as s:
            await check_compaction(s, Model())

    @pytest.mark.needs("entries", "compact", "search")
    @pytest.mark.guarantee(G1, G2, G4, G5, G7, G11)
    @suite_test
    async def test_search_never_returns_covered_entries(self, store: StoreFactory) -> None:
        """G4/G7: once compact returns, search never returns an entry it covered.

        Troubleshooting: delete covered entries from the search index inside
        compaction (before it returns), not in a background job; search may
        lag appends, never compaction.
        """
        async with recorded(store) as s:
            m = Model()
            keep = s.keep_last
            contents = [f"unique fact {i}: {w}" for i, w in
                        enumerate(["apples", "bridges", "comets"] + ["filler"] * keep)]
            for c in contents:
                await m.append(s, "ann", c)
            await search_finds(s, "ann", contents[0])  # index caught up before compaction
            summary = await s.compact("ann")
            assert summary is not None
            covered = set(summary.covers)
            for c in contents[:3]:
                hits = await s.search("ann", c, 5)
                bad = [h.id for h in hits if h.id in covered]
                expect(not bad, G4, f"search for {c!r} returned covered entries {bad} after "
                                    "compact returned", s.log)
            await check_user(s, m, "ann")

    @pytest.mark.needs("entries", "compact")
    @pytest.mark.guarantee(G1, G2, G3, G4, G5, G7, G11)
    @suite_test
    async def test_append_after_compact_is_not_covered(self, store: StoreFactory) -> None:
        """G7: an append that starts after compact returned stays live and outside that summary.

        Troubleshooting: a summary's covers are fixed when compaction commits;
        do not recompute them from "everything older than now" later.
        """
        async with recorded(store) as s:
            m = Model()
            await fill(s, m, "ann", s.keep_last + 2)
            summary = await s.compact("ann")
            assert summary is not None
            e = await m.append(s, "ann", "written after compaction")
            history = await s.get_history("ann", 100)
            expect(history[0].id == summary.id and e.id not in history[0].covers, G7,
                   "the summary covers an append that started after compact returned", s.log)
            expect(history[-1].id == e.id, G3, "the append after compact is not live", s.log)
            await check_user(s, m, "ann")

    @pytest.mark.needs("compact")
    @pytest.mark.guarantee(G1, G2, G3, G5, G7, G11)
    @suite_test
    async def test_compaction_keeps_every_acknowledged_message(
            self, store: StoreFactory) -> None:
        """G7/G1: after compact, the history is summaries, then the newest messages, none lost.

        Read the way SPEC.md's "Profiles" section reads a store without entry
        ids (and as the full contract implies): every acknowledged message is
        live, or older than the oldest live message and then covered by a
        summary at the front; an append after compact returned stays live.
        Troubleshooting: compaction must remove exactly what its summary
        replaces, read and rewrite the short-term list in one atomic step, and
        put the summary before every message it kept.
        """
        async with recorded(store) as s:
            m = Model()
            await fill(s, m, "ann", s.keep_last + 4)
            await s.compact("ann")
            await check_user(s, m, "ann")
            e = await m.append(s, "ann", "written after the first compaction")
            history = await s.get_history("ann", 100)
            expect(history and history[-1].id == e.id, G3,
                   "the append after compact is not the newest live entry", s.log)
            await fill(s, m, "ann", s.keep_last + 1, tag="later")
            await s.compact("ann")
            await check_user(s, m, "ann")

    @pytest.mark.needs("forget")
    @pytest.mark.guarantee(G1, G2, G4, G5, G6, G8, G9, G11)
    @suite_test
    async def test_forget_removes_everything(self, store: StoreFactory) -> None:
        """G8: after forget returns, no method returns anything written for that user before;
        and every other user reads exactly as just before the forget (G1, judged against
        that snapshot, so that an earlier loss cannot hide one the forget causes).

        Where the suite handed the store its engines, it also scans every key and row
        of them for the user (``forget_scan.py``): a row left behind fails G8, named.

        Troubleshooting: delete from every tier (short-term, archive, index,
        caches) before returning, and make a re-append with an old message_id a
        new message rather than a retry of a forgotten one.
        """
        async with recorded(store) as s:
            await check_forget(s, Model(), scan_after_forget)

    @pytest.mark.guarantee(G1, G2, G4, G5, G7, G8, G9, G11)
    @suite_test
    async def test_users_are_isolated(self, store: StoreFactory) -> None:
        """G9: no method called for one user returns, compacts or forgets another's entries.

        Troubleshooting: filter every query by the exact user id (equality,
        never a prefix or pattern) and keep per-user keys unambiguous.
        """
        async with recorded(store) as s:
            await check_isolation(s, Model())

    @pytest.mark.needs("consistent")
    @pytest.mark.guarantee(G1, G2, G4, G5, G7, G8, G10, G11)
    @suite_test
    async def test_consistent_and_recoverable_when_quiescent(self, store: StoreFactory) -> None:
        """G11/G10: consistent_state is truthy after every step; recover() is safe any time.

        Troubleshooting: a falsy report names the backend and entry that
        differ; recover() must be idempotent and must not change a healthy
        user's state.
        """
        async with recorded(store) as s:
            m = Model()
            await s.recover()
            await fill(s, m, "ann", s.keep_last + 1)
            await check_user(s, m, "ann")
            before = snapshot(await s.get_history("ann", 100))
            await s.recover()
            await s.recover()
            expect(snapshot(await s.get_history("ann", 100)) == before, G10,
                   "recover() changed a healthy user's history", s.log)
            if s.can("compact"):
                await s.compact("ann")
                await check_user(s, m, "ann")
            if s.can("forget"):
                await s.forget("ann")
                m.forgot("ann")
            await s.recover()
            await check_user(s, m, "ann")

    @pytest.mark.guarantee(G1, G5, G12)
    @suite_test
    async def test_every_operation_answers_within_a_bound(self, store: StoreFactory) -> None:
        """G12: every method of a healthy store returns or raises within a bound, never hangs.

        The bound is ``--nomnesia-timeout``'s per-operation share (30 s by
        default); the whole-test timeout catches hangs everywhere else.
        Troubleshooting: put a timeout on every backend call (connect, query,
        lock wait) and turn its expiry into an error that names the backend.
        """
        async with recorded(store) as s:
            await check_bounded_calls(s, Model())

    @pytest.mark.guarantee(none="nomnesia's own failure-message format, not a store")
    def test_guarantee_names_are_stable(self) -> None:
        """Failure messages start with ``str(Guarantee)``; tools parse them.

        Troubleshooting: this only fails if nomnesia itself is broken.
        """
        assert str(Guarantee.ATOMIC_COMPACTION) == "G7 atomic compaction"
        with pytest.raises(AssertionError, match=r"^G6 idempotent appends: x"):
            expect(False, Guarantee.IDEMPOTENT_APPENDS, "x")
