"""The load benchmark's workload: its configuration, its contents, its client and its storm.

bench/bench_load.py runs this storm on every stack and reports on it; the storm itself
(what the clients do, how the history records it, what the checker finds) is one
concern and is kept here, so that bench_load.py is only stacks, memory and output, and
a reader of the workload finds all of it in one place. Its client is the suite's
workload client (``nomnesia.suite.core.workload.Client``) with the load's choices.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import random
import time
from bisect import bisect_right
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bench_tiered import pct
from report_parts import short

from nomnesia.suite.core.checker import check
from nomnesia.suite.core.history import History
from nomnesia.suite.core.recorder import LoggedStore
from nomnesia.suite.core.workload import DEFAULT_USERS, Client, Mix, Workload, quiesce

__all__ = ["DEFAULT_OPS", "LOAD_MIX", "OPS", "QUICK", "SPEC_MAX", "Contents", "LoadClient",
           "LoadConfig", "digest", "storm"]

OPS = ("append", "read", "search", "compact", "forget")
SPEC_MAX = 65_536
DIGEST_OVER = 256
DEFAULT_OPS = 5_000
"""Sized so that pgvector takes about a minute on 2 shared cores (see docs/bench.md)."""

LOAD_MIX = Mix(append=0.62, read=0.18, search=0.12, compact=0.06, forget=0.02,
               message_id=0.2, retry=0.3, conflict=0.05, twin=0.0, exact_search=0.7, yield_=0.5)
"""Append dominant; the retry knobs keep G6 (idempotent appends) under load too."""

_VOCAB = ("apple", "berry", "cloud", "delta", "ember", "fjord", "grain", "harbor", "iris",
          "jade", "kettle", "lumen", "moss", "nectar", "olive", "pearl", "quartz", "river",
          "café", "naïve", "日本語", "🙂", "👩‍💻", "\x00", "tab\there", "line\nbreak", "{x}:%*")


@dataclass(frozen=True)
class LoadConfig:
    """One run's workload; ``asdict`` of it goes into the report so a row says what it measured."""

    seed: int
    users: int = 10_000
    ops: int | None = DEFAULT_OPS
    """Calls in the storm; None: until ``duration``."""
    duration: float | None = None
    """Seconds the storm may run (also a cap when ``ops`` is set)."""
    concurrency: int = 32
    mix: Mix = field(default_factory=lambda: LOAD_MIX)
    medium: float = 0.15
    """Share of contents of 257..4,096 code points (the rest: 1..256, but see below)."""
    large: float = 0.04
    """Share of contents of 4,097..65,536 code points."""
    at_max: float = 0.01
    """Share of contents of exactly SPEC's maximum, 65,536 code points."""
    odd: float = 0.1
    """Share of short contents that get a NUL and an emoji spliced in."""
    final_users: int = 256
    """The most active users that the quiescent phase reads, searches and checks (G11)."""
    probe_reps: int = 3
    rss_interval: float = 1.0


QUICK = {"users": 300, "ops": 800, "concurrency": 8, "final_users": 32, "probe_reps": 1,
         "rss_interval": 0.25}


# -- the workload -------------------------------------------------------------------

def digest(text: str) -> str:
    """What the history records of a content or query: itself if short, else a digest.

    Generated contents start with ``p``, so a digest (``#``) never equals a short one.
    """
    if len(text) <= DIGEST_OVER:
        return text
    h = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
    return f"#{len(text)}:{h}"


class Contents:
    """Seeded contents of any size, sliced from one base text so a 64 Ki one costs nothing."""

    def __init__(self, seed: int) -> None:
        rng = random.Random(f"{seed}/contents")
        words: list[str] = []
        size = 0
        while size < 2 * SPEC_MAX + 1:
            word = rng.choice(_VOCAB)
            words.append(word)
            size += len(word) + 1
        self.base = " ".join(words)

    def make(self, tag: str, offset: int, size: int) -> str:
        """Exactly ``size`` code points (at least the tag), starting with the unique tag."""
        text = f"{tag} {self.base[offset:offset + size]}"
        return text[:max(size, len(tag))]


class _Load:
    """Shared state of one storm: the store, the history, the per-call-type samples."""

    def __init__(self, store: Any, cfg: LoadConfig) -> None:
        self.store = store
        self.cfg = cfg
        self.history = History()
        self.contents = Contents(cfg.seed)
        self.users = list(DEFAULT_USERS) + [f"u{i}" for i in range(len(DEFAULT_USERS), cfg.users)]
        self.users = self.users[:cfg.users]
        random.Random(f"{cfg.seed}/ranks").shuffle(self.users)
        self.cum = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(len(self.users))))
        self.slots = itertools.count()
        self.deadline = (time.monotonic() + cfg.duration) if cfg.duration else None
        self.latency: dict[str, list[float]] = {op: [] for op in OPS}
        self.errors: dict[str, int] = dict.fromkeys(OPS, 0)
        self.first_error: dict[str, str] = {}
        self.per_user: dict[str, int] = {}
        self.sizes: list[int] = []

    def more(self) -> bool:
        n = next(self.slots)
        if self.cfg.ops is not None and n >= self.cfg.ops:
            return False
        return self.deadline is None or time.monotonic() < self.deadline


class LoadClient(Client):
    """The workload's client (``nomnesia.suite.core.workload.Client``) with the load's choices.

    Zipf-drawn users, contents of every size remembered by how they were made, its own
    limits and queries, and calls recorded (with digests) and timed here.
    """

    KS = (1, 2, 5, 10)

    def __init__(self, pid: int, load: _Load) -> None:
        super().__init__(pid, load.store, load.cfg.mix, load.cfg.seed, load.users)
        self.load = load

    async def call(self, make: Callable[[], Awaitable[Any]], f: str = "", user: str = "",
                   value: Any = None) -> str:
        started = time.perf_counter()
        try:
            return await super().call(make, f, user, value)
        finally:
            self.load.latency[f].append(time.perf_counter() - started)

    async def send(self, make: Callable[[], Awaitable[Any]], f: str, user: str,
                   value: Any) -> None:
        async with self.load.history.record(self.pid, f, user, value) as c:
            c.set(await make())

    async def recover(self) -> None:
        async with self.load.history.record(self.pid, "recover", "", None):
            await self.store.recover()

    def errored(self, f: str, exc: Exception) -> None:
        self.load.errors[f] += 1
        self.load.first_error.setdefault(f, short(exc))

    def more(self) -> bool:
        return self.load.more()

    def size(self) -> int:
        cfg, r = self.load.cfg, self.rng.random()
        if r < cfg.at_max:
            return SPEC_MAX
        if r < cfg.at_max + cfg.large:
            return self.rng.randint(4_097, SPEC_MAX)
        if r < cfg.at_max + cfg.large + cfg.medium:
            return self.rng.randint(DIGEST_OVER + 1, 4_096)
        return self.rng.randint(1, DIGEST_OVER)

    def content(self, user: str) -> str:
        """Remembered as how it was made (tag, offset, size), not as the text."""
        self.n += 1
        tag = f"p{self.pid} n{self.n}"
        recipe = (tag, self.rng.randrange(SPEC_MAX), self.size())
        text = self.load.contents.make(*recipe)
        if recipe[2] <= DIGEST_OVER and self.rng.random() < self.load.cfg.odd:
            cut = self.rng.randint(len(tag), len(text))
            text = f"{text[:cut]}\x00🙂{text[cut:]}"[:max(len(tag), recipe[2])]
            recipe = (text, -1, 0)  # short: keep the text itself
        recent = self.recent.setdefault(user, [])
        recent.append(recipe)
        del recent[:-4]
        self.load.sizes.append(len(text))
        return text

    def user(self) -> str:
        load = self.load
        i = min(bisect_right(load.cum, self.rng.random() * load.cum[-1]), len(load.users) - 1)
        user = load.users[i]
        load.per_user[user] = load.per_user.get(user, 0) + 1
        return user

    def message_id(self) -> str:
        return f"m:{self.pid}/{self.n}"

    def limit(self) -> int:
        return self.rng.choice((1, 2, 4, 5, 10, 50, 1000))

    def query(self, user: str) -> str:
        recent = self.recent.get(user)
        if recent and self.rng.random() < self.mix.exact_search:
            tag, offset, size = self.rng.choice(recent)
            return str(tag) if offset < 0 else self.load.contents.make(tag, offset, size)
        return self.rng.choice(_VOCAB[:20])

    def recorded(self, text: str) -> str:
        return digest(text)

    def forgetting(self, user: str) -> None:
        self.recent.pop(user, None)


async def storm(store: Any, cfg: LoadConfig) -> dict[str, Any]:
    """The concurrent workload, the suite's quiescent phase, and the checker's verdict."""
    load = _Load(store, cfg)
    started = time.perf_counter()
    await asyncio.gather(*(LoadClient(pid, load).loop() for pid in range(cfg.concurrency)))
    wall = time.perf_counter() - started
    hot = sorted(load.per_user, key=lambda u: -load.per_user[u])[:cfg.final_users]
    quiet = time.perf_counter()
    g11 = await quiesce(LoggedStore(store, load.history),
                         Workload(seed=cfg.seed, processes=cfg.concurrency, users=tuple(hot)))
    quiet = time.perf_counter() - quiet
    checked = time.perf_counter()
    anomalies = check(load.history, keep_last=int(store.keep_last),
                      search_staleness=float(store.search_staleness)) + g11
    checked = time.perf_counter() - checked
    calls = sum(1 for op in load.history if op.type == "invoke")
    by_guarantee: dict[str, int] = {}
    for a in anomalies:
        key = str(a.guarantee).split(" ", 1)[0]
        by_guarantee[key] = by_guarantee.get(key, 0) + 1
    ops: dict[str, Any] = {}
    for f in OPS:
        samples = load.latency[f]
        ops[f] = {"count": len(samples), "per_s": len(samples) / wall if wall else 0.0,
                  "p50_ms": pct(samples, 0.5) if samples else None,
                  "p99_ms": pct(samples, 0.99) if samples else None,
                  "errors": load.errors[f], "first_error": load.first_error.get(f)}
    sizes = sorted(load.sizes)
    return {
        "calls": calls, "storm_calls": sum(len(v) for v in load.latency.values()),
        "storm_s": wall, "quiesce_s": quiet, "check_s": checked,
        "calls_per_s": sum(len(v) for v in load.latency.values()) / wall if wall else 0.0,
        "users_touched": len(load.per_user), "hottest_user_calls": max(load.per_user.values(),
                                                                       default=0),
        "content_sizes": {"appends": len(sizes), "max": sizes[-1] if sizes else 0,
                          "p50": sizes[len(sizes) // 2] if sizes else 0,
                          "at_spec_max": sum(1 for s in sizes if s == SPEC_MAX),
                          "over_4096": sum(1 for s in sizes if s > 4096)},
        "anomalies": len(anomalies), "by_guarantee": dict(sorted(by_guarantee.items())),
        "anomalies_per_1k": 1000.0 * len(anomalies) / calls if calls else 0.0,
        "first_anomalies": [str(a)[:600] for a in anomalies[:3]],
        "ops": ops}
