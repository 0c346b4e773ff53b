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

from .base import StoreTests
from .contract import G1, G2, G4, G5, G6, G7, G8, G9, G11, INPUTS, MAX_MESSAGE_ID
from .core.attempts import Attempts
from .core.checks import Model, check_hits, check_user, snapshot
from .core.history import describe
from .core.inputs import (
    ADVERSARIAL_CONTENTS,
    ADVERSARIAL_USER_IDS,
    INVALID_CONTENTS,
    INVALID_KS,
    INVALID_MESSAGE_IDS,
    INVALID_ROLES,
    INVALID_USER_IDS,
    random_user_ids,
)
from .core.loop import suite_test
from .core.recorder import LoggedStore, StoreFactory, recorded
from .core.settings import settings
from .core.violations import expect, replay_hint
from .glue import require


async def _populate(s: LoggedStore, m: Model, users: list[str], per_user: int,
                    attempts: Attempts) -> list[str]:
    """``per_user`` appends for every user; a user whose append fails is recorded and left out."""
    for user in users:
        with attempts(user):
            for i in range(per_user):
                await m.append(s, user, _note(i, m, user))
    return [u for u in users if not attempts.failed(u)]


def _note(i: int, m: Model, user: str) -> str:
    """The i-th note of a user: the same words for every user but the user's own number."""
    m.user(user)
    return f"note {i} of user number {list(m.users).index(user)}"


async def _check_all(s: LoggedStore, m: Model, users: list[str], attempts: Attempts,
                     searches: int = 1) -> None:
    """Every user's state, and cross-searches: user A searching B's exact words gets only A's.

    Each user is checked on its own, so one user's failure never hides another's.
    """
    lives = {}
    for user in users:
        with attempts(user):
            lives[user] = {e.id: e for e in await check_user(s, m, user, searches=searches)}
    for n, user in enumerate(users):
        if user not in lives or not s.can("search"):
            continue
        neighbour = users[(n + 1) % len(users)]
        with attempts(user):
            hits = await s.search(user, _note(0, m, neighbour), 5)
            check_hits(hits, user, 5, lives[user], m, s)


async def _ids_stay_isolated(store: StoreFactory, users: list[str], attempts: Attempts) -> None:
    """Every id on one shared store (pairs collide only there); each id judged on its own."""
    async with recorded(store) as s:
        m = Model()
        users = await _populate(s, m, users, 2, attempts)
        await _check_all(s, m, users, attempts)
    attempts.check()


class TestInputs(StoreTests):
    """Adversarial user ids and contents; invalid values of every argument."""

    @pytest.mark.guarantee(G1, G2, G4, G5, G9, G11, INPUTS)
    @suite_test
    async def test_adversarial_user_ids_round_trip_and_stay_isolated(
            self, store: StoreFactory) -> None:
        """G9/Inputs: ids full of query syntax, case and prefix variants never mix.

        Every id is tried and reported on its own: a store that refuses one id
        is still checked (and caught leaking) on every other.
        Troubleshooting: pass the user id as a bound parameter or escape it for
        the backend's filter language (RediSearch TAG values need every
        punctuation character escaped; Milvus/Qdrant filters need quoted string
        literals or a keyword match), compare it exactly (no case folding,
        trimming, normalising or prefix matching) and keep keys unambiguous
        (``user:ann`` must not be a prefix of ``user:anna``'s keys).
        """
        users = list(ADVERSARIAL_USER_IDS)
        await _ids_stay_isolated(store, users, Attempts("user id", len(users)))

    @pytest.mark.guarantee(G1, G2, G4, G5, G7, G8, G9, G11, INPUTS)
    @suite_test
    async def test_adversarial_user_ids_compact_and_forget_alone(
            self, store: StoreFactory) -> None:
        """G8/G9: compacting or forgetting one hostile id touches no other user.

        A first pass does every compaction and forget, then checks every user.
        Only if that finds something, a second pass (on fresh stores) checks
        every other user after each single call, so that a ``forget('*')``
        that wipes everyone is reported as that call's failure, and the calls
        after it run on a fresh store.
        Troubleshooting: deletes and compaction must filter by the exact user
        id, like reads; a delete by pattern (``ann*``, ``LIKE 'ann%'``, a
        RediSearch query with an unescaped id) wipes other users.
        """
        users = list(ADVERSARIAL_USER_IDS)
        probe = Attempts("user id", len(users))
        await _compact_and_forget(store, users, probe, isolate=False)
        if probe.failures:
            attempts = Attempts("user id", len(users))
            await _compact_and_forget(store, users, attempts, isolate=True)
            (attempts if attempts.failures else probe).check()

    @pytest.mark.guarantee(G1, G2, G4, G5, G9, G11, INPUTS)
    @suite_test
    async def test_random_user_ids_stay_isolated(self, store: StoreFactory) -> None:
        """G9: seeded random ids from a hostile alphabet never mix (the seed is printed).

        Troubleshooting: replay a failure with ``--nomnesia-seed N``; the ids
        are in the operation log.
        """
        seed = settings.seed
        users = random_user_ids(seed)
        with replay_hint(seed):
            await _ids_stay_isolated(store, users, Attempts("user id", len(users)))

    @pytest.mark.guarantee(G1, G2, G4, G5, G6, G9, G11, INPUTS)
    @suite_test
    async def test_adversarial_contents_round_trip(self, store: StoreFactory) -> None:
        """Inputs/G1/G4: contents come back exactly and are searchable and retryable.

        Every content is tried on a user of its own (and, after a failure, on a
        fresh store), and each failing one is reported.
        Troubleshooting: store text as text of unbounded length (not a
        VARCHAR(n) counted in bytes), keep NUL (PostgreSQL text rejects it:
        encode, or use bytea), never strip, normalise (NFC) or truncate, and
        compare retries on the exact string.
        """
        async def setup(s: LoggedStore) -> Model:
            return Model()

        async def one(s: LoggedStore, m: Model, item: tuple[int, str]) -> None:
            n, content = item
            user = f"content-{n}"
            mid = f"c{n}" if s.can("message_id") else None
            entry = await m.append(s, user, content, message_id=mid)
            await m.append(s, user, "an ordinary neighbour")
            if mid is not None:
                again = await s.append_message(user, "user", content, message_id=mid)
                expect(snapshot([again]) == snapshot([entry]), G6,
                       f"a retry with the same content #{n} returned another entry", s.log,
                       user=user)
            await check_user(s, m, user, searches=2)

        attempts = Attempts("content", len(ADVERSARIAL_CONTENTS),
                            name=lambda item: f"#{item[0]} {describe(item[1])}")
        await attempts.each(store, list(enumerate(ADVERSARIAL_CONTENTS)), setup, one)
        attempts.check()

    @pytest.mark.needs("message_id")
    @pytest.mark.guarantee(G1, G2, G4, G5, G6, G9, G11, INPUTS)
    @suite_test
    async def test_adversarial_message_ids(self, store: StoreFactory) -> None:
        """G6/Inputs: message ids are data: case, prefix and syntax variants are distinct.

        Each message id is appended and retried on its own, so a refused one
        does not hide the others.
        Troubleshooting: use the caller's message_id verbatim as the key, with
        an exact comparison, and make it unique per user rather than globally.
        """
        ids = [i[:MAX_MESSAGE_ID] for i in ADVERSARIAL_USER_IDS]
        ids = list(dict.fromkeys(ids))
        attempts = Attempts("message id", len(ids))
        async with recorded(store) as s:
            m = Model()
            for n, mid in enumerate(ids):
                with attempts(mid):
                    await m.append(s, "ann", f"message {n}", message_id=mid)
            for n, mid in enumerate(ids[:10]):
                if attempts.failed(mid):
                    continue
                with attempts(mid):
                    again = await s.append_message("ann", "user", f"message {n}",
                                                   message_id=mid)
                    expect((s.keyed or again.id == mid) and again.content == f"message {n}",
                           G6,
                           f"a retry with message_id {mid!r} returned {again.id!r}", s.log,
                           user="ann")
            # The same message ids under another user are other messages.
            for n, mid in enumerate(ids[:5]):
                if attempts.failed(mid):
                    continue
                with attempts(mid):
                    await m.append(s, "bob", f"bob's {n}", message_id=mid)
            for user in ("ann", "bob"):
                with attempts(None, label=f"user {user!r} holding every message id"):
                    await check_user(s, m, user, searches=2)
        attempts.check()


async def _compact_and_forget(store: StoreFactory, users: list[str], attempts: Attempts, *,
                              isolate: bool) -> None:
    """Compact every other id, forget every third; with ``isolate``, check the rest each time."""
    compacts, forgets = set(users[::2]), set(users[1::3])
    todo = [u for u in users if u in compacts or u in forgets]
    while True:
        async with recorded(store) as s:
            if not (s.can("compact") or s.can("forget")):
                require(s, "compact", "forget")
            if not s.can("compact"):
                compacts = set()
            if not s.can("forget"):
                forgets = set()
            m = Model()
            alive = await _populate(s, m, [u for u in users if not attempts.failed(u)],
                                    s.keep_last + 1, attempts)
            seen = {}
            for user in alive if isolate else ():
                with attempts(user):
                    seen[user] = snapshot(await s.get_history(user, 100))
            alive = [u for u in alive if not attempts.failed(u)]
            poisoned = False
            while todo and not poisoned:
                user = todo.pop(0)
                if user not in alive:
                    continue
                calls = " after ".join(f"{c}({user!r})" for c, chosen in
                                       (("forget", forgets), ("compact", compacts))
                                       if user in chosen)
                with attempts(user):
                    if user in compacts:
                        summary = await s.compact(user)
                        expect(s.keyed or (summary is not None and summary.user_id == user), G7,
                               f"compact({user!r}) with keep_last+1 live entries returned "
                               f"{summary!r}", s.log, user=user)
                    if user in forgets:
                        await s.forget(user)
                        m.forgot(user)
                    if isolate:
                        await _others_unchanged(s, calls, user, alive, seen)
                # In the isolating pass any failure may have poisoned the store: fresh one.
                poisoned = isolate and attempts.failed(user)
            if not poisoned:
                await _check_all(s, m, [u for u in alive if not attempts.failed(u)], attempts,
                                 searches=0)
                return


def _own(user: str, rows: list[Any]) -> list[Any]:
    return [row for row in rows if row[1] == user]


async def _others_unchanged(s: LoggedStore, calls: str, user: str, alive: list[str],
                            seen: dict[str, Any]) -> None:
    """After ``calls`` for ``user``, every other user's own entries are as they were (else G9).

    Only entries that carry the other user's id count: a store that already
    leaks ``user``'s entries into another's reads is that read's failure
    (``_check_all`` reports it), not this call's.
    """
    seen[user] = snapshot(await s.get_history(user, 100))
    changed = []
    for other in alive:
        if other != user and _own(other, snapshot(await s.get_history(other, 100))) \
                != _own(other, seen[other]):
            changed.append(other)
    expect(not changed, G9, lambda: f"{calls} changed the history of "
                                    f"{len(changed)} other users: "
                                    f"{', '.join(map(repr, changed[:8]))}"
                                    + (" ..." if len(changed) > 8 else ""),
           s.log, user=frozenset((user, *changed[:1])))


# --------------------------------------------------------------------------- invalid values

_SEEDED = ("ann", "a", "ab", "ann ", "u" * 256)
"""Users whose state must not change: including where a truncated or trimmed bad id would land."""

Call = Callable[[LoggedStore], Awaitable[Any]]
_FEATURE = {"append_message": "append", "get_history": "read", "search": "search",
            "compact": "compact", "forget": "forget", "consistent_state": "consistent"}


def _cases() -> list[Any]:
    cases: list[Any] = []

    def add(name: str, values: tuple[object, ...], make: Callable[[object], Call]) -> None:
        method, _, argument = name.partition(".")
        feature = "message_id" if argument == "message_id" else _FEATURE[method]
        cases.append(pytest.param(name, [(v, make(v)) for v in values], id=name,
                                  marks=pytest.mark.needs(feature)))

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
    if not s.can("search"):
        return
    for user, rows in zip(_SEEDED, before, strict=True):
        known = {row[0] for row in rows}
        hits = await s.search(user, "x", 5)
        new = [h.id for h in hits if h.id not in known]
        expect(not new, INPUTS, f"after rejecting {what}, search({user!r}) returns entries "
                                f"that were not there before: {new}", s.log)


class TestInvalidInputs(StoreTests):
    """Invalid values raise ValueError or TypeError before anything is written."""

    @pytest.mark.needs("rejects")
    @pytest.mark.guarantee(G1, G2, G4, G5, G7, G9, G11, INPUTS)
    @pytest.mark.parametrize(("argument", "calls"), _cases())
    @suite_test
    async def test_invalid_argument_is_rejected_before_any_effect(
            self, store: StoreFactory, argument: str, calls: list[tuple[object, Call]]) -> None:
        """Inputs: every invalid value raises ValueError/TypeError and changes nothing.

        Troubleshooting: validate every argument first (``nomnesia.suite.contract.validation``
        does it in one call), before any backend write or delete: a role of
        ``summary``, a 257-code-point id truncated to 256, or a NUL that ends a
        C string must never reach a backend. ``bool`` is not an acceptable
        ``limit`` or ``k``, although it is an ``int``.
        """
        async def seed(s: LoggedStore) -> tuple[Model, list[Any]]:
            m = Model()
            for user in _SEEDED:
                for i in range(s.keep_last + 1):
                    await m.append(s, user, f"x {user} {i}")
            if s.can("compact"):
                await s.compact("ann")
            return m, await _state(s)

        async def one(s: LoggedStore, state: tuple[Model, list[Any]],
                      item: tuple[object, Call]) -> None:
            before = state[1]
            value, call = item
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

        async def finish(s: LoggedStore, state: tuple[Model, list[Any]]) -> None:
            for user in _SEEDED:
                await check_user(s, state[0], user, searches=1)

        # Every invalid value on its own; after one slips through, the rest get a fresh store.
        attempts = Attempts(argument, len(calls), name=lambda item: f"{item[0]!r:.60}",
                            odd=False)
        await attempts.each(store, calls, seed, one, finish=finish)
        attempts.check()
