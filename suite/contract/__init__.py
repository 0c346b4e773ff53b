"""The memory-store contract of SPEC.md, in code.

Everything a store author or the suite needs to agree on lives here: the
protocol, the entry type, the consistency report and the names of the
guarantees. The suite reads entries only through the attributes SPEC.md lists,
so stores may return their own entry type; ``Entry`` is the one nomnesia's own
stores use.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

ROLES: frozenset[str] = frozenset({"user", "assistant", "system", "tool"})
"""Roles a caller may append; ``summary`` is written only by ``compact``."""

SUMMARY_ROLE = "summary"
MAX_USER_ID = 256
MAX_CONTENT = 65_536
MAX_MESSAGE_ID = 128


class Guarantee(enum.Enum):
    """The numbered guarantees of SPEC.md.

    Every suite failure message starts with ``str(guarantee)`` (for example
    ``G7 atomic compaction``) so that a red test says which promise broke.
    """

    DURABILITY = (1, "durability")
    EXACTLY_ONCE = (2, "exactly once")
    READ_YOUR_WRITES = (3, "read your writes")
    SEARCH = (4, "search")
    ORDER = (5, "order")
    IDEMPOTENT_APPENDS = (6, "idempotent appends")
    ATOMIC_COMPACTION = (7, "atomic compaction")
    FORGET = (8, "forget")
    ISOLATION = (9, "isolation")
    INTERRUPTION = (10, "interruption")
    QUIESCENT_CONSISTENCY = (11, "quiescent consistency")
    ERRORS = (12, "errors")
    # Not numbered in SPEC.md, but a section of its own ("Inputs").
    INPUTS = (0, "inputs")

    @property
    def number(self) -> int:
        return int(self.value[0])

    @property
    def title(self) -> str:
        return str(self.value[1])

    def __str__(self) -> str:
        return f"G{self.number} {self.title}" if self.number else "Inputs"


# The guarantees by their SPEC.md numbers: the one set of names the suite's checks
# (``expect(ok, G7, ...)``) and its declarations (``@pytest.mark.guarantee(G7)``) use.
G1 = Guarantee.DURABILITY
G2 = Guarantee.EXACTLY_ONCE
G3 = Guarantee.READ_YOUR_WRITES
G4 = Guarantee.SEARCH
G5 = Guarantee.ORDER
G6 = Guarantee.IDEMPOTENT_APPENDS
G7 = Guarantee.ATOMIC_COMPACTION
G8 = Guarantee.FORGET
G9 = Guarantee.ISOLATION
G10 = Guarantee.INTERRUPTION
G11 = Guarantee.QUIESCENT_CONSISTENCY
G12 = Guarantee.ERRORS
INPUTS = Guarantee.INPUTS
"""SPEC.md's Inputs section: valid values of any shape are accepted, invalid ones change nothing."""


@runtime_checkable
class EntryLike(Protocol):
    """What the suite reads of an entry: exactly the attributes SPEC.md names."""

    @property
    def id(self) -> str: ...
    @property
    def user_id(self) -> str: ...
    @property
    def seq(self) -> int: ...
    @property
    def role(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def covers(self) -> tuple[str, ...]: ...


@dataclass(frozen=True, slots=True)
class Entry:
    """One item of a user's memory: a message, or a summary that replaces older ones.

    Frozen because an entry, once acknowledged, never changes: a retry with the
    same ``message_id`` must get back exactly what the first call got.
    """

    id: str
    user_id: str
    seq: int
    role: str
    content: str
    covers: tuple[str, ...] = ()

    @property
    def is_summary(self) -> bool:
        return self.role == SUMMARY_ROLE


def summary_of(summary_id: str, prefix: Sequence[EntryLike], content: str) -> Entry:
    """The summary that replaces ``prefix`` (oldest first), as SPEC defines it.

    It takes the position of the newest entry it covers (G5), and ``covers`` every
    message id of the prefix, through earlier summaries, never a summary's own id
    (G1, G2): the one place stores build it, so they cannot disagree on it.
    """
    covers: list[str] = []
    for entry in prefix:
        covers.extend(entry.covers if entry.role == SUMMARY_ROLE else (entry.id,))
    return Entry(summary_id, prefix[-1].user_id, prefix[-1].seq, SUMMARY_ROLE, content,
                 tuple(covers))


@dataclass(frozen=True, slots=True)
class Difference:
    """One way the backends of a store disagree about one user."""

    backend: str
    kind: str  # "missing" | "extra" | "mismatch" | "stale"
    entry_id: str | None = None
    detail: str = ""

    def __str__(self) -> str:
        what = f"entry {self.entry_id!r}" if self.entry_id is not None else "state"
        text = f"{what} {self.kind} in {self.backend}"
        return f"{text}: {self.detail}" if self.detail else text


@dataclass(frozen=True)
class ConsistencyReport:
    """Whether every backend agrees for one user; truthy exactly when they do.

    ``assert await store.consistent_state(uid)`` is the idiom, so the falsy
    report must explain itself: its ``str`` lists every difference.
    """

    user_id: str
    differences: tuple[Difference, ...] = ()
    backends: tuple[str, ...] = field(default=())

    def __bool__(self) -> bool:
        return not self.differences

    @classmethod
    def of(cls, user_id: str, differences: Iterable[Difference],
           backends: Iterable[str] = ()) -> ConsistencyReport:
        return cls(user_id, tuple(differences), tuple(backends))

    def __str__(self) -> str:
        if not self.differences:
            checked = ", ".join(self.backends) or "the store"
            return f"consistent for user {self.user_id!r} ({checked} agree)"
        lines = [f"inconsistent for user {self.user_id!r}:"]
        lines += [f"  - {d}" for d in self.differences]
        return "\n".join(lines)


@dataclass(frozen=True)
class Capabilities:
    """What a store can do beyond the protocol, declared rather than probed.

    The suite skips a test only when a capability it needs is declared absent
    (in the manner of SQLAlchemy's ``requirements.py``); everything SPEC.md
    requires of every store is never a capability.
    """

    failpoints: bool = False
    """The store calls ``nomnesia.suite.contract.failpoints.failpoint`` at named points."""
    failpoint_names: tuple[str, ...] = ()
    """The failpoints the store passes through, for sweeps. Append, compact and forget
    must each pass at least one: the suite fails a write none of them fires in."""
    persistent: bool = False
    """Data outlives ``aclose``: reopening the same backends sees it."""


@runtime_checkable
class MemoryStore(Protocol):
    """The protocol of SPEC.md. Method and argument names are part of the contract."""

    keep_last: int
    search_staleness: float

    async def append_message(self, user_id: str, role: str, content: str,
                             *, message_id: str | None = None) -> EntryLike: ...
    async def get_history(self, user_id: str, limit: int = 10) -> list[EntryLike]: ...
    async def search(self, user_id: str, query: str, k: int = 5) -> list[EntryLike]: ...
    async def compact(self, user_id: str) -> EntryLike | None: ...
    async def forget(self, user_id: str) -> None: ...
    async def consistent_state(self, user_id: str) -> ConsistencyReport: ...
    async def recover(self) -> None: ...
    async def aclose(self) -> None: ...
