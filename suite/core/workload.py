"""Seeded random workloads: concurrent clients hammering a store, recorded for the checker.

A race shows only under the interleaving that triggers it, so the workload
throws many small concurrent calls (appends with and without message ids,
retries, conflicting retries, reads of many limits, searches, compactions,
forgets) at a few users whose ids are built to collide in careless stores
(``ann`` is a prefix of ``anna``; quotes, ``*``, ``:``, ``%``, braces). Every
call goes through a ``LoggedStore`` into one :class:`History` (each client is
one Jepsen process); :func:`nomnesia.suite.core.checker.check` judges
it afterwards, and a final quiescent phase adds ``recover()``, full reads and
``consistent_state`` (G11).

The seed fixes every decision a client makes (which call, which user, which
arguments); with a deterministic store on one event loop it also fixes the
interleaving, so ``NOMNESIA_SEED=N`` replays a failure exactly.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar

from ..contract import MAX_CONTENT, Guarantee
from .checker import Anomaly, check
from .checker_keyed import check_keyed
from .checks import consistent
from .fresh import Namespace
from .history import History, pair
from .profiles import Resolved
from .recorder import LoggedStore, opened
from .violations import UsageMistake

__all__ = ["DEFAULT_USERS", "Client", "During", "Mix", "Outcome", "Workload", "for_profile",
           "healthy_errors", "quiesce", "resolve_rounds", "resolve_seed", "run", "run_rounds"]

DEFAULT_USERS: tuple[str, ...] = ("ann", "anna", "Ann", "ann*", 'o\'b "q" {x}:%\\ 🙂')
"""Ids that collide in stores that filter by prefix, pattern, case or query syntax."""

_WORDS = ("apple", "berry", "cloud", "delta", "ember", "fjord", "grain", "harbor", "iris",
          "jade", "kettle", "lumen", "moss", "nectar", "olive", "pearl", "quartz", "river",
          "café", "naïve", "日本", "🙂", "tab\there", "line\nbreak")
_EDITED = " (edited)"
"""What a conflicting retry adds to the content (cut to fit SPEC's maximum)."""
_FINAL_LIMIT = 100_000
_FINAL_SEARCHES = 3


@dataclass(frozen=True)
class Mix:
    """How often each call is made (weights) and how appends behave (probabilities)."""

    append: float = 0.42
    read: float = 0.28
    search: float = 0.12
    compact: float = 0.12
    forget: float = 0.02
    message_id: float = 0.3
    """Share of appends that pass a message_id."""
    retry: float = 0.4
    """Chance that an append with a message_id is retried with the same arguments."""
    conflict: float = 0.1
    """Chance that it is then retried with other content (the store must reject it)."""
    twin: float = 0.15
    """Chance that the same message_id is then appended for another user (legal)."""
    exact_search: float = 0.7
    """Share of searches whose query is the content of a recent append."""
    yield_: float = 0.5
    """Chance that a client lets others run between two calls."""


def for_profile(mix: Mix, resolved: Resolved) -> Mix:
    """The mix without the calls a store's profile does not have (SPEC.md, "Profiles")."""
    return replace(
        mix,
        search=mix.search if resolved.has("search") else 0.0,
        compact=mix.compact if resolved.has("compact") else 0.0,
        forget=mix.forget if resolved.has("forget") else 0.0,
        message_id=mix.message_id if resolved.has("message_id") else 0.0)


@dataclass(frozen=True)
class Workload:
    """One round: ``ops`` calls by ``processes`` concurrent clients over ``users``."""

    seed: int
    ops: int = 500
    processes: int = 6
    users: tuple[str, ...] = DEFAULT_USERS
    mix: Mix = field(default_factory=Mix)


@dataclass
class Outcome:
    """A finished round: the history, what the checker found, and how to replay it."""

    workload: Workload
    history: History
    anomalies: list[Anomaly]
    keep_last: int
    search_staleness: float
    seconds: float
    check_seconds: float = 0.0
    round: int = 0

    def __bool__(self) -> bool:
        return not self.anomalies

    @property
    def guarantee(self) -> Guarantee | None:
        return self.anomalies[0].guarantee if self.anomalies else None

    def counts(self) -> dict[str, int]:
        done: dict[str, int] = {}
        for op in self.history:
            if op.type != "invoke":
                key = f"{op.f}:{op.type}"
                done[key] = done.get(key, 0) + 1
        return dict(sorted(done.items()))

    def detail(self, first: int | None = 3) -> str:
        """The failure message without the leading guarantee (``GuaranteeViolation`` adds it)."""
        text = self.report(first)
        head = f"{self.guarantee}: "
        return text[len(head):] if text.startswith(head) else text

    def report(self, first: int | None = 3) -> str:
        """The failure message: the first anomalies (each minimal; ``None``: all of them),
        counts, and the replay line."""
        shown = self.anomalies if first is None else self.anomalies[:first]
        lines = [str(a) for a in shown]
        if len(self.anomalies) > len(shown):
            lines.append(f"... and {len(self.anomalies) - len(shown)} more anomalies "
                         "(--nomnesia-anomalies N or all shows more; the JSON report keeps "
                         "them all)")
        calls = ", ".join(f"{k} {v}" for k, v in self.counts().items())
        lines.append(f"history: {len(self.history)} ops ({calls}); keep_last={self.keep_last}, "
                     f"search_staleness={self.search_staleness:g}")
        lines.append(f"round {self.round + 1}, {self.seconds:.2f} s; replay with "
                     f"--nomnesia-seed {self.workload.seed} (or NOMNESIA_SEED="
                     f"{self.workload.seed})")
        return "\n".join(lines)


def resolve_seed(seed: int | None = None) -> int:
    """``NOMNESIA_SEED`` if set, else the seed argument, else a fresh random one (print it!).

    The environment wins so that a failure can be replayed without touching
    the code or the command line that passed the seed.
    """
    env = os.environ.get("NOMNESIA_SEED", "").strip()
    if env:
        return int(env)
    if seed is not None:
        return seed
    return random.SystemRandom().randrange(2**32)


def resolve_rounds(default: int) -> int:
    """``NOMNESIA_ROUNDS`` scales the concurrency tests for slow or fast stores."""
    env = os.environ.get("NOMNESIA_ROUNDS", "").strip()
    return max(1, int(env)) if env else default


_C = TypeVar("_C", bound="Client")


class Client:
    """One concurrent client ("process" in Jepsen's terms) with its own seeded choices.

    The suite's workload runs it as it is. The load benchmark (bench/bench_load.py)
    subclasses it: it changes the choices (which user, which content, limit, query),
    how a call is sent and recorded, and when the load ends, through the hooks below,
    and keeps the rest, so both make the same calls in the same way (retries,
    conflicting retries, recovery after an indeterminate call). A hook that changes
    no choice draws nothing from ``rng``: the seed's calls stay the seed's calls.
    """

    KS: tuple[int, ...] = (1, 2, 3, 5, 10)
    """The ``k`` a search asks for."""

    def __init__(self, pid: int, store: Any, mix: Mix, seed: int, users: Sequence[str],
                 slots: itertools.count[int] | None = None, ops: int = 0) -> None:
        self.pid = pid
        self.store = store
        self.mix = mix
        self.users = users
        self.slots = slots if slots is not None else itertools.count()
        self.ops = ops
        self.rng = random.Random(f"{seed}/{pid}")
        self.n = 0
        self.recent: dict[str, list[Any]] = {}
        """Per user, its last few contents (or what ``recall`` remakes them from)."""

    @classmethod
    def for_workload(cls: type[_C], pid: int, store: LoggedStore, workload: Workload,
                     slots: itertools.count[int]) -> _C:
        """The suite's client ``pid``: its calls recorded as that process of ``store``'s log,
        sharing ``workload.ops`` calls with the clients given the same ``slots``."""
        return cls(pid, store.client(pid), workload.mix, workload.seed, workload.users, slots,
                   workload.ops)

    # -- hooks: the choices, and how a call is sent -----------------------------------

    async def send(self, make: Callable[[], Awaitable[Any]], f: str, user: str,
                   value: Any) -> None:
        """Make the call; ``self.store`` (a ``LoggedStore``) records it, so the rest is unused."""
        await make()

    async def recover(self) -> None:
        """``recover()`` after an indeterminate call (SPEC G10)."""
        await self.store.recover()

    def errored(self, f: str, exc: Exception) -> None:
        """A call raised something other than a rejection (the bench counts these)."""

    def more(self) -> bool:
        """Whether to make another call: the workload shares ``ops`` slots among clients."""
        return next(self.slots) < self.ops

    def user(self) -> str:
        return self.rng.choice(self.users)

    def content(self, user: str) -> str:
        self.n += 1
        words = " ".join(self.rng.choice(_WORDS) for _ in range(self.rng.randint(1, 4)))
        text = f"p{self.pid} n{self.n} {words}"
        recent = self.recent.setdefault(user, [])
        recent.append(text)
        del recent[:-8]
        return text

    def message_id(self) -> str:
        return f"m:{self.pid}/{self.n} *\"{{x}}%"

    def limit(self) -> int:
        keep = int(getattr(self.store, "keep_last", 4))
        return self.rng.choice((1, 2, 3, keep, keep + 1, 5, 10, 50, 1000))

    def query(self, user: str) -> str:
        recent = self.recent.get(user)
        if recent and self.rng.random() < self.mix.exact_search:
            return str(self.rng.choice(recent))
        return self.rng.choice(_WORDS)

    def recorded(self, text: str) -> str:
        """What the history keeps of a content or query (the bench keeps a digest)."""
        return text

    def forgetting(self, user: str) -> None:
        """About to forget ``user`` (the bench stops searching for its old contents)."""

    # -- the calls --------------------------------------------------------------------

    async def call(self, make: Callable[[], Awaitable[Any]], f: str = "", user: str = "",
                   value: Any = None) -> str:
        """Run one call (``send`` records it); ``fail``/``info`` are outcomes here.

        ``f``, ``user`` and ``value`` say what the call is, for a ``send`` that records
        it itself."""
        try:
            await self.send(make, f, user, value)
        except UsageMistake:
            raise  # a usage error: no call reached the store
        except (ValueError, TypeError):
            return "fail"
        except Exception as exc:
            self.errored(f, exc)
            # Indeterminate: SPEC G10 promises the guarantees again after recover().
            with contextlib.suppress(Exception):  # recorded as info; the checker is lenient
                await self.recover()             # (with no fault injected, ``run`` is not:
            return "info"                        # healthy_errors)
        return "ok"

    async def append(self, user: str) -> None:
        role = self.rng.choice(("user", "assistant", "system", "tool"))
        content = self.content(user)
        mid: str | None = None
        if self.rng.random() < self.mix.message_id:
            mid = self.message_id()
        append = self.store.append_message
        said = (role, self.recorded(content), mid)
        await self.call(lambda: append(user, role, content, message_id=mid), "append", user, said)
        if mid is None:
            return
        if self.rng.random() < self.mix.retry:
            await self.call(lambda: append(user, role, content, message_id=mid), "append", user,
                            said)
        if self.rng.random() < self.mix.conflict:
            other = content[:MAX_CONTENT - len(_EDITED)] + _EDITED
            await self.call(lambda: append(user, role, other, message_id=mid), "append", user,
                            (role, self.recorded(other), mid))
        if self.mix.twin and self.rng.random() < self.mix.twin:
            twin = self.rng.choice([u for u in self.users if u != user] or [user])
            twin_content = self.content(twin)
            await self.call(lambda: append(twin, role, twin_content, message_id=mid), "append",
                            twin, (role, self.recorded(twin_content), mid))

    async def one(self) -> None:
        m = self.mix
        f = self.rng.choices(("append", "read", "search", "compact", "forget"),
                             (m.append, m.read, m.search, m.compact, m.forget))[0]
        user = self.user()
        store = self.store
        if f == "append":
            await self.append(user)
        elif f == "read":
            limit = self.limit()
            await self.call(lambda: store.get_history(user, limit), "read", user, limit)
        elif f == "search":
            query = self.query(user)
            k = self.rng.choice(self.KS)
            await self.call(lambda: store.search(user, query, k), "search", user,
                            (self.recorded(query), k))
        elif f == "compact":
            await self.call(lambda: store.compact(user), "compact", user)
        else:
            self.forgetting(user)
            await self.call(lambda: store.forget(user), "forget", user)

    async def loop(self, stop: asyncio.Event | None = None) -> None:
        while (stop is None or not stop.is_set()) and self.more():
            await self.one()
            if self.rng.random() < self.mix.yield_:
                await asyncio.sleep(0)  # scheduling, not waiting: let another client in


async def quiesce(store: LoggedStore, workload: Workload) -> list[Anomaly]:
    """After the storm: recover twice, read everything, search, and ask consistent_state.

    Every call is recorded in ``store.log`` as process ``workload.processes``.
    """
    client = Client.for_workload(workload.processes, store, workload, itertools.count())
    s = client.store
    for _ in range(2):
        await client.call(s.recover)
    staleness = float(getattr(store, "search_staleness", 0.0))
    found: list[Anomaly] = []
    for user in workload.users:
        final: list[Any] = []

        async def read(user: str = user, final: list[Any] = final) -> None:
            final.extend(await s.get_history(user, _FINAL_LIMIT))

        await client.call(read)
        searched = [e for e in final if e.role != "summary"] if s.can("search") else []
        for e in searched[-_FINAL_SEARCHES:]:
            await _search_until_found(client, user, e.content, e.id, staleness)
        if not s.can("consistent"):
            continue
        try:
            report, _ = await consistent(s, user)
        except Exception as exc:
            found.append(Anomaly(Guarantee.QUIESCENT_CONSISTENCY,
                                 f"consistent_state({user!r}) raised {type(exc).__name__}: "
                                 f"{exc} at quiescence", []))
            continue
        if not report:
            # The user's interrupted writes: the likeliest story behind tiers that disagree.
            raised = [op for op in store.log if op.user_id == user and op.type == "info"
                      and op.f in ("append", "compact", "forget")]
            found.append(Anomaly(Guarantee.QUIESCENT_CONSISTENCY,
                                 f"consistent_state({user!r}) is falsy at quiescence: {report}"
                                 + (f" (after {len(raised)} interrupted writes of this user; "
                                    "the last shown)" if raised else ""), raised[-3:]))
    return found


async def _search_until_found(client: Client, user: str, query: str, entry_id: str,
                              staleness: float) -> None:
    """Poll search for up to ``search_staleness``: every attempt is recorded and judged."""
    deadline = time.monotonic() + staleness
    pause = 0.002
    while True:
        hits: list[str] = []

        async def search(hits: list[str] = hits) -> None:
            hits.extend(e.id for e in await client.store.search(user, query, 5))

        started = time.monotonic()
        outcome = await client.call(search)
        if outcome != "ok" or entry_id in hits or started > deadline:
            return  # found, or missed by a search the checker will judge
        await asyncio.sleep(pause)  # bounded polling up to the store's declared staleness
        pause = min(pause * 2, 0.05)


def healthy_errors(history: History) -> list[Anomaly]:
    """G12: every call that raised on a healthy store, one anomaly per distinct error.

    The checker is lenient with a call that raised (``info``): it may or may not have taken
    effect, which is right while a fault is injected. With none, nothing excuses it: SPEC
    G12 lets an operation raise only when a backend is down or too slow, and the
    sequential tests already call such an error a failure. Under concurrency it used to
    pass unseen: a check-then-insert race (an ``IntegrityError`` when two clients create
    the same user's first rows, adk-python #4954, openai-agents-python #2722) only
    happens there. ``ValueError``/``TypeError`` (a refusal, ``fail``) are not errors."""
    seen: dict[str, list[Any]] = {}
    for c in pair(history.ops):
        end = c.completion
        if end is not None and end.type == "info" and c.f not in ("open", "close"):
            seen.setdefault(end.error or "an exception", []).append(c)
    found = []
    for error, calls in seen.items():
        first = calls[0]
        more = (f" ({len(calls) - 1} more calls raised the same)" if len(calls) > 1 else "")
        found.append(Anomaly(Guarantee.ERRORS, f"{first.text} raised {error}, with no fault "
                             f"injected{more}: a valid call on a healthy store must not fail",
                             first.ops, kind=f"raised {error.split(':', 1)[0]}"))
    return found


class During(Protocol):
    """Something that runs beside the load (the faults of ``suite/faults.py``).

    It gets the recorded store, the workload, an event that stops the clients and the
    load itself (a future of every client); it returns once the load is over and the
    store is back in a state the quiescent phase may judge, with what it found itself.
    """

    async def __call__(self, store: LoggedStore, workload: Workload, stop: asyncio.Event,
                       load: asyncio.Future[Any]) -> list[Anomaly]: ...


async def run(store: Any, workload: Workload, *, during: During | None = None,
              ids: Namespace | None = None) -> Outcome:
    """Run one round against an open, empty store and judge it.

    Every call goes through a ``LoggedStore`` into a fresh history: the
    checker judges it, and a timeout reads it to name the calls that were in
    flight (a hung ``compact()`` among hundreds of finished calls). ``during``
    runs beside the load (faults) and may stop it early. ``ids`` (a
    ``LoggedStore``'s own, if given one) makes the users and message ids fresh.
    """
    if isinstance(store, LoggedStore):
        inner, ids = store.inner, store.ids
    else:
        inner = store
    history = History()
    store = LoggedStore(inner, history, ids=ids)
    workload = replace(workload, mix=for_profile(workload.mix, store.resolved))
    slots = itertools.count()
    started = time.monotonic()
    clients = [Client.for_workload(pid, store, workload, slots)
               for pid in range(workload.processes)]
    stop = asyncio.Event()
    load = asyncio.gather(*(c.loop(stop) for c in clients))
    found: list[Anomaly] = []
    if during is None:
        await load
    else:  # a fault may have made a call raise: such calls are indeterminate, no more
        try:
            found = await during(store, workload, stop, load)
        finally:
            stop.set()
            await load
    g11 = await quiesce(store, workload)
    seconds = time.monotonic() - started
    keep_last = int(store.keep_last)
    staleness = float(store.search_staleness)
    checked = time.monotonic()
    if store.keyed:
        anomalies = check_keyed(history, recover=store.can("recover"),
                                compact=store.can("compact"), search_staleness=staleness)
    else:
        anomalies = check(history, keep_last=keep_last, search_staleness=staleness)
    # With no fault injected, a call that raised is the first thing wrong (it may explain
    # the anomalies after it), and is shown first.
    errors = healthy_errors(history) if during is None else []
    return Outcome(workload, history, errors + anomalies + found + g11, keep_last, staleness,
                   seconds, time.monotonic() - checked)


StoreFactory = Callable[[], AbstractAsyncContextManager[Any]]


async def run_rounds(factory: StoreFactory, workload: Workload, rounds: int) -> list[Outcome]:
    """Rounds on fresh stores, each with its own derived seed; stops at the first failure.

    The derived seeds come from ``workload.seed``, so one number replays them all.
    """
    outcomes = []
    for i in range(rounds):
        this = replace(workload, seed=workload.seed * 1000 + i)
        async with opened(factory) as store:  # the store as the suite calls it
            ids = Namespace.new()  # fresh users and message ids for every round
            outcome = await run(store, this, ids=ids)
            await LoggedStore(store, ids=ids).clean_up()
        outcome.workload = replace(this, seed=workload.seed)
        outcome.round = i
        outcomes.append(outcome)
        if not outcome:
            break
    return outcomes

