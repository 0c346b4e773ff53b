"""The forget residue scanner: what of a forgotten user is still in any engine (SPEC G8).

G8 says that after ``forget(u)`` no query of any backend (key scan, table scan,
collection scroll) finds u's ids, contents or keys. A store's own reads cannot show
that: they look where the store put things, through the store's own filters. This
module looks everywhere instead, from outside, the way an auditor holding u's id
would: every key and value of every Redis/Valkey node, every row of every user table
of every PostgreSQL member, every collection name and point of Qdrant and Milvus. It
reports each place that still holds a needle (an id, a content) or a form derived
from it the way this project's adapters derive keys: the SHA-256 hex of a user id
(``user_key``: key names, Milvus' ``user_key``), the uuid5 point id of (user, entry)
(``point_uuid``: Qdrant and Milvus primary keys), the SHA-256 of an entry id
(RediSearch document keys), the hex of an id or a content (how PostgreSQL prints a
``bytea``), its JSON escape (the Redis log's serialised entries). The derivations are
the ones the indexes use (``engines/keys.py``, on the floor below both).

What G8 leaves out is reported as ``info``, never as a residue: bytes that only a
WAL or dead tuples hold until the engine's own compaction (``n_dead_tup`` of a table).

``scan(engines, user_ids=..., contents=..., entry_ids=...)`` is the API; ``main(argv)``
the command line (``python -m nomnesia.adapters.engines.residue --redis URL
--postgres DSN --user ID``). Client libraries are imported when an engine of theirs
is scanned, so a missing one is a sentence about that engine, not a traceback.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Mapping, Sequence

from ..keys import point_uuid, user_key
from .base import (
    KINDS,
    POSTGRES_KINDS,
    REDIS_KINDS,
    Needle,
    Residue,
    Scanned,
    ScanResult,
    Unreachable,
    needles,
    shown,
)
from .postgres import scan_postgres
from .redis import scan_redis
from .vectors import scan_edge_shard, scan_milvus, scan_qdrant, scan_qdrant_client, scan_qdrant_edge

__all__ = ["KINDS", "POSTGRES_KINDS", "REDIS_KINDS", "Needle", "Residue", "ScanResult", "Scanned",
           "main", "needles", "point_uuid", "scan", "scan_edge_shard", "scan_qdrant_client",
           "user_key"]


_SCANNERS: dict[str, Callable[[str, str, Sequence[Needle], float], ScanResult]] = {
    **{kind: scan_redis for kind in REDIS_KINDS},
    **{kind: scan_postgres for kind in POSTGRES_KINDS},
    "qdrant": scan_qdrant, "qdrant-edge": scan_qdrant_edge,
    "milvus": scan_milvus, "milvus-server": scan_milvus,
}


def scan(engines: Mapping[str, str] | Iterable[tuple[str, str]], *,
         user_ids: Iterable[str] = (), contents: Iterable[str] = (),
         entry_ids: Iterable[str] = (), timeout: float = 10.0) -> ScanResult:
    """Scan each (kind, URL) for the users' ids, contents and entry ids, in every form.

    ``engines`` maps a kind of :data:`KINDS` to its URL (or is a list of pairs, for two
    engines of one kind). An engine that cannot be read (down, a missing client, Qdrant
    in memory) is named in ``unreachable``; the others are still scanned. Blocking:
    call it from a thread (``asyncio.to_thread``) in async code.
    """
    pairs = list(engines.items() if isinstance(engines, Mapping) else engines)
    wanted = needles(user_ids, contents, entry_ids)
    if not wanted:
        raise ValueError("nothing to look for: give a user id, a content or an entry id")
    result = ScanResult()
    for kind, url in pairs:
        scanner = _SCANNERS.get(kind)
        if scanner is None:
            raise ValueError(f"unknown engine kind {kind!r}; known: {', '.join(KINDS)}")
        try:
            result.extend(scanner(kind, url, wanted, timeout))
        except Unreachable as exc:
            result.unreachable.append(str(exc))
        except Exception as exc:  # the engine or its client failed: name it, scan the rest
            result.unreachable.append(f"{kind} {shown(url)}: {type(exc).__name__}: "
                                      f"{shown(str(exc))}")
    return result


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nomnesia scan-forget",
        description="Look for a forgotten user's ids and contents in every engine (SPEC G8).")
    for kind in KINDS:
        parser.add_argument(f"--{kind}", action="append", default=[], metavar="URL",
                            dest=kind.replace("-", "_"), help=f"a {kind} engine to scan")
    parser.add_argument("--user", action="append", default=[], metavar="ID",
                        help="a forgotten user id (repeatable)")
    parser.add_argument("--content", action="append", default=[], metavar="TEXT",
                        help="a content the user wrote (repeatable)")
    parser.add_argument("--entry", action="append", default=[], metavar="ID",
                        help="a message id of the user (repeatable)")
    parser.add_argument("--timeout", type=float, default=10.0,
                        help="seconds per engine call (default 10)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Exit 1 with one line per residue (or unreachable engine); 0 with a summary."""
    parser = _parser()
    args = parser.parse_args(argv)
    engines = [(kind, url) for kind in KINDS for url in getattr(args, kind.replace("-", "_"))]
    if not engines:
        parser.error("give at least one engine to scan (--redis URL, --postgres DSN ...)")
    if not (args.user or args.content or args.entry):
        parser.error("give at least one --user, --content or --entry to look for")
    result = scan(engines, user_ids=args.user, contents=args.content, entry_ids=args.entry,
                  timeout=args.timeout)
    for residue in result.residues:
        print(f"residue: {residue}")
    print(result.summary())
    if result.clean:
        print(f"no residue of {len(args.user)} user(s), {len(args.content)} content(s), "
              f"{len(args.entry)} entry id(s)")
        return 0
    return 1

