"""The suite's forget test looks inside the engines the store got from the suite (SPEC G8).

"Keeps nothing" is logical: no key scan, table scan or collection scroll of any backend may
find a forgotten user's ids, contents or keys. The store's own reads cannot show that, so
after ``forget`` the test scans every key and row of the networked engines the suite handed
the store (``engine_url``, the built-in stacks: the engine session records them) with the
residue scanner (``nomnesia.adapters.engines.residue``), for the user's id as the store
received it and the digests the adapters derive from it. A store that deletes a user's
Redis list but leaves its PostgreSQL rows fails G8 with the table and the row named.

Engines the store reached on its own are never scanned (SPEC "Faults": the suite touches
only what it handed out), nor in-process ones (Qdrant local, Milvus Lite: only the store's
own client can read them). A replica may apply the forget a moment late, so a residue is
scanned for again until it is gone or a bound derived from ``--nomnesia-op-timeout`` passes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable

from nomnesia.adapters.engines.residue import POSTGRES_KINDS, REDIS_KINDS, ScanResult, scan
from nomnesia.adapters.engines.session import EngineSession, active_session

from .contract import G8
from .core.recorder import LoggedStore
from .core.settings import settings
from .core.violations import expect

__all__ = ["SCANNED_KINDS", "scan_after_forget", "scan_handed", "scannable"]

SCANNED_KINDS: tuple[str, ...] = (*REDIS_KINDS, *POSTGRES_KINDS, "milvus-server")
"""The networked engines a scan can read from outside the store's process."""
_REPLICA_CATCH_UP = 10.0
"""At most this long (and at most the op timeout) for a replica to apply the forget."""


def scannable(session: EngineSession | None) -> dict[str, str]:
    """The engines ``session`` handed out that a scan can read from outside (kind -> URL)."""
    return {} if session is None else {kind: url for kind, url in session.handed.items()
                                       if kind in SCANNED_KINDS}


def scan_handed(session: EngineSession | None, *, user_ids: Iterable[str] = (),
                contents: Iterable[str] = (), entry_ids: Iterable[str] = ()) -> ScanResult:
    """Scan every engine ``session`` handed out that can be read from outside; the
    ``nomnesia_scan_forget`` fixture's function. A result that scanned nothing is not
    ``clean``: the caller sees that nothing was looked at."""
    engines = scannable(session)
    if not engines:
        return ScanResult()
    return scan(engines, user_ids=user_ids, contents=contents, entry_ids=entry_ids)


async def scan_after_forget(s: LoggedStore, user: str) -> None:
    """G8 by looking inside: nothing of the forgotten ``user`` in any engine the suite handed
    the store; not applicable where it handed none that can be read from outside."""
    session = active_session()
    handed = scannable(session)
    if not handed:
        s.log.note("no engine the suite handed this store can be scanned from outside: G8 "
                   "judged by the store's own reads only", s.store_user(user))
        return
    stored = s.store_user(user)
    bound = min(settings.op_timeout, _REPLICA_CATCH_UP)
    deadline = time.monotonic() + bound
    while True:
        found = await asyncio.to_thread(scan_handed, session, user_ids=[stored])
        if not found.residues or time.monotonic() >= deadline:
            break
        await asyncio.sleep(0.2)  # bounded poll: a replica applying the forget late
    s.log.note(f"scanned after forget: {'; '.join(str(x) for x in found.scanned)}", stored)
    places = [str(residue) for residue in found.residues]
    expect(not places, G8, lambda: (
        f"forget({stored!r}) returned, yet {len(places)} places in the engines the suite "
        f"handed the store still hold the user (a scan of every key and row, "
        f"{bound:g} s after the forget):\n  " + "\n  ".join(places[:12])
        + (f"\n  ... and {len(places) - 12} more" if len(places) > 12 else "")), s.log)
