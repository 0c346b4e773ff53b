"""What a caller can make a store ask a backend for, or keep: sizes and per-user state.

SPEC.md's Inputs: ``limit`` and ``k`` have no upper bound (``k=10**30`` is valid)
and a store clamps them itself, so that no single call overflows a backend's
integer types or makes an engine that other users share allocate in proportion
to the caller's number. Every size here is clamped in this one module:
``TieredMemoryStore`` clamps before it calls any tier, and every index's
``query`` clamps again (through ``indexes._common.check_k``), so a tier used on
its own, or a new one, gets the same bound.

The two caps, and why they keep results correct:

- ``MAX_CANDIDATES`` (16,384) bounds how many ids one vector query asks for
  (``k`` and the store's over-fetch). It is Milvus' top-k maximum, the lowest
  of every index engine (Redis ``VSIM COUNT`` allocates a heap of that size up
  front: ``COUNT 2**33`` aborted Redis for 64 GiB, issue 14). A user with at
  most that many indexed entries still gets all of them, ranked, for any huge
  ``k``; beyond it, search returns the best 16,384 (SPEC G4 says "at most k"),
  and exact-content matches always, since they come from the archive.
- ``MAX_ROWS`` (2**31 - 1) bounds a history range (``limit``). It fits every
  backend's integer types (a signed 32-bit int, PostgreSQL ``bigint``, Redis'
  ``long long``, qdrant's ``u32``) and is far above what one user can hold, so
  ``get_history(u, 2**64)`` is every live entry of ``u``. No engine allocates
  in proportion to a range's bound, only to what it returns.

``PerUser`` keeps per-user in-process state (locks, seqlock versions) only
while some task uses it, so a long-running store that sees many user ids keeps
memory flat.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Final, Generic, TypeVar

__all__ = ["MAX_CANDIDATES", "MAX_ROWS", "PerUser", "check_k", "clamp_k", "clamp_limit",
           "over_fetch"]

T = TypeVar("T")

MAX_CANDIDATES: Final = 16_384
"""The most ids one vector-index query asks for (Milvus' top-k maximum)."""

MAX_ROWS: Final = 2**31 - 1
"""The most entries one history range asks a log or an archive for."""


def clamp_k(k: int) -> int:
    """``k`` as a vector index may receive it: at most ``MAX_CANDIDATES``."""
    return min(k, MAX_CANDIDATES)


def clamp_limit(limit: int) -> int:
    """A history ``limit`` as a log or an archive may receive it: at most ``MAX_ROWS``."""
    return min(limit, MAX_ROWS)


def over_fetch(k: int) -> int:
    """How many ids a store asks its index for to return ``k`` live ones.

    Four times ``k`` (at least 20), because the index may still hold entries that
    an interrupted write left behind and the archive filters out; clamped, so a
    huge ``k`` asks for ``MAX_CANDIDATES``, not ``4 * k``.
    """
    return clamp_k(max(4 * k, 20))


class _Slot(Generic[T]):
    __slots__ = ("users", "value")

    def __init__(self, value: T) -> None:
        self.value = value
        self.users = 0


class PerUser(Generic[T]):
    """A value per user id that exists only while a task uses it, or while ``keep`` holds.

    A plain dict gains an entry for every user id it ever sees and keeps it, even
    after ``forget``: a long-running store grows without bound. Here
    ``with registry.use(user_id) as value`` creates the value if needed and counts
    the task as a user of it until the block ends; the last one out drops it
    unless ``keep(value)`` (e.g. "the user's tiers may be behind", which
    ``recover()`` must still find). A task waiting on a lock in the value is
    inside its block, so a value is never dropped while anyone holds or awaits it,
    and every task of one user sees the same value, so per-user serialisation is
    unchanged. (A ``WeakValueDictionary`` would drop a value that ``keep`` needs.)
    """

    def __init__(self, factory: Callable[[], T],
                 keep: Callable[[T], bool] | None = None) -> None:
        self._factory = factory
        self._keep = keep
        self._slots: dict[str, _Slot[T]] = {}

    def get(self, user_id: str) -> T | None:
        slot = self._slots.get(user_id)
        return None if slot is None else slot.value

    def items(self) -> list[tuple[str, T]]:
        return [(user_id, slot.value) for user_id, slot in self._slots.items()]

    def __len__(self) -> int:
        return len(self._slots)

    @contextmanager
    def use(self, user_id: str) -> Iterator[T]:
        slot = self._slots.get(user_id)
        if slot is None:
            slot = self._slots[user_id] = _Slot(self._factory())
        slot.users += 1
        try:
            yield slot.value
        finally:
            slot.users -= 1
            if slot.users == 0 and not (self._keep is not None and self._keep(slot.value)) \
                    and self._slots.get(user_id) is slot:
                del self._slots[user_id]


def check_k(k: int) -> int:
    """``k`` validated and clamped (``clamp_k``): what a query may send its engine.

    Every index's ``query`` sends the value this returns, never the caller's:
    the store already clamps, and this guard keeps an index used on its own
    just as safe (a raw ``VSIM COUNT 2**33`` aborted Redis, issue 14).
    """
    if isinstance(k, bool) or not isinstance(k, int):
        raise TypeError(f"k must be an int, not {type(k).__name__}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return clamp_k(k)
