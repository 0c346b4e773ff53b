"""One verdict on one history: the suite's checkers, with what the store declared.

The suite's own tests, ``nomnesia.testing.check`` (a team's own scenario) and ``nomnesia
check FILE`` (a history another tool wrote) all judge a history the same way: by id with
``checker.check`` (the full profile), by content with ``checker_keyed.check_keyed`` (stores
known by role and content, such as the seed's). A :class:`Verdict` keeps every anomaly,
each naming its guarantee and carrying the smallest part of the history that shows it
(the checkers shrink it), and reads as text; ``report/history_page.py`` draws it as a page.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..contract import Guarantee
from .checker import check as check_full
from .checker_common import Anomaly
from .checker_keyed import check_keyed
from .history import History, Op

__all__ = ["Verdict", "judge"]


@dataclass(repr=False)
class Verdict:
    """What the checker found in one history (``anomalies`` empty: some legal execution of
    SPEC.md explains it all)."""

    anomalies: list[Anomaly]
    history: History
    profile: str = "full"
    keep_last: int | None = None
    search_staleness: float = 0.0
    source: str = ""
    notes: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        return f"<Verdict {self.headline()}>"

    @property
    def ok(self) -> bool:
        return not self.anomalies

    def __bool__(self) -> bool:
        """Truthy when no anomaly was found: ``assert verdict, str(verdict)`` is the idiom."""
        return self.ok

    @property
    def guarantees(self) -> list[Guarantee]:
        """The guarantees broken, each once, by number."""
        return sorted({a.guarantee for a in self.anomalies}, key=lambda g: g.number)

    def headline(self) -> str:
        calls = sum(1 for op in self.history.ops if op.type == "invoke" and op.f != "note")
        what = f"{self.source}: " if self.source else ""
        declared = f"profile {self.profile}" + (
            f", keep_last {self.keep_last}" if self.keep_last is not None else "") + (
            f", search_staleness {self.search_staleness:g} s" if self.search_staleness else "")
        if self.ok:
            return f"{what}no anomaly in {calls} calls ({declared})"
        broken = ", ".join(str(g) for g in self.guarantees)
        n = len(self.anomalies)
        return (f"{what}{n} {'anomaly' if n == 1 else 'anomalies'} in {calls} calls "
                f"({declared}); broken: {broken}")

    def __str__(self) -> str:
        lines = [self.headline(), *self.notes]
        for k, anomaly in enumerate(self.anomalies, start=1):
            lines.append(f"\n{k}. {anomaly.guarantee}: {anomaly.message}")
            lines.append("   the smallest history that shows it:")
            lines += [f"   {op}" for op in anomaly.ops]
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        """What the report page and tools read: anomalies as in the suite's evidence."""
        return {"ok": self.ok, "profile": self.profile, "keep_last": self.keep_last,
                "search_staleness": self.search_staleness, "source": self.source,
                "anomalies": [{"guarantee": str(a.guarantee), "key": f"G{a.guarantee.number}",
                               "kind": a.kind, "message": a.message,
                               "text": str(a), "ops": [op.index for op in a.ops]}
                              for a in self.anomalies]}


def judge(history: History | Iterable[Op], *, keep_last: int | None = None,
          search_staleness: float | None = None, profile: str = "full",
          compact: bool = True, recover: bool = True, source: str = "") -> Verdict:
    """Judge ``history`` by ``profile`` (``full``: entries known by id; ``keyed``: by
    content). ``keep_last`` is needed, for the full profile, only where the history compacts.
    """
    log = history if isinstance(history, History) else History(history)
    ops: Sequence[Op] = log.ops
    staleness = 0.0 if search_staleness is None else float(search_staleness)
    if profile == "keyed":
        found = check_keyed(ops, recover=recover, compact=compact, search_staleness=staleness)
    elif profile == "full":
        compacts = any(op.f == "compact" and op.type == "invoke" for op in ops)
        if keep_last is None and compacts:
            raise ValueError("the history compacts: say the store's keep_last (the header's "
                             "keep_last, or check(..., keep_last=N))")
        found = check_full(ops, keep_last=keep_last or 1, search_staleness=staleness)
    else:
        raise ValueError(f"profile is 'full' or 'keyed', not {profile!r}")
    return Verdict(found, log, profile, keep_last, staleness, source)
