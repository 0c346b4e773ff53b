"""TieredMemoryStore: short-term log + vector index + archive, safe under crashes.

The seed wrote its three backends one after the other and lost memory whenever
it was interrupted in between. Here the archive is the source of truth: every
write is first ONE archive transaction (entry or summary + covered marks + an
outbox row naming the user), and only then are the log and the index brought
in line, idempotently, keyed by entry id. An interruption can therefore only
leave a tier *behind* the archive; the outbox row says so, and ``recover()``
(or the next write for that user) re-syncs the tiers from the archive.

Reads never trust a tier that may be behind:

- ``get_history`` serves the log only when no write of that user is in flight
  in this store and none was interrupted (a per-user seqlock: the version is
  bumped when a writer takes the user's lock, and re-checked after the read);
  otherwise it reads the archive's live rows. It reads them too while the log
  does not answer (``TierDown``: its engine down, or failing over; or the call
  timed out): the log is a cache, and its outage need not be the reader's. An
  error the engine answered with is still the caller's.
- ``search`` over-fetches ids from the index, then keeps only the archive's
  live rows (plus live rows whose content is exactly the query), so an index
  that still holds covered or forgotten entries can never leak them.

Each user has an asyncio lock held across a write's archive commit and tier
updates; the summarizer runs outside it, and a compaction whose prefix moved
meanwhile is recomputed.

Several processes (replicas) may share one namespace with ``shared=True``: the
user's lock is then also taken on the archive (``SharedArchive``), and the log
carries a per-user write marker (``SharedLog``) that tells every replica's reads
what the in-process seqlock tells this one's, and tells writers that a write
died mid-way elsewhere. Without it, two replicas break G5 and G7 within seconds.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from types import TracebackType

from nomnesia.suite.contract import (
    Capabilities,
    ConsistencyReport,
    Difference,
    Entry,
    summary_of,
)
from nomnesia.suite.contract.errors import (
    BackendTimeout,
    BackendUnavailable,
    StoreClosed,
)
from nomnesia.suite.contract.failpoints import failpoint
from nomnesia.suite.contract.validation import (
    validate_append,
    validate_limit,
    validate_query,
    validate_user_id,
)

from .abandoned import Abandoned
from .bounds import PerUser, clamp_limit, over_fetch
from .text import ConcatSummarizer, Embedder, HashingEmbedder, Summarizer
from .tier_io import TierIO
from .tiers import (
    ArchiveTier,
    SelfChecking,
    SharedArchive,
    SharedLog,
    ShortTermLog,
    StalePrefix,
    TierDown,
    TierLost,
    VectorIndex,
)

__all__ = ["FAILPOINTS", "TieredMemoryStore"]

FAILPOINTS: tuple[str, ...] = (
    "tiered.append.after_archive",
    "tiered.append.after_log",
    "tiered.append.after_index",
    "tiered.compact.after_summarize",
    "tiered.compact.after_archive",
    "tiered.compact.after_log_put",
    "tiered.compact.after_log",
    "tiered.compact.after_index_upsert",
    "tiered.compact.after_index",
    "tiered.forget.after_archive",
    "tiered.forget.after_log",
    "tiered.forget.after_index",
    "tiered.resync.after_log",
    "tiered.resync.after_index",
)
"""Every point between two backend writes, in the order an operation passes them."""

_COMPACT_ATTEMPTS = 8

@dataclass
class _Guard:
    """Per-user writer lock, seqlock version, and whether a tier may be behind.

    Held in a ``PerUser`` registry: it exists while a task (writer or reader) uses
    it, or while ``dirty``, so the store's memory does not grow with every user id
    it has seen. A reader holds it across its read, so the version it compares
    after the read is the one any writer meanwhile bumped.
    """

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    version: int = 0
    dirty: bool = False


class TieredMemoryStore(TierIO):
    """A MemoryStore over any ShortTermLog, VectorIndex and ArchiveTier.

    ``timeout`` bounds every backend call (SPEC G12); ``history_from_log``
    can be turned off to serve every read from the archive. ``shared`` makes
    replicas in other processes safe (see the module docstring); it costs a lock
    round trip on the archive and two marker calls on the log per write.
    """

    capabilities = Capabilities(failpoints=True, failpoint_names=FAILPOINTS, persistent=True)

    # The bounds (adapters/bounds.py) between a caller's k/limit and every tier. A
    # subclass that replaces them is the positive control of the suite's limit tests
    # (fragile.UnclampedTieredStore): the store as it was before issue 14.
    _index_k = staticmethod(over_fetch)
    _history_limit = staticmethod(clamp_limit)

    def __init__(self, *, log: ShortTermLog, index: VectorIndex, archive: ArchiveTier,
                 keep_last: int = 4, embedder: Embedder | None = None,
                 summarizer: Summarizer | None = None, timeout: float = 5.0,
                 history_from_log: bool = True, shared: bool = False) -> None:
        validate_limit("keep_last", keep_last)
        # With shared=True, the archive's user locks and the log's write markers.
        self._shared: tuple[SharedArchive, SharedLog] | None = None
        if shared:
            if not (isinstance(archive, SharedArchive) and isinstance(log, SharedLog)):
                lacking = [f"{tier.name} is not a {kind.__name__}"
                           for tier, kind in ((archive, SharedArchive), (log, SharedLog))
                           if not isinstance(tier, kind)]
                raise ValueError(f"shared=True needs tiers that replicas can share: "
                                 f"{'; '.join(lacking)}")
            self._shared = (archive, log)
        if timeout <= 0:
            raise ValueError("timeout must be > 0")
        self.keep_last = keep_last
        self.log, self.index, self.archive = log, index, archive
        self.search_staleness: float = index.search_staleness
        self.timeout = timeout
        self.history_from_log = history_from_log
        self._embedder: Embedder = embedder or HashingEmbedder(index.dim)
        if self._embedder.dim != index.dim:
            raise ValueError(f"embedder dim {self._embedder.dim} != index dim {index.dim}")
        self._embed_in_thread = bool(getattr(self._embedder, "blocking", False))
        self._embed_beside_commit = (isinstance(self._embedder, HashingEmbedder)
                                     and not self._embed_in_thread)
        self._summarizer: Summarizer = summarizer or ConcatSummarizer()
        self._guards: PerUser[_Guard] = PerUser(_Guard, keep=lambda g: g.dirty)
        self._closed = False
        # The log engine lost data (restarted empty): read the archive until rebuilt.
        self._log_lost = False
        self._lost_index = False  # the same, for an index that can tell (search needs no flag)
        self._abandoned = Abandoned()  # backend calls given up on, which may still land

    async def __aenter__(self) -> TieredMemoryStore:
        await self.recover()  # finish what a crashed process left; vouch for the log
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()

    # -- plumbing -------------------------------------------------------------

    async def _failpoint(self, name: str) -> None:
        await failpoint(name)  # this module's name, the one a test swaps for another registry

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosed("TieredMemoryStore is closed")

    @asynccontextmanager
    async def _writing(self, user_id: str, guard: _Guard) -> AsyncIterator[bool]:
        """The user's write section; yields whether a write died mid-way in another replica.

        A block that raises leaves the shared marker set: the tiers may be behind,
        so replicas read the archive until a later write re-syncs the user. Only a
        refusal (``ValueError``) clears it, since nothing was written.
        """
        async with guard.lock:
            guard.version += 1
            await self._settle()
            if self._shared is None:
                yield False
                return
            archive, log = self._shared
            async with archive.user_lock(user_id, self.timeout):
                token = uuid.uuid4().hex
                left = await self._call(self.log.name, log.begin_write(user_id, token))
                try:
                    yield left
                except ValueError:
                    await self._call(self.log.name, log.end_write(user_id, token))
                    raise
                await self._call(self.log.name, log.end_write(user_id, token))

    async def _resync(self, user_id: str, guard: _Guard) -> None:
        """Bring log and index in line with the archive for one user (caller holds the lock)."""
        pending = await self._call(self.archive.name, self.archive.pending(user_id))
        live = await self._call(self.archive.name, self.archive.live(user_id))
        if not live:
            await self._call(self.log.name, self.log.delete_user(user_id))
            await failpoint("tiered.resync.after_log")
            await self._call(self.index.name, self.index.delete_user(user_id))
        else:
            wanted = {e.id for e in live}
            in_log = await self._call(self.log.name, self.log.ids(user_id))
            in_index = await self._call(self.index.name, self.index.ids(user_id))
            if extra := sorted(in_log - wanted):
                await self._call(self.log.name, self.log.remove(user_id, extra))
            if missing := [e for e in live if e.id not in in_log]:
                await self._call(self.log.name, self.log.put(missing))
            await failpoint("tiered.resync.after_log")
            if extra := sorted(in_index - wanted):
                await self._call(self.index.name, self.index.delete(user_id, extra))
            if missing := [e for e in live if e.id not in in_index]:
                await self._call(self.index.name,
                                 self.index.upsert(missing, await self._vectors(missing)))
        await failpoint("tiered.resync.after_index")
        if pending:
            await self._call(self.archive.name, self.archive.clear([ob for ob, _ in pending]))
        guard.dirty = False

    # -- the protocol ---------------------------------------------------------

    async def append_message(self, user_id: str, role: str, content: str,
                             *, message_id: str | None = None) -> Entry:
        user_id, role, content, message_id = validate_append(user_id, role, content, message_id)
        self._check_open()
        entry_id = message_id if message_id is not None else uuid.uuid4().hex
        # An embedder that may refuse an input does so before anything is written; the
        # built-in one cannot (a pure function of validated text): it runs beside the
        # commit (_embed_beside).
        vector = None if self._embed_beside_commit else await self._embed([content])
        with self._guards.use(user_id) as guard:
            async with self._writing(user_id, guard) as left_behind:
                if guard.dirty or left_behind:
                    await self._resync(user_id, guard)
                guard.dirty = True  # from here the archive may hold what the tiers lack
                commit = asyncio.ensure_future(
                    self.archive.append(user_id, entry_id, role, content))
                if vector is None:
                    try:
                        vector = await self._embed_beside(content)
                    except BaseException:  # the commit may still land: tracked, tiers behind
                        self._abandoned.add(commit, self.archive.name)
                        raise
                try:
                    entry, outbox = await self._outcome(self.archive.name, commit, self.timeout)
                except ValueError:
                    guard.dirty = False  # refused inside the transaction: nothing was written
                    raise
                if outbox is None:  # an idempotent retry: already accounted for and synced
                    guard.dirty = False
                    return entry
                await failpoint("tiered.append.after_archive")
                await self._put_tiers([entry], vector, "append")
                await self._call(self.archive.name, self.archive.clear([outbox], lazy=True))
                guard.dirty = False
                return entry

    async def get_history(self, user_id: str, limit: int = 10) -> list[Entry]:
        validate_user_id(user_id)
        validate_limit("limit", limit)
        self._check_open()
        limit = self._history_limit(limit)  # no tier sees a caller's unbounded number
        with self._guards.use(user_id) as guard:
            if self.history_from_log and not self._log_lost and not (
                    guard.lock.locked() or guard.dirty):
                version = guard.version
                try:
                    entries = await self._call(self.log.name, self._log_tail(user_id, limit),
                                               down_ok=True)
                except TierLost:
                    self._log_lost = True
                except (TierDown, BackendTimeout):
                    pass  # the log is a cache: while it is down (a failover) read the archive
                else:
                    if entries is not None and guard.version == version and not (
                            guard.lock.locked() or guard.dirty):
                        return entries
            return await self._call(self.archive.name, self.archive.tail(user_id, limit))

    async def _log_tail(self, user_id: str, limit: int) -> list[Entry] | None:
        """The log's tail, or None while a replica's write of the user is unfinished."""
        if self._shared is not None:
            return await self._shared[1].tail_if_idle(user_id, limit)
        return await self.log.tail(user_id, limit)

    async def search(self, user_id: str, query: str, k: int = 5) -> list[Entry]:
        validate_user_id(user_id)
        validate_query(query)
        validate_limit("k", k)
        self._check_open()
        vector = (await self._embed([query]))[0]
        try:
            ids = await self._call(self.index.name,
                                   self.index.query(user_id, vector, self._index_k(k)))
        except TierLost:  # exact-content matches still come from the archive
            ids = []
            self._lost_index = True
        # The archive decides what is live: the index may still hold covered ids.
        live = await self._call(self.archive.name, self.archive.live_among(user_id, ids, query))
        rank = {entry_id: i for i, entry_id in enumerate(ids)}
        live.sort(key=lambda e: (e.content != query, rank.get(e.id, len(rank)), -e.seq))
        return live[:k]

    async def compact(self, user_id: str) -> Entry | None:
        validate_user_id(user_id)
        self._check_open()
        with self._guards.use(user_id) as guard:
            return await self._compact(user_id, guard)

    async def _compact(self, user_id: str, guard: _Guard) -> Entry | None:
        """Summarise outside the user's lock (summaries can be slow), commit under it.

        A commit whose prefix moved meanwhile (an append, another compaction)
        retries; after ``_COMPACT_ATTEMPTS`` lost races the last attempt
        summarises *under* the lock, which cannot lose. Giving up instead raised
        "postgres unavailable" with PostgreSQL up, under 16 compactors on one user.
        """
        for _ in range(_COMPACT_ATTEMPTS - 1):
            plan = await self._plan_compaction(user_id)
            if plan is None:
                return None
            await failpoint("tiered.compact.after_summarize")
            async with self._writing(user_id, guard) as left_behind:
                done = await self._commit_compaction(user_id, guard, plan, left_behind)
            if done is not None:
                return done
        async with self._writing(user_id, guard) as left_behind:
            if guard.dirty or left_behind:
                await self._resync(user_id, guard)
            plan = await self._plan_compaction(user_id)
            if plan is None:
                return None
            await failpoint("tiered.compact.after_summarize")
            done = await self._commit_compaction(user_id, guard, plan, False)
        if done is None:  # only a writer that ignores our lock can get here
            raise BackendUnavailable(self.archive.name,
                                     f"compaction of {user_id!r}: the prefix moved under the "
                                     "user's write lock")
        return done

    async def _plan_compaction(
            self, user_id: str) -> tuple[list[Entry], Entry, list[list[float]]] | None:
        """The prefix to compact, its summary and the summary's vector; None if too short."""
        live = await self._call(self.archive.name, self.archive.live(user_id))
        if len(live) <= self.keep_last:
            return None
        prefix = live[: len(live) - self.keep_last]
        content = await self._summarizer.summarize(user_id, prefix)
        summary = summary_of(f"summary-{uuid.uuid4().hex}", prefix, content)
        return prefix, summary, await self._vectors([summary])

    async def _commit_compaction(self, user_id: str, guard: _Guard,
                                 plan: tuple[list[Entry], Entry, list[list[float]]],
                                 left_behind: bool) -> Entry | None:
        """Inside the write section: archive first, then log and index. None if stale."""
        prefix, summary, vector = plan
        removed = [e.id for e in prefix]
        if guard.dirty or left_behind:
            await self._resync(user_id, guard)
        guard.dirty = True
        try:
            outbox = await self._call(
                self.archive.name, self.archive.commit_compaction(user_id, prefix, summary))
        except StalePrefix:
            guard.dirty = False
            return None  # another compaction or a forget moved the prefix: recompute
        await failpoint("tiered.compact.after_archive")
        await self._call(self.log.name, self.log.put([summary]))
        await failpoint("tiered.compact.after_log_put")
        await self._call(self.log.name, self.log.remove(user_id, removed))
        await failpoint("tiered.compact.after_log")
        await self._call(self.index.name, self.index.upsert([summary], vector))
        await failpoint("tiered.compact.after_index_upsert")
        await self._call(self.index.name, self.index.delete(user_id, removed))
        await failpoint("tiered.compact.after_index")
        await self._call(self.archive.name, self.archive.clear([outbox], lazy=True))
        guard.dirty = False
        return summary

    async def forget(self, user_id: str) -> None:
        validate_user_id(user_id)
        self._check_open()
        # Once it is over, the user's guard goes too (G8, and flat memory).
        with self._guards.use(user_id) as guard:
            async with self._writing(user_id, guard):
                guard.dirty = True
                outbox = await self._call(self.archive.name, self.archive.forget(user_id))
                await failpoint("tiered.forget.after_archive")
                await self._call(self.log.name, self.log.delete_user(user_id))
                await failpoint("tiered.forget.after_log")
                await self._call(self.index.name, self.index.delete_user(user_id))
                await failpoint("tiered.forget.after_index")
                # Not lazy: the outbox row names the user, and G8 keeps nothing of them.
                await self._call(self.archive.name, self.archive.clear([outbox]))
                guard.dirty = False

    async def consistent_state(self, user_id: str) -> ConsistencyReport:
        """Compare the archive's live ids with the log's and the index's, naming each gap."""
        validate_user_id(user_id)
        self._check_open()
        live = await self._call(self.archive.name, self.archive.live(user_id))
        wanted = {e.id for e in live}
        differences: list[Difference] = []
        for tier in (self.log, self.index):
            held = await self._call(tier.name, tier.ids(user_id))
            differences += [Difference(tier.name, "missing", i, "live in the archive")
                            for i in sorted(wanted - held)]
            differences += [Difference(tier.name, "extra", i, "not live in the archive")
                            for i in sorted(held - wanted)]
        for tier in (self.log, self.index):
            if isinstance(tier, SelfChecking) and not await self._call(tier.name, tier.intact()):
                differences.append(Difference(tier.name, "stale", None,
                                              "lost its data (engine restarted empty?); "
                                              "recover() rebuilds it"))
        if differences:
            pending = await self._call(self.archive.name, self.archive.pending(user_id))
            if pending:
                differences.append(Difference(
                    self.archive.name, "stale", None,
                    f"{len(pending)} unfinished outbox record(s); recover() replays them"))
        return ConsistencyReport.of(user_id, differences,
                                    backends=(self.archive.name, self.log.name, self.index.name))

    async def recover(self) -> None:
        """Re-sync every user with an outbox row or an interrupted write. Idempotent.

        If a tier that can tell (``SelfChecking``) lost its data (its engine
        restarted empty), every user of the archive is re-synced and the tier
        vouched for again, unless it lost data again meanwhile (then the next
        ``recover()`` tries again).
        """
        self._check_open()
        # Calls abandoned by interrupted operations may still be landing; their
        # outbox rows must be visible before we decide who needs a resync.
        await self._settle()
        tokens: list[tuple[bool, SelfChecking, str]] = []  # (is the log, tier, token)
        for tier, lost in ((self.log, self._log_lost), (self.index, self._lost_index)):
            if isinstance(tier, SelfChecking) and (
                    lost or not await self._call(tier.name, tier.intact())):
                if tier is self.log:
                    self._log_lost = True
                token = await self._call(tier.name, tier.begin_rebuild())
                tokens.append((tier is self.log, tier, token))
        pending = await self._call(self.archive.name, self.archive.pending())
        users = dict.fromkeys(u for _, u in pending)
        users.update(dict.fromkeys(u for u, g in self._guards.items() if g.dirty))
        if tokens:
            users.update(dict.fromkeys(await self._call(self.archive.name, self.archive.users())))
        for user_id in users:
            with self._guards.use(user_id) as guard:
                async with self._writing(user_id, guard):
                    await self._resync(user_id, guard)
        for is_log, checked, token in tokens:
            name = self.log.name if is_log else self.index.name
            intact = await self._call(name, checked.mark_intact(token))
            if is_log:
                self._log_lost = not intact
            else:
                self._lost_index = not intact

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        # let abandoned calls finish, within a bound, then give up on them
        await self._abandoned.wait(self.timeout, cancel_stuck=True)
        errors: list[BaseException] = []
        for tier in (self.archive, self.log, self.index):
            try:
                await self._call(tier.name, tier.aclose())
            except Exception as exc:
                errors.append(exc)
        if errors:
            raise errors[0]
