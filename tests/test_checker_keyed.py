"""The keyed checker on hand-written histories: one per anomaly, and legal ones that must pass.

Entries are known by content (``view.KeyedView``): a read returns contents in
order, and an entry the suite never wrote is a summary. Each anomaly test names
the guarantee the checker must report; each legal history uses a freedom SPEC.md
grants, which the checker must not flag.
"""

from __future__ import annotations

from typing import Any

from nomnesia.suite.contract import Guarantee
from nomnesia.suite.core.checker_keyed import check_keyed
from nomnesia.suite.core.history import Op, Rec


class H:
    """Ops by hand; every op is one millisecond after the previous."""

    def __init__(self) -> None:
        self.ops: list[Op] = []

    def op(self, p: int, type_: str, f: str, value: Any = None, user: str = "u",
           error: str | None = None) -> None:
        self.ops.append(Op(len(self.ops), p, type_, f, user, value, len(self.ops) * 10**6,
                           error))

    def start_append(self, p: int, content: str, user: str = "u") -> None:
        self.op(p, "invoke", "append", ("user", content, None), user)

    def end_append(self, p: int, content: str, user: str = "u") -> None:
        self.op(p, "ok", "append", Rec(content, -1, "user", (), user), user)

    def append(self, p: int, content: str, user: str = "u") -> None:
        self.start_append(p, content, user)
        self.end_append(p, content, user)

    def read(self, p: int, limit: int, *contents: str, user: str = "u") -> None:
        self.op(p, "invoke", "read", limit, user)
        entries = tuple(Rec(f"summary#{c}" if c.startswith("S") else c, n,
                            "summary" if c.startswith("S") else "user", (), user)
                        for n, c in enumerate(contents))
        self.op(p, "ok", "read", entries, user)

    def compact(self, p: int, user: str = "u", *, done: bool = True) -> None:
        self.op(p, "invoke", "compact", None, user)
        if done:
            self.op(p, "ok", "compact", None, user)

    def end_compact(self, p: int, user: str = "u") -> None:
        self.op(p, "ok", "compact", None, user)

    def check(self, **kw: Any) -> list[Any]:
        return check_keyed(self.ops, recover=kw.get("recover", False),
                           compact=kw.get("compact", True))


def kinds(anomalies: list[Any]) -> set[tuple[Guarantee, str]]:
    return {(a.guarantee, a.kind.split(":")[0]) for a in anomalies}


def test_sequential_history_with_a_compaction_is_legal() -> None:
    h = H()
    for c in "abcdef":
        h.append(0, c)
    h.read(0, 100, "a", "b", "c", "d", "e", "f")
    h.compact(0)
    h.read(0, 100, "S1", "d", "e", "f")
    h.read(0, 2, "e", "f")
    h.append(0, "g")
    h.read(0, 100, "S1", "d", "e", "f", "g")
    assert h.check() == []


def test_a_lost_acknowledged_append_is_g1() -> None:
    h = H()
    h.append(0, "a")
    h.append(0, "b")
    h.read(0, 10, "a")
    assert (Guarantee.DURABILITY, "missing") in kinds(h.check())


def test_a_read_that_misses_what_a_later_read_shows_is_g3() -> None:
    h = H()
    h.append(0, "a")
    h.append(0, "b")
    h.read(0, 10, "a")
    h.read(0, 10, "a", "b")
    assert (Guarantee.READ_YOUR_WRITES, "missing") in kinds(h.check())


def test_two_reads_that_disagree_on_the_order_are_g5() -> None:
    h = H()
    h.start_append(0, "a")
    h.start_append(1, "b")
    h.end_append(0, "a")
    h.end_append(1, "b")
    h.read(2, 10, "a", "b")
    h.read(2, 10, "b", "a")
    assert (Guarantee.ORDER, "flip") in kinds(h.check())


def test_concurrent_appends_in_either_order_are_legal() -> None:
    h = H()
    h.start_append(0, "a")
    h.start_append(1, "b")
    h.end_append(1, "b")
    h.end_append(0, "a")
    h.read(2, 10, "b", "a")
    h.read(2, 10, "b", "a")
    assert h.check() == []


def test_an_order_against_real_time_is_g5() -> None:
    h = H()
    h.append(0, "a")
    h.append(0, "b")
    h.read(1, 10, "b", "a")
    assert (Guarantee.ORDER, "real-time") in kinds(h.check())


def test_the_stale_compaction_that_loses_a_concurrent_append_is_g7() -> None:
    h = H()
    for c in "abcde":
        h.append(0, c)
    h.compact(1, done=False)  # reads a..e, then awaits the summarizer
    h.append(0, "f")           # lands meanwhile, acknowledged
    h.end_compact(1)           # rewrites [S, b, c, d, e] from the stale read
    h.read(0, 100, "S1", "b", "c", "d", "e")
    assert (Guarantee.ATOMIC_COMPACTION, "lost") in kinds(h.check())


def test_a_summary_after_a_message_is_g7_and_one_without_compaction_g2() -> None:
    h = H()
    h.append(0, "a")
    h.read(0, 10, "S1", "a")
    assert (Guarantee.EXACTLY_ONCE, "phantom") in kinds(h.check())
    h.compact(0)
    h.read(0, 10, "a", "S1")
    assert (Guarantee.ATOMIC_COMPACTION, "shape") in kinds(h.check())


def test_a_covered_message_live_again_is_g7() -> None:
    h = H()
    for c in "abcd":
        h.append(0, c)
    h.compact(0)
    h.read(0, 10, "S1", "c", "d")
    h.read(0, 10, "S1", "a", "c", "d")
    assert (Guarantee.ATOMIC_COMPACTION, "uncovered") in kinds(h.check())


def test_another_users_content_is_g9() -> None:
    h = H()
    h.append(0, "ann's secret", user="ann")
    h.append(0, "bob's note", user="bob")
    h.read(0, 10, "bob's note", "ann's secret", user="bob")
    assert (Guarantee.ISOLATION, "foreign") in kinds(h.check())


def test_a_read_may_leave_out_what_its_limit_leaves_out() -> None:
    h = H()
    for c in "abcdef":
        h.append(0, c)
    h.read(0, 3, "d", "e", "f")
    assert h.check() == []


def test_without_recover_a_store_must_be_whole_once_the_interrupted_call_returned() -> None:
    h = H()
    h.append(0, "a")
    h.start_append(0, "b")
    h.op(0, "info", "append", error="CancelledError")
    h.read(0, 10)  # "a" is gone, and the cut append was not "a"
    assert (Guarantee.DURABILITY, "missing") in kinds(h.check(recover=False))


def test_every_anomaly_is_shrunk_to_the_calls_that_show_it() -> None:
    h = H()
    for c in "abcdefgh":
        h.append(0, c)
    h.read(0, 100, "a", "b", "c", "d", "e", "f", "g")
    (anomaly,) = h.check()
    assert anomaly.guarantee is Guarantee.DURABILITY
    calls = {(op.f, op.type) for op in anomaly.ops}
    assert calls == {("append", "invoke"), ("append", "ok"), ("read", "invoke"),
                     ("read", "ok")}
