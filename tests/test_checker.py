"""The history checker on hand-written histories: one per anomaly, and legal ones that must pass.

Each anomaly test names the guarantee and the exact ops the checker must
blame: the smallest part of the history that shows the bug.
"""

from __future__ import annotations

from typing import Any

import pytest

from nomnesia.suite.contract import Guarantee
from nomnesia.suite.core.checker import Anomaly, check
from nomnesia.suite.core.history import History, Op, Rec

MS = 1_000_000


def m(entry_id: str, seq: int, user: str = "u") -> Rec:
    return Rec(entry_id, seq, "user", (), user)


def s(entry_id: str, seq: int, *covers: str, user: str = "u") -> Rec:
    return Rec(entry_id, seq, "summary", tuple(covers), user)


class H:
    """A tiny DSL: ``inv``/``ok``/``fail``/``info`` return the op index; time is 1 ms per op."""

    def __init__(self) -> None:
        self.ops: list[Op] = []

    def op(self, p: int, type_: str, f: str, value: Any = None, user: str = "u",
           t: int | None = None, error: str | None = None) -> int:
        i = len(self.ops)
        self.ops.append(Op(i, p, type_, f, user, value, i * MS if t is None else t, error))
        return i

    def inv(self, p: int, f: str, value: Any = None, user: str = "u", t: int | None = None) -> int:
        return self.op(p, "invoke", f, value, user, t)

    def ok(self, p: int, f: str, value: Any = None, user: str = "u", t: int | None = None) -> int:
        return self.op(p, "ok", f, value, user, t)

    def fail(self, p: int, f: str, user: str = "u") -> int:
        return self.op(p, "fail", f, None, user, error="ValueError: rejected")

    def info(self, p: int, f: str, user: str = "u") -> int:
        return self.op(p, "info", f, None, user, error="BackendTimeout: slow")

    def append(self, p: int, entry: Rec, mid: str | None = None, content: str | None = None,
               user: str = "u") -> tuple[int, int]:
        args = ("user", content or f"content of {entry.id}", mid)
        return self.inv(p, "append", args, user), self.ok(p, "append", entry, user)

    def read(self, p: int, limit: int, *entries: Rec, user: str = "u") -> tuple[int, int]:
        return self.inv(p, "read", limit, user), self.ok(p, "read", tuple(entries), user)

    def search(self, p: int, query: str, k: int, *entries: Rec,
               user: str = "u") -> tuple[int, int]:
        return (self.inv(p, "search", (query, k), user),
                self.ok(p, "search", tuple(entries), user))

    def compact(self, p: int, summary: Rec | None, user: str = "u") -> tuple[int, int]:
        return self.inv(p, "compact", None, user), self.ok(p, "compact", summary, user)

    def forget(self, p: int, user: str = "u") -> tuple[int, int]:
        return self.inv(p, "forget", None, user), self.ok(p, "forget", None, user)

    def check(self, keep_last: int = 2, staleness: float = 0.0) -> list[Anomaly]:
        return check(self.ops, keep_last=keep_last, search_staleness=staleness)


def one(found: list[Anomaly], guarantee: Guarantee, kind: str) -> Anomaly:
    """The anomaly of that guarantee and kind (prefix before ':'), asserting there is one."""
    hits = [a for a in found if a.guarantee is guarantee and a.kind.split(":")[0] == kind]
    assert hits, f"no {guarantee} {kind} among:\n" + "\n".join(map(str, found))
    return hits[0]


def indexes(a: Anomaly) -> list[int]:
    return [op.index for op in a.ops]


# ------------------------------------------------------------------------- anomalies


def test_lost_acknowledged_append_is_durability() -> None:
    h = H()
    a = h.append(0, m("a", 1))
    h.append(1, m("b", 2))
    r = h.read(0, 10, m("b", 2))
    found = one(h.check(), Guarantee.DURABILITY, "missing")
    assert indexes(found) == [*a, *r]
    assert str(found).startswith("G1 durability: a was acknowledged")


def test_read_that_lags_is_read_your_writes() -> None:
    h = H()
    a = h.append(0, m("a", 1))
    r = h.read(1, 10)
    h.read(1, 10, m("a", 1))
    assert indexes(one(h.check(), Guarantee.READ_YOUR_WRITES, "missing")) == [*a, *r]


def test_window_read_must_include_newer_acknowledged_entry() -> None:
    h = H()
    h.append(0, m("a", 1))
    b = h.append(0, m("b", 2))
    h.append(0, m("c", 3))
    r = h.read(0, 2, m("a", 1), m("c", 3))  # limit 2: c and b are the newest two
    found = h.check()
    assert indexes(one(found, Guarantee.DURABILITY, "missing")) == [*b, *r]


def test_read_seen_entry_must_stay() -> None:
    h = H()
    h.inv(0, "append", ("user", "x", None))  # never returns: indeterminate
    seen = h.read(1, 10, m("a", 1))
    gone = h.read(1, 10)
    assert indexes(one(h.check(), Guarantee.DURABILITY, "missing")) == [*seen, *gone]


def test_phantom_entry() -> None:
    h = H()
    r = h.read(0, 10, m("ghost", 1))
    found = one(h.check(), Guarantee.EXACTLY_ONCE, "phantom")
    assert indexes(found) == list(r)
    assert "no append or compact produced" in found.message


def test_duplicate_in_a_read() -> None:
    h = H()
    h.append(0, m("a", 1))
    r = h.read(0, 10, m("a", 1), m("a", 1))
    assert indexes(one(h.check(), Guarantee.EXACTLY_ONCE, "duplicate"))[-2:] == list(r)


def test_duplicate_after_retry_is_idempotent_appends() -> None:
    h = H()
    h.append(0, m("k", 1), mid="k")
    h.append(0, m("k", 2), mid="k")
    h.read(0, 10, m("k", 1), m("k", 2))
    found = h.check()
    one(found, Guarantee.IDEMPOTENT_APPENDS, "duplicate")
    assert indexes(one(found, Guarantee.IDEMPOTENT_APPENDS, "retry-seq")) == [0, 1, 2, 3]


def test_conflicting_retry_must_be_rejected() -> None:
    h = H()
    h.append(0, m("k", 1), mid="k", content="one")
    h.append(0, m("k", 1), mid="k", content="two")
    assert indexes(one(h.check(), Guarantee.IDEMPOTENT_APPENDS, "conflict")) == [0, 1, 2, 3]


def test_read_out_of_seq_order() -> None:
    h = H()
    h.append(0, m("a", 1))
    h.append(0, m("b", 2))
    r = h.read(0, 10, m("b", 2), m("a", 1))
    assert indexes(one(h.check(), Guarantee.ORDER, "read-order")) == list(r)


def test_seq_must_follow_real_time() -> None:
    h = H()
    a = h.append(0, m("a", 5))
    b = h.append(1, m("b", 3))
    found = one(h.check(), Guarantee.ORDER, "real-time")
    assert indexes(found) == [*a, *b]
    assert str(found).startswith("G5 order: append 0 returned a@5 before append 2 started")


def test_reads_disagree_on_the_order() -> None:
    h = H()
    h.append(0, m("a", 1))
    h.append(0, m("b", 2))
    r1 = h.read(0, 10, m("a", 1), m("b", 2))
    r2 = h.read(0, 10, m("b", 1), m("a", 2))  # each sorted, but a store renumbered them
    assert indexes(one(h.check(), Guarantee.ORDER, "flip")) == [*r1, *r2]


def test_summary_beside_what_it_covers() -> None:
    h = H()
    h.append(0, m("a", 1))
    h.append(0, m("b", 2))
    h.append(0, m("c", 3))
    h.compact(0, s("s1", 1, "a"))
    r = h.read(0, 10, s("s1", 1, "a"), m("a", 1), m("b", 2), m("c", 3))
    found = one(h.check(), Guarantee.ATOMIC_COMPACTION, "both")
    assert indexes(found) == list(r)  # the read alone shows it; the compaction is not needed
    assert str(found).startswith("G7 atomic compaction: read 8 (limit 10) sees summary s1 "
                                 "and the entry a")


def test_read_during_compaction_sees_a_hole() -> None:
    h = H()
    a = h.append(0, m("a", 1))
    h.append(0, m("b", 2))
    h.append(0, m("c", 3))
    k0 = h.inv(1, "compact")
    r = h.read(2, 10, m("c", 3))
    k1 = h.ok(1, "compact", s("s1", 2, "a", "b"))
    found = one(h.check(), Guarantee.ATOMIC_COMPACTION, "missing")
    assert indexes(found) == [*a, k0, *r, k1]


def test_covered_entry_comes_back() -> None:
    h = H()
    for i, x in enumerate("abc", 1):
        h.append(0, m(x, i))
    k = h.compact(0, s("s1", 1, "a"))
    r = h.read(0, 10, m("a", 1), m("b", 2), m("c", 3))
    assert indexes(one(h.check(), Guarantee.ATOMIC_COMPACTION, "uncovered")) == [*k, *r]


def test_summary_covers_a_later_append() -> None:
    h = H()
    h.append(0, m("a", 1))
    k = h.compact(0, s("s1", 1, "a", "d"))
    d = h.append(0, m("d", 2))
    assert indexes(one(h.check(), Guarantee.ATOMIC_COMPACTION, "late-cover")) == [*k, *d]


def test_covers_must_be_a_prefix() -> None:
    h = H()
    a = h.append(0, m("a", 1))
    b = h.append(0, m("b", 2))
    h.append(0, m("c", 3))
    k = h.compact(0, s("s1", 0, "b"))
    r = h.read(0, 10, s("s1", 0, "b"), m("a", 1), m("c", 3))
    assert indexes(one(h.check(), Guarantee.ATOMIC_COMPACTION, "prefix")) == [*a, *b, *k, *r]


def test_summary_must_come_first() -> None:
    h = H()
    h.append(0, m("a", 1))
    h.append(0, m("b", 2))
    h.compact(0, s("s1", 3, "a"))
    r = h.read(0, 10, m("b", 2), s("s1", 3, "a"))
    assert indexes(one(h.check(), Guarantee.ATOMIC_COMPACTION, "shape")) == list(r)


def test_summary_must_not_cover_a_summary() -> None:
    h = H()
    for i, x in enumerate("abcd", 1):
        h.append(0, m(x, i))
    k1 = h.compact(0, s("s1", 1, "a"))
    h.compact(0, s("s2", 2, "s1", "b"))
    r = h.read(0, 10, s("s2", 2, "s1", "b"), m("c", 3), m("d", 4))
    found = one(h.check(), Guarantee.ATOMIC_COMPACTION, "nested")
    assert indexes(found) == [*k1, *r]


def test_entry_of_another_user() -> None:
    h = H()
    h.append(0, m("x", 1, user="anna"), user="anna")
    r = h.search(0, "hello", 5, m("x", 1, user="anna"), user="ann")
    found = one(h.check(), Guarantee.ISOLATION, "foreign")
    assert indexes(found) == list(r)
    assert "'anna'" in found.message


def test_id_of_another_user_under_the_right_user_id() -> None:
    h = H()
    h.append(0, m("x", 1, user="anna"), user="anna")
    r = h.read(0, 10, m("x", 1, user="ann"), user="ann")
    assert indexes(one(h.check(), Guarantee.ISOLATION, "phantom")) == list(r)


def test_memory_survives_forget() -> None:
    h = H()
    a = h.append(0, m("a", 1))
    f = h.forget(1)
    r = h.read(0, 10, m("a", 1))
    assert indexes(one(h.check(), Guarantee.FORGET, "forgotten")) == [*a, *f, *r]


def test_search_returns_a_covered_entry() -> None:
    h = H()
    for i, x in enumerate("abc", 1):
        h.append(0, m(x, i))
    k = h.compact(0, s("s1", 1, "a"))
    q = h.search(0, "content of a", 5, m("a", 1))
    assert indexes(one(h.check(), Guarantee.SEARCH, "covered")) == [*k, *q]


def test_search_lags_beyond_staleness() -> None:
    h = H()
    a = h.append(0, m("a", 1), content="hello there")
    q = h.search(0, "hello there", 5)
    # 1 ms after the append returned: a miss with staleness 0, none with 10 ms.
    assert indexes(one(h.check(), Guarantee.SEARCH, "search-miss")) == [*a, *q]
    assert h.check(staleness=0.01) == []


def test_search_returns_more_than_k() -> None:
    h = H()
    h.append(0, m("a", 1))
    h.append(0, m("b", 2))
    q = h.search(0, "x", 1, m("a", 1), m("b", 2))
    assert indexes(one(h.check(), Guarantee.SEARCH, "too-many")) == list(q)


def test_read_returns_more_than_limit() -> None:
    h = H()
    h.append(0, m("a", 1))
    h.append(0, m("b", 2))
    r = h.read(0, 1, m("a", 1), m("b", 2))
    assert indexes(one(h.check(), Guarantee.READ_YOUR_WRITES, "too-many")) == list(r)


def test_rejected_append_wrote_something() -> None:
    h = H()
    i = h.inv(0, "append", ("user", "x", "bad"))
    j = h.fail(0, "append")
    r = h.read(0, 10, m("bad", 1))
    assert indexes(one(h.check(), Guarantee.INPUTS, "phantom")) == [i, j, *r]


def test_minimisation_drops_bystanders() -> None:
    h = H()
    a = h.append(0, m("a", 1))
    h.inv(1, "append", ("user", "b", None))  # in flight throughout: not evidence
    h.read(2, 10, m("a", 1))  # also shows a: a second witness, not needed
    r = h.read(2, 10)
    found = one(h.check(), Guarantee.DURABILITY, "missing")
    assert indexes(found) == [*a, *r]


# ------------------------------------------------------------------------- legal histories


def test_concurrent_append_may_or_may_not_be_covered() -> None:
    for covered in (True, False):
        h = H()
        h.append(0, m("a", 1))
        h.append(0, m("b", 2))
        h.inv(0, "append", ("user", "content of c", None))
        h.inv(1, "compact")
        h.read(2, 10, m("a", 1), m("b", 2))  # c not yet, compaction not yet
        h.ok(0, "append", m("c", 3))
        summary = s("s1", 3, "a", "b", "c") if covered else s("s1", 1, "a")
        h.ok(1, "compact", summary)
        rest = [] if covered else [m("b", 2), m("c", 3)]
        h.read(2, 10, summary, *rest)
        assert h.check(keep_last=0 if covered else 2) == []


def test_concurrent_read_may_see_either_view() -> None:
    h = H()
    for i, x in enumerate("abc", 1):
        h.append(0, m(x, i))
    h.inv(1, "compact")
    h.read(2, 10, m("a", 1), m("b", 2), m("c", 3))
    h.read(2, 10, s("s1", 1, "a"), m("b", 2), m("c", 3))
    h.ok(1, "compact", s("s1", 1, "a"))
    h.read(2, 2, m("b", 2), m("c", 3))  # a window: the summary is older than the newest two
    assert h.check() == []


def test_summary_accounts_for_what_it_covers() -> None:
    h = H()
    for i, x in enumerate("abcd", 1):
        h.append(0, m(x, i))
    h.compact(0, s("s1", 2, "a", "b"))
    h.compact(0, s("s2", 3, "a", "b", "c"))
    h.read(0, 10, s("s2", 3, "a", "b", "c"), m("d", 4))
    h.read(0, 1, m("d", 4))
    h.search(0, "content of d", 5, m("d", 4), s("s2", 3, "a", "b", "c"))
    assert h.check(keep_last=1) == []


def test_search_may_return_covered_entry_until_the_compaction_returns() -> None:
    h = H()
    for i, x in enumerate("abc", 1):
        h.append(0, m(x, i))
    h.inv(1, "compact")
    h.read(2, 10, s("s1", 1, "a"), m("b", 2), m("c", 3))  # the new view is in place...
    h.search(2, "content of a", 5, m("a", 1))  # ...but the index may catch up until it returns
    h.ok(1, "compact", s("s1", 1, "a"))
    assert h.check() == []


def test_indeterminate_appends_may_appear_once_or_never() -> None:
    h = H()
    h.inv(0, "append", ("user", "x", None))
    h.info(0, "append")
    h.inv(0, "append", ("user", "y", "y"))
    h.info(0, "append")
    h.inv(9, "recover", None, user="")
    h.ok(9, "recover", None, user="")
    h.read(1, 10, m("store-made", 1))  # the first one took effect, the second did not
    h.read(1, 10, m("store-made", 1))
    assert h.check() == []


def test_anything_goes_for_reads_between_interruption_and_recover() -> None:
    h = H()
    h.append(0, m("a", 1))
    h.inv(0, "compact")
    h.info(0, "compact")
    h.read(1, 10)  # half-finished compaction visible: allowed until recover() (G10)
    h.inv(9, "recover", None, user="")
    h.ok(9, "recover", None, user="")
    h.read(1, 10, m("a", 1))
    assert h.check() == []


def test_forget_and_concurrent_appends() -> None:
    h = H()
    h.append(0, m("a", 1))
    h.inv(1, "forget")
    h.inv(0, "append", ("user", "content of b", None))
    h.ok(0, "append", m("b", 2))
    h.ok(1, "forget")
    h.read(0, 10, m("b", 2))  # b may survive: it ran concurrently with forget
    h.append(0, m("a", 1), mid="a")  # an id reused after forget is a new entry
    h.read(0, 10, m("b", 2), m("a", 3))
    assert h.check() == []


def test_retries_and_conflicts_done_right() -> None:
    h = H()
    h.append(0, m("k", 1), mid="k", content="one")
    h.append(0, m("k", 1), mid="k", content="one")
    h.inv(0, "append", ("user", "two", "k"))
    h.fail(0, "append")
    h.read(0, 10, m("k", 1))
    assert h.check() == []


def test_gaps_in_seq_and_any_id_format() -> None:
    h = H()
    h.append(0, m("urn:x/1", 10))
    h.append(0, m("{'two'}", 250))
    h.read(0, 10, m("urn:x/1", 10), m("{'two'}", 250))
    h.read(0, 10, m("urn:x/1", 11), m("{'two'}", 300))  # renumbered, same order: allowed
    assert h.check() == []


def test_search_within_staleness() -> None:
    h = H()
    h.append(0, m("a", 1), content="hello")
    h.inv(0, "search", ("hello", 5), t=1 * MS + 40 * MS)
    h.ok(0, "search", (), t=1 * MS + 41 * MS)
    assert h.check(staleness=0.05) == []
    assert h.check(staleness=0.01) != []


# ------------------------------------------------------------------------- the record


@pytest.mark.parametrize("keep_last", [1, 4])
def test_json_round_trip_and_printing(keep_last: int) -> None:
    h = H()
    h.append(0, m("a", 1), mid="a")
    h.compact(0, s("s1", 1, "a"))
    h.search(0, "q", 3, s("s1", 1, "a"))
    history = History(h.ops)
    again = History.loads(history.dumps())
    assert again.ops == history.ops
    assert check(again, keep_last=keep_last, search_staleness=0) == []
    lines = str(history).splitlines()
    assert lines[1].split() == ["1", "p0", "ok", "append", "'u'", "a@1"]
    assert lines[3].endswith("s1@1{a}")


async def test_recorder_outcomes() -> None:
    history = History()

    class Entry:
        id, user_id, seq, role, content, covers = "a", "u", 1, "user", "x", ()

    async with history.record(0, "append", "u", ("user", "x", None)) as call:
        call.set(Entry())
    with pytest.raises(ValueError):
        async with history.record(0, "append", "u", ("user", "x", None)):
            raise ValueError("bad role")
    with pytest.raises(RuntimeError):
        async with history.record(1, "read", "u", 10):
            raise RuntimeError("backend down")
    assert [op.type for op in history] == ["invoke", "ok", "invoke", "fail", "invoke", "info"]
    assert history.ops[1].value == Rec("a", 1, "user", (), "u")
    assert history.ops[5].error == "RuntimeError: backend down"


async def test_logged_store_records_into_one_history_the_checker_reads() -> None:
    """Concurrent suite calls get their own processes, so the checker and the log pair them."""
    import asyncio

    from nomnesia.suite.core.recorder import LoggedStore

    class Slow:
        keep_last, search_staleness = 2, 0.0

        def __init__(self) -> None:
            self.n = 0

        async def append_message(self, user_id: str, role: str, content: str, *,
                                 message_id: str | None = None) -> Any:
            self.n += 1
            seq = self.n
            await asyncio.sleep(0)  # scheduling only: let the other call start

            class E:
                id, user_id, role, content, covers = f"e{seq}", "u", "user", "x" * 70_000, ()

            E.seq = seq  # type: ignore[attr-defined]
            return E()

    s = LoggedStore(Slow())
    await asyncio.gather(s.append_message("u", "user", "a"), s.append_message("u", "user", "b"))
    assert [(op.process, op.type) for op in s.log] == [
        (0, "invoke"), (1, "invoke"), (0, "ok"), (1, "ok")]
    assert s.log.ops[2].value == Rec("e1", 1, "user", (), "u")
    assert check(s.log, keep_last=2, search_staleness=0) == []
    text = s.log.format()
    assert "    1. append_message('u', 'user', 'a') -> <user seq=1 id='e1' 'xxx" in text, text
    assert "...(70000 chars)>" in text and len(text) < 400, text
