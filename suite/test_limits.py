"""Limits: huge but valid ``limit`` and ``k`` return the right entries and harm no engine.

SPEC.md's Inputs: ``limit`` and ``k`` are ints >= 1 with no upper bound;
``limit=2**64`` or ``k=10**30`` returns at most what the user has, the store
clamps such values itself, and no single call may take down an engine that
other users share. Stores that pass the caller's number on break here: a Redis
``ZRANGE``/``VSIM COUNT`` or a PostgreSQL ``LIMIT`` takes a 64-bit int
(``2**64`` is refused), Qdrant Edge a ``u32``, Milvus a top-k of at most
16,384, and Redis ``VSIM`` allocates ``COUNT`` slots up front (``COUNT 2**33``
aborts the server, and with it every user's log).

Every value is tried on a user of its own, with a log of its own, and after
each one a user who never saw a huge value must still be served: a failure
lists every value that broke the page, each with the smallest history that
shows it (SPEC: one violation never hides another).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from .base import StoreTests
from .contract import G1, G2, G3, G4, G5, G7, G9, G11, INPUTS, EntryLike, Guarantee
from .core.checks import Model, check_hits, check_user, search_finds, snapshot
from .core.loop import suite_test
from .core.recorder import LoggedStore, StoreFactory, recorded
from .core.violations import GuaranteeViolation

__all__ = ["HUGE", "TestLimits"]

HUGE: dict[str, int] = {"2**31": 2**31, "2**63-1": 2**63 - 1, "2**64": 2**64, "10**30": 10**30}
"""Valid ``limit``/``k`` values past every backend's integer types, by how a failure names them."""

Case = Callable[[LoggedStore, Model, str, str, int], Awaitable[None]]
"""One huge value tried on one user: (store, model, user, value's name, value)."""


async def _setup(s: LoggedStore, m: Model, user: str) -> list[EntryLike]:
    """A summary and messages after it (so the index has covered entries to skip)."""
    for i in range(s.keep_last + 2):
        await m.append(s, user, f"limits {user} note {i}")
    if s.can("compact"):
        await s.compact(user)
    await m.append(s, user, f"limits {user} after the compaction")
    return await check_user(s, m, user, searches=0)


async def _others_still_served(s: LoggedStore, m: Model, name: str) -> None:
    """A user who never saw a huge value appends, reads and searches as usual."""
    user = f"limits-bystander-{name}"
    content = f"bystander after {name}"
    try:
        entry = await m.append(s, user, content)
        got = await s.get_history(user, 10)
        if s.can("search"):
            await search_finds(s, user, content)
    except GuaranteeViolation:
        raise
    except Exception as exc:
        raise GuaranteeViolation(
            INPUTS, f"after the calls with {name}, another user's call raised "
                    f"{type(exc).__name__}: {exc}. No single call may take down an engine "
                    "that other users share", s.log) from exc
    if [(e.id, e.role, e.content) for e in got] != [(entry.id, entry.role, entry.content)]:
        raise GuaranteeViolation(
            G3, f"after the calls with {name}, another user's get_history returned "
                f"{len(got)} entries, not the one it appended", s.log)


async def _try_every_value(store: StoreFactory, case: Case) -> None:
    """Run ``case`` for every huge value, each on its own user and log; report every failure."""
    failures: list[tuple[str, GuaranteeViolation]] = []
    async with recorded(store) as first:
        logged: dict[str, tuple[LoggedStore, Model, str]] = {}
        for name in HUGE:  # every user set up before any huge call, so none sees its effects
            s, m, user = LoggedStore(first.inner, ids=first.ids), Model(), f"limits-{name}"
            await _setup(s, m, user)
            logged[name] = (s, m, user)
        for name, value in HUGE.items():
            s, m, user = logged[name]
            try:
                await case(s, m, user, name, value)
            except GuaranteeViolation as violation:
                failures.append((name, violation))
            except Exception as exc:
                failures.append((name, GuaranteeViolation(
                    INPUTS, f"valid input refused: the call with {name} raised "
                            f"{type(exc).__name__}: {exc}. Clamp limit and k before they "
                            "reach a backend", s.log)))
            try:  # even after a failure: did that call take the engine down for everyone?
                await _others_still_served(s, m, name)
            except GuaranteeViolation as violation:
                failures.append((name, violation))
    if failures:
        first_name, worst = failures[0]
        listed = ", ".join(dict.fromkeys(f"{name} ({v.guarantee})" for name, v in failures))
        evidence = "\n\n".join(f"--- with {name}: {v}" for name, v in failures)
        raise GuaranteeViolation(
            worst.guarantee, f"{len({name for name, _ in failures})} of {len(HUGE)} huge values "
                             f"broke the page: {listed}. With {first_name}: {worst.detail}",
            evidence=evidence)


async def _history_case(s: LoggedStore, m: Model, user: str, name: str, value: int) -> None:
    expected = await s.get_history(user, len(m.user(user).acked) + 10)
    got = await s.get_history(user, value)
    if snapshot(got) != snapshot(expected):
        raise GuaranteeViolation(
            G3, f"get_history({user!r}, limit={name}) returned {len(got)} entries, not the "
                f"user's {len(expected)} live entries in ascending seq", s.log, user=user)
    empty = await s.get_history(f"{user}-never-written", value)
    if empty:
        raise GuaranteeViolation(
            G3, f"get_history of a user never written, limit={name}, returned {len(empty)} "
                "entries", s.log)


async def _search_case(s: LoggedStore, m: Model, user: str, name: str, value: int) -> None:
    live = {e.id: e for e in await s.get_history(user, len(m.user(user).acked) + 10)}
    for entry in live.values():
        hits = await search_finds(s, user, entry.content, value)
        check_hits(hits, user, value, live, m, s)
    check_hits(await s.search(user, "no entry has these words", value), user, value, live, m, s)
    empty = await s.search(f"{user}-never-written", "anything", value)
    if empty:
        raise GuaranteeViolation(
            Guarantee.SEARCH, f"search of a user never written, k={name}, returned "
                              f"{len(empty)} entries", s.log)


class TestLimits(StoreTests):
    """``limit`` and ``k`` of 2**31, 2**63-1, 2**64 and 10**30: valid, answered, harmless."""

    @pytest.mark.guarantee(G1, G2, G3, G4, G5, G7, G9, G11, INPUTS)
    @suite_test
    async def test_huge_limit_returns_the_whole_history(self, store: StoreFactory) -> None:
        """G3/Inputs: ``get_history(u, limit)`` with a huge limit returns every live entry.

        Each of 2**31, 2**63-1, 2**64 and 10**30 is tried on its own user (a
        summary and messages), and must return exactly what a limit just above
        the user's size returns; afterwards another user is still served.

        Troubleshooting: clamp ``limit`` before it reaches a backend, to a cap
        that fits every integer type on the way (Redis ``ZRANGE`` and PostgreSQL
        ``LIMIT`` take a signed 64-bit int: ``2**64`` is "value is not an
        integer or out of range" / "bigint out of range") and is above anything
        a user can hold, e.g. ``min(limit, 2**31 - 1)``. Never pass
        ``-limit`` unchecked as a range bound.
        """
        await _try_every_value(store, _history_case)

    @pytest.mark.needs("search")
    @pytest.mark.guarantee(G1, G2, G3, G4, G5, G7, G9, G11, INPUTS)
    @suite_test
    async def test_huge_k_search_still_finds_exact_content(self, store: StoreFactory) -> None:
        """G4/Inputs: ``search(u, q, k)`` with a huge k still finds exact content, harmlessly.

        Each of 2**31, 2**63-1, 2**64 and 10**30 is tried on its own user: the
        exact content of every live entry comes back, every hit is a live entry
        of that user, and afterwards another user is still served (the engine
        did not die or run out of memory).

        Troubleshooting: clamp ``k`` (and whatever you derive from it: an
        over-fetch ``4 * k``, an ``ef``, a page size) before it reaches the
        index: Redis ``VSIM ... COUNT k`` allocates k slots up front (``COUNT
        2**33`` aborts the server for 64 GiB), Milvus refuses a top-k above
        16,384, Qdrant Edge takes a ``u32`` and PostgreSQL a ``bigint``. A cap
        of 16,384 candidates still returns every entry of any ordinary user.
        """
        await _try_every_value(store, _search_case)
