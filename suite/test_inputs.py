"""Inputs: hostile but valid values round-trip and stay isolated; invalid ones change nothing.

A user id is data, never query syntax: stores that splice it into a filter
(Redis TAG, RediSearch, Milvus and Qdrant expressions, SQL) or a key prefix
leak or lose entries here. Contents must come back byte-for-byte. And every
invalid argument must raise ValueError or TypeError before anything is written.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from ._checks import Model, check_hits, check_user, snapshot
from ._run import (
    LoggedStore,
    StoreFactory,
    StoreTests,
    expect,
    recorded,
    replay_hint,
    settings,
    suite_test,
)
from .contract import MAX_MESSAGE_ID, Guarantee
from .inputs import (
    ADVERSARIAL_CONTENTS,
    ADVERSARIAL_USER_IDS,
    INVALID_CONTENTS,
    INVALID_KS,
    INVALID_MESSAGE_IDS,
    INVALID_ROLES,
    INVALID_USER_IDS,
    random_user_ids,
)

INPUTS, G6, G9 = Guarantee.INPUTS, Guarantee.IDEMPOTENT_APPENDS, Guarantee.ISOLATION


async def _populate(s: LoggedStore, m: Model, users: list[str], per_user: int) -> None:
    for n, user in enumerate(users):
        for i in range(per_user):
            await m.append(s, user, f"note {i} of user number {n}")


async def _check_all(s: LoggedStore, m: Model, users: list[str], searches: int = 1) -> None:
    """Every user's state, and cross-searches: user A searching B's exact words gets only A's."""
    lives = {}
    for user in users:
        lives[user] = {e.id: e for e in await check_user(s, m, user, searches=searches)}
    for n, user in enumerate(users):
        neighbour = (n + 1) % len(users)
        hits = await s.search(user, f"note 0 of user number {neighbour}", 5)
        check_hits(hits, user, 5, lives[user], m, s)


class TestInputs(StoreTests):
    """Adversarial user ids and contents; invalid values of every argument."""

    @suite_test
    async def test_adversarial_user_ids_round_trip_and_stay_isolated(
            self, store: StoreFactory) -> None:
        """G9/Inputs: ids full of query syntax, case and prefix variants never mix.

        Troubleshooting: pass the user id as a bound parameter or escape it for
        the backend's filter language (RediSearch TAG values need every
        punctuation character escaped; Milvus/Qdrant filters need quoted string
        literals or a keyword match), compare it exactly (no case folding,
        trimming, normalising or prefix matching) and keep keys unambiguous
        (``user:ann`` must not be a prefix of ``user:anna``'s keys).
        """
        users = list(ADVERSARIAL_USER_IDS)
        async with recorded(store) as s:
            m = Model()
            await _populate(s, m, users, 2)
            await _check_all(s, m, users)

    @suite_test
    async def test_adversarial_user_ids_compact_and_forget_alone(
            self, store: StoreFactory) -> None:
        """G8/G9: compacting or forgetting one hostile id touches no other user.

        Troubleshooting: deletes and compaction must filter by the exact user
        id, like reads; a delete by pattern (``ann*``, ``LIKE 'ann%'``, a
        RediSearch query with an unescaped id) wipes other users.
        """
        users = list(ADVERSARIAL_USER_IDS)
        async with recorded(store) as s:
            m = Model()
            await _populate(s, m, users, s.keep_last + 1)
            for user in users[::2]:
                summary = await s.compact(user)
                expect(summary is not None and summary.user_id == user, Guarantee.ATOMIC_COMPACTION,
                       f"compact({user!r}) with keep_last+1 live entries returned {summary!r}",
                       s.log)
            for user in users[1::3]:
                await s.forget(user)
                m.forgot(user)
            await _check_all(s, m, users, searches=0)

    @suite_test
    async def test_random_user_ids_stay_isolated(self, store: StoreFactory) -> None:
        """G9: seeded random ids from a hostile alphabet never mix (the seed is printed).

        Troubleshooting: replay a failure with ``--nomnesia-seed N``; the ids
        are in the operation log.
        """
        seed = settings.seed
        users = random_user_ids(seed)
        with replay_hint(seed):
            async with recorded(store) as s:
                m = Model()
                await _populate(s, m, users, 2)
                await _check_all(s, m, users)

    @suite_test
    async def test_adversarial_contents_round_trip(self, store: StoreFactory) -> None:
        """Inputs/G1/G4: contents come back exactly and are searchable and retryable.

        Troubleshooting: store text as text of unbounded length (not a
        VARCHAR(n) counted in bytes), keep NUL (PostgreSQL text rejects it:
        encode, or use bytea), never strip, normalise (NFC) or truncate, and
        compare retries on the exact string.
        """
        async with recorded(store) as s:
            m = Model()
            for n, content in enumerate(ADVERSARIAL_CONTENTS):
                user = f"content-{n}"
                entry = await m.append(s, user, content, message_id=f"c{n}")
                await m.append(s, user, "an ordinary neighbour")
                again = await s.append_message(user, "user", content, message_id=f"c{n}")
                expect(snapshot([again]) == snapshot([entry]), G6,
                       f"a retry with the same content #{n} returned another entry", s.log)
                await check_user(s, m, user, searches=2)

    @suite_test
    async def test_adversarial_message_ids(self, store: StoreFactory) -> None:
        """G6/Inputs: message ids are data: case, prefix and syntax variants are distinct.

        Troubleshooting: use the caller's message_id verbatim as the key, with
        an exact comparison, and make it unique per user rather than globally.
        """
        ids = [i[:MAX_MESSAGE_ID] for i in ADVERSARIAL_USER_IDS]
        ids = list(dict.fromkeys(ids))
        async with recorded(store) as s:
            m = Model()
            for n, mid in enumerate(ids):
                await m.append(s, "ann", f"message {n}", message_id=mid)
            for n, mid in enumerate(ids[:10]):
                again = await s.append_message("ann", "user", f"message {n}", message_id=mid)
                expect(again.id == mid and again.content == f"message {n}", G6,
                       f"a retry with message_id {mid!r} returned {again.id!r}", s.log)
            # The same message ids under another user are other messages.
            for n, mid in enumerate(ids[:5]):
                await m.append(s, "bob", f"bob's {n}", message_id=mid)
            await check_user(s, m, "ann", searches=2)
            await check_user(s, m, "bob", searches=2)


# --------------------------------------------------------------------------- invalid values

_SEEDED = ("ann", "a", "ab", "ann ", "u" * 256)
"""Users whose state must not change: including where a truncated or trimmed bad id would land."""

Call = Callable[[LoggedStore], Awaitable[Any]]


def _cases() -> list[Any]:
    cases: list[Any] = []

    def add(name: str, values: tuple[object, ...], make: Callable[[object], Call]) -> None:
        cases.append(pytest.param(name, [(v, make(v)) for v in values], id=name))

    add("append_message.user_id", INVALID_USER_IDS,
        lambda v: lambda s: s.append_message(v, "user", "x"))
    add("append_message.role", INVALID_ROLES, lambda v: lambda s: s.append_message("ann", v, "x"))
    add("append_message.content", INVALID_CONTENTS,
        lambda v: lambda s: s.append_message("ann", "user", v))
    add("append_message.message_id", INVALID_MESSAGE_IDS,
        lambda v: lambda s: s.append_message("ann", "user", "x", message_id=v))
    add("get_history.user_id", INVALID_USER_IDS, lambda v: lambda s: s.get_history(v, 10))
    add("get_history.limit", INVALID_KS, lambda v: lambda s: s.get_history("ann", v))
    add("search.user_id", INVALID_USER_IDS, lambda v: lambda s: s.search(v, "x", 5))
    add("search.query", (None, 1, b"x", ["x"]), lambda v: lambda s: s.search("ann", v, 5))
    add("search.k", INVALID_KS, lambda v: lambda s: s.search("ann", "x", v))
    add("compact.user_id", INVALID_USER_IDS, lambda v: lambda s: s.compact(v))
    add("forget.user_id", INVALID_USER_IDS, lambda v: lambda s: s.forget(v))
    add("consistent_state.user_id", INVALID_USER_IDS, lambda v: lambda s: s.consistent_state(v))
    return cases


async def _state(s: LoggedStore) -> list[Any]:
    return [snapshot(await s.get_history(user, 100)) for user in _SEEDED]


async def _search_unchanged(s: LoggedStore, before: list[Any], what: str) -> None:
    """Search may lag (so its results may still grow), but only ever to entries that existed."""
    for user, rows in zip(_SEEDED, before, strict=True):
        known = {row[0] for row in rows}
        hits = await s.search(user, "x", 5)
        new = [h.id for h in hits if h.id not in known]
        expect(not new, INPUTS, f"after rejecting {what}, search({user!r}) returns entries "
                                f"that were not there before: {new}", s.log)


class TestInvalidInputs(StoreTests):
    """Invalid values raise ValueError or TypeError before anything is written."""

    @pytest.mark.parametrize(("argument", "calls"), _cases())
    @suite_test
    async def test_invalid_argument_is_rejected_before_any_effect(
            self, store: StoreFactory, argument: str, calls: list[tuple[object, Call]]) -> None:
        """Inputs: every invalid value raises ValueError/TypeError and changes nothing.

        Troubleshooting: validate every argument first (``nomnesia.suite.validation``
        does it in one call), before any backend write or delete: a role of
        ``summary``, a 257-code-point id truncated to 256, or a NUL that ends a
        C string must never reach a backend. ``bool`` is not an acceptable
        ``limit`` or ``k``, although it is an ``int``.
        """
        async with recorded(store) as s:
            m = Model()
            for user in _SEEDED:
                for i in range(s.keep_last + 1):
                    await m.append(s, user, f"x {user} {i}")
            await s.compact("ann")
            before = await _state(s)
            for value, call in calls:
                try:
                    await call(s)
                except (ValueError, TypeError):
                    pass
                except Exception as exc:
                    expect(False, INPUTS, f"{argument}={value!r:.60} raised "
                                          f"{type(exc).__name__}, not ValueError or TypeError",
                           s.log)
                else:
                    expect(False, INPUTS, f"{argument}={value!r:.60} was accepted", s.log)
                expect(await _state(s) == before, INPUTS,
                       f"rejecting {argument}={value!r:.60} changed the store's state", s.log)
                await _search_unchanged(s, before, f"{argument}={value!r:.60}")
            for user in _SEEDED:
                await check_user(s, m, user, searches=1)
