"""Benchmark: the store's own memory across many distinct users (issue 14).

    python bench/bench_users.py [--checkpoints 1000,10000,100000]

Each user appends a message, reads its history, searches it and is forgotten,
on a TieredMemoryStore over the in-process tiers (InMemoryLog, InMemoryIndex,
InMemoryArchive): what is left afterwards is the store's per-user state
(locks, guards, markers), not user data. At each checkpoint, after a
collection, it prints the Python memory blocks in use
(``sys.getallocatedblocks()``: exact, and free where tracemalloc would slow
the run four times), the process' RSS and the entries left in the store's
per-user structures. Flat: the figures at 100k users are those at 1k.
tests/test_limits.py runs ``measure`` and asserts it.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
from dataclasses import dataclass

import psutil

from nomnesia.adapters.memory_tiers import InMemoryArchive, InMemoryIndex, InMemoryLog
from nomnesia.adapters.tiered import TieredMemoryStore


@dataclass(frozen=True)
class Row:
    users: int
    blocks: int
    """Python memory blocks in use after a collection (``sys.getallocatedblocks``)."""
    rss: int
    """The process' resident set size, bytes."""
    per_user_entries: int
    """Entries in the store's per-user structures (guards, log, index, archive)."""


def per_user_entries(store: TieredMemoryStore) -> int:
    """Every per-user structure of the store and its in-process tiers, summed."""
    log, index, archive = store.log, store.index, store.archive
    assert isinstance(log, InMemoryLog) and isinstance(index, InMemoryIndex)
    assert isinstance(archive, InMemoryArchive)
    return (len(store._guards) + len(log._users) + len(log._writing) + len(index._users)
            + len(archive._users) + len(archive._outbox) + len(archive._user_locks))


async def measure(checkpoints: list[int]) -> list[Row]:
    """Serve ``max(checkpoints)`` distinct users one after another; a Row at each checkpoint."""
    store = TieredMemoryStore(log=InMemoryLog(), index=InMemoryIndex(dim=64),
                              archive=InMemoryArchive())
    rows: list[Row] = []
    process = psutil.Process()
    async with store:
        done = 0
        for target in sorted(checkpoints):
            for n in range(done, target):
                user = f"user-{n}"
                await store.append_message(user, "user", f"hello from {user}")
                await store.get_history(user, 10)
                await store.search(user, "hello", 5)
                await store.forget(user)
            done = target
            gc.collect()
            rows.append(Row(target, sys.getallocatedblocks(), process.memory_info().rss,
                            per_user_entries(store)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("--checkpoints", default="1000,10000,100000",
                        help="comma-separated user counts to print the figures at")
    args = parser.parse_args()
    checkpoints = [int(c) for c in args.checkpoints.split(",")]
    print(f"{'users':>8} {'Python blocks':>14} {'RSS MiB':>8} {'per-user entries':>17}")
    for row in asyncio.run(measure(checkpoints)):
        print(f"{row.users:>8} {row.blocks:>14} {row.rss / 2**20:>8.1f} "
              f"{row.per_user_entries:>17}")


if __name__ == "__main__":
    main()
