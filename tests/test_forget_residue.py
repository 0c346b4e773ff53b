"""SPEC G8 from outside: after ``forget(A)``, no engine of a stack holds anything of A.

Every built-in stack forgets user A while user B stays, and the residue scanner
(``adapters/engines/residue.py``) reads every key, row and point of every engine the
stack used, every member of a replicated one, for A's ids and contents in every form
the adapters derive. It must find nothing of A, and must find B: a scanner that sees
nothing would pass anything. The scanner is then shown to find what it should: a key,
a row, a point planted for A directly in each engine kind, named by its place.

Qdrant's local mode in memory lives inside the store's client, which nothing outside
can open: that stack is scanned through the store's own client (``store.index._client``),
the only view there is. Qdrant Edge's shard is read the same way, through the store's
open shard, since a second handle on an open shard directory would be a second writer.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from nomnesia.adapters import adapter_names, lookup, open_store
from nomnesia.adapters.engines import residue
from nomnesia.adapters.engines.residue import ScanResult, scan, scan_edge_shard, scan_qdrant_client
from nomnesia.adapters.indexes import _common

IN_PROCESS = ("qdrant", "qdrant-edge")
"""Engine kinds whose data only the store's own objects can read (see the module doc)."""
SETTLE = 15.0
"""Seconds a replica may take to apply the forget (Redis replicas are asynchronous; a
synchronous PostgreSQL standby has flushed the WAL, not necessarily applied it)."""


def _family(engine: str) -> str:
    """``redis-cluster 127.0.0.1:7000`` -> ``redis-cluster``: which kind a finding is in."""
    return engine.partition(" ")[0]


async def _scan_stack(store: Any, urls: Mapping[str, str], **needles: list[str]) -> ScanResult:
    """Scan every engine of an open stack: by URL, or through the store's own objects."""
    outside = {kind: url for kind, url in urls.items() if kind not in IN_PROCESS}
    result = await asyncio.to_thread(scan, outside, **needles)
    wanted = residue.needles(needles.get("user_ids", ()), needles.get("contents", ()),
                             needles.get("entry_ids", ()))
    if "qdrant" in urls:
        result.extend(await scan_qdrant_client(store.index._client, wanted,
                                               "qdrant (the store's client)"))
    if "qdrant-edge" in urls:
        index = store.index

        def read_shard() -> ScanResult:
            with index._lock:
                return scan_edge_shard(index._shard, wanted, "qdrant-edge (the store's shard)",
                                       f"shard {index.path.name}")
        result.extend(await asyncio.to_thread(read_shard))
    return result


async def _settled(look: Callable[[], Any], done: Callable[[ScanResult], bool]) -> ScanResult:
    """Scan until ``done`` or ``SETTLE`` seconds passed (replicas apply a forget later)."""
    deadline = time.monotonic() + SETTLE
    while True:
        result: ScanResult = await look()
        if done(result) or time.monotonic() > deadline:
            return result
        await asyncio.sleep(0.2)  # a poll interval, bounded by SETTLE


@pytest.mark.parametrize("stack", adapter_names())
async def test_a_forgotten_user_leaves_no_residue_in_any_engine(engines: Any, stack: str) -> None:
    spec = lookup(stack)
    if not spec.engines:
        pytest.skip(f"{stack}: {spec.description}; nothing outside the process to scan")
    tag = secrets.token_hex(6)
    ann, bob = f"ann-{tag}", f"bob-{tag}"
    async with open_store(stack, provider=engines, keep_last=2) as store:
        a_entries = [await store.append_message(ann, "user", f"ann's secret {i} {tag}")
                     for i in range(5)]
        b_entries = [await store.append_message(bob, "user", f"bob's note {i} {tag}")
                     for i in range(5)]
        a_contents = [e.content for e in a_entries] + [
            h.content for h in await store.get_history(ann)]  # summaries too
        await store.forget(ann)
        urls = await asyncio.to_thread(engines.urls, *spec.engines)
        a_needles = {"user_ids": [ann], "contents": a_contents,
                     "entry_ids": [e.id for e in a_entries]}
        of_a = await _settled(lambda: _scan_stack(store, urls, **a_needles),
                              lambda r: not r.residues)
        of_b = await _scan_stack(store, urls, user_ids=[bob],
                                 contents=[e.content for e in b_entries],
                                 entry_ids=[e.id for e in b_entries])
    assert not of_a.unreachable and not of_b.unreachable, of_a.unreachable + of_b.unreachable
    assert of_a.scanned, f"{stack}: the scan read nothing"
    assert [str(r) for r in of_a.residues] == [], f"{stack}: user A left residues"
    seen = {_family(r.engine) for r in of_b.residues}
    assert seen >= set(spec.engines), (
        f"{stack}: the scan did not find user B in {set(spec.engines) - seen}: "
        f"it cannot see there ({of_b.summary()})")
