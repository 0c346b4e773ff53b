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
repeated here, not imported: the engines sit below the indexes (tests/test_layers.py),
and tests/test_forget_residue.py checks that both agree.

What G8 leaves out is reported as ``info``, never as a residue: bytes that only a
WAL or dead tuples hold until the engine's own compaction (``n_dead_tup`` of a table).

``scan(engines, user_ids=..., contents=..., entry_ids=...)`` is the API; ``main(argv)``
the command line (``python -m nomnesia.adapters.engines.residue --redis URL
--postgres DSN --user ID``). Client libraries are imported when an engine of theirs
is scanned, so a missing one is a sentence about that engine, not a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import importlib
import json
import re
import sys
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .urls import CLUSTER_SCHEME, SENTINEL_SCHEME, parse_cluster_url, parse_sentinel_url

__all__ = ["KINDS", "Needle", "Residue", "ScanResult", "Scanned", "main", "needles", "scan",
           "scan_edge_shard", "scan_qdrant_client"]

REDIS_KINDS = ("redis", "valkey", "redis-search", "redis-sentinel", "valkey-sentinel",
               "redis-cluster")
POSTGRES_KINDS = ("postgres", "postgres-ha", "postgres-ha-async")
KINDS = (*REDIS_KINDS, *POSTGRES_KINDS, "qdrant", "qdrant-edge", "milvus", "milvus-server")
"""Engine kinds ``scan`` knows: the provider's names (``adapters/registry.py``)."""

_POINT_NS = uuid.UUID("6f1c3f0e-8a9b-5b4e-9d3c-0b7a4e2f9c11")
"""``indexes/_common.py``'s uuid5 namespace of point ids (kept equal by a test)."""

_MIN_HEX_BYTES = 4
"""Values shorter than this get no hex form: 2 hex digits per byte of a short value
would match inside any digest (a false residue), and a short value names nobody."""

_CLIENTS = {"redis": "redis", "psycopg": "pgvector", "qdrant_client": "qdrant",
            "pymilvus": "milvus", "qdrant_edge": "embedded"}
"""Import name -> the nomnesia extra that brings it, for the missing-client sentence."""


@dataclass(frozen=True)
class Needle:
    """One string to look for: ``text`` is the form an engine would hold, ``what`` says
    which form (``user id/sha256``), ``value`` is the id or content it came from."""

    text: str
    what: str
    value: str
    fold: bool = False
    """Hex forms: matched case-insensitively (engines print hex in either case)."""

    def found_in(self, text: str, folded: str) -> bool:
        return self.text in (folded if self.fold else text)


@dataclass(frozen=True)
class Residue:
    """A place that still holds a needle: ``engine`` (kind and address), ``place`` in it
    (``table nm_ab12.entries row (0,3)``), ``what`` form of ``needle`` was found."""

    engine: str
    place: str
    what: str
    needle: str

    def __str__(self) -> str:
        return f"{self.engine} {self.place}: {self.what} {self.needle!r}"


@dataclass(frozen=True)
class Scanned:
    """What one engine's scan read: ``count`` ``unit`` (keys, rows, points, collections)."""

    engine: str
    unit: str
    count: int

    def __str__(self) -> str:
        return f"{self.engine}: {self.count} {self.unit}"


@dataclass
class ScanResult:
    """A scan's findings, and what it read, so that a scan that read nothing says so."""

    residues: list[Residue] = field(default_factory=list)
    info: list[str] = field(default_factory=list)
    """Outside G8: dead tuples, WAL; and what could not be read (an unknown key type)."""
    scanned: list[Scanned] = field(default_factory=list)
    unreachable: list[str] = field(default_factory=list)
    """Engines the scan could not read, one sentence each, naming the engine."""

    @property
    def clean(self) -> bool:
        """No residue, every engine read, and at least one engine read."""
        return not self.residues and not self.unreachable and bool(self.scanned)

    def extend(self, other: ScanResult) -> None:
        self.residues += other.residues
        self.info += other.info
        self.scanned += other.scanned
        self.unreachable += other.unreachable

    def summary(self) -> str:
        """One line per engine read, then the info and unreachable lines."""
        lines = [f"scanned {s}" for s in self.scanned] or ["scanned nothing"]
        lines += [f"info: {line}" for line in self.info]
        lines += [f"unreachable: {line}" for line in self.unreachable]
        return "\n".join(lines)


def user_key(user_id: str) -> str:
    """Hex SHA-256 of a user id, as ``indexes/_common.user_key`` derives it."""
    return hashlib.sha256(user_id.encode("utf-8")).hexdigest()


def point_uuid(user_id: str, entry_id: str) -> uuid.UUID:
    """The point id of (user, entry), as ``indexes/_common.point_uuid`` derives it."""
    u, e = user_id.encode("utf-8"), entry_id.encode("utf-8")
    return uuid.uuid5(_POINT_NS, f"{len(u)}:{u.hex()}:{e.hex()}")


def _plain_forms(value: str, what: str) -> Iterator[Needle]:
    yield Needle(value, what, value)
    escaped = json.dumps(value)[1:-1]  # the Redis log's JSON blobs (ensure_ascii)
    if escaped != value:
        yield Needle(escaped, f"{what}/json", value)
    raw = value.encode("utf-8")
    if len(raw) >= _MIN_HEX_BYTES:  # PostgreSQL prints bytea as \x<hex>
        yield Needle(raw.hex(), f"{what}/hex", value, fold=True)


def needles(user_ids: Iterable[str] = (), contents: Iterable[str] = (),
            entry_ids: Iterable[str] = ()) -> list[Needle]:
    """Every form of the given values that an adapter of this project may store."""
    users, entries = list(user_ids), list(entry_ids)
    found: list[Needle] = []
    for user in users:
        found += _plain_forms(user, "user id")
        found.append(Needle(user_key(user), "user id/sha256", user, fold=True))
    for content in contents:
        found += _plain_forms(content, "content")
    for entry in entries:
        found += _plain_forms(entry, "entry id")
        found.append(Needle(user_key(entry), "entry id/sha256", entry, fold=True))
        for user in users:
            point = point_uuid(user, entry)
            found.append(Needle(str(point), "entry id/point uuid", entry, fold=True))
            found.append(Needle(point.hex, "entry id/point uuid", entry, fold=True))
    return [n for n in found if n.text]


class _Finder:
    """Looks for needles in the texts of one engine; records each place once per form."""

    def __init__(self, engine: str, wanted: Sequence[Needle], result: ScanResult) -> None:
        self.engine, self.wanted, self.result = engine, wanted, result

    def look(self, place: str, *texts: str) -> None:
        text = "\n".join(texts)
        folded = text.lower()
        seen: set[tuple[str, str]] = set()
        for needle in self.wanted:
            if (needle.what, needle.value) not in seen and needle.found_in(text, folded):
                seen.add((needle.what, needle.value))
                self.result.residues.append(Residue(self.engine, place, needle.what,
                                                    needle.value))


def _text(value: Any) -> str:
    """Any client reply as text: bytes decoded (undecodable bytes escaped), lists joined."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="backslashreplace")
    if isinstance(value, list | tuple | set):
        return "\n".join(_text(v) for v in value)
    if isinstance(value, dict):
        return "\n".join(f"{_text(k)}\n{_text(v)}" for k, v in value.items())
    return str(value)


_SECRET = re.compile(r"(?<=://)([^/@,]*?):[^/@]*@|(?<=password=)[^&\s]+")


def _shown(url: str) -> str:
    """A URL as findings and errors show it: with any password masked."""
    return _SECRET.sub(lambda m: f"{m.group(1)}:***@" if m.group(1) is not None else "***",
                       url)


def _client_module(name: str, engine: str) -> Any:
    """Import a client library, or raise ``_Unreachable`` with what to install."""
    try:
        return importlib.import_module(name)
    except ImportError:
        extra = _CLIENTS.get(name.partition(".")[0], "")
        raise _Unreachable(f"{engine}: scanning it needs the Python module {name!r}: "
                           f"pip install 'nomnesia[{extra}]'") from None


class _Unreachable(Exception):
    """An engine this scan could not read: the message names it."""


# --- Redis / Valkey ------------------------------------------------------------------

def _redis_members(kind: str, url: str, redis: Any, timeout: float) -> list[tuple[str, Any]]:
    """(label, client) for every data node behind ``url``: a server, a Sentinel group's
    primary and replicas, or every primary and replica of a cluster."""
    def node(host: str, port: int, db: int = 0) -> Any:
        return redis.Redis(host=host, port=port, db=db, socket_timeout=timeout,
                           socket_connect_timeout=timeout)

    if url.startswith(f"{SENTINEL_SCHEME}://"):
        address = parse_sentinel_url(url)
        host, port = address.sentinels[0]
        sentinel = node(host, port)
        try:
            primary = sentinel.sentinel_master(address.service)
            replicas = sentinel.sentinel_slaves(address.service)
        finally:
            sentinel.close()
        hosts = [(str(primary["ip"]), int(primary["port"]))]
        hosts += [(str(r["ip"]), int(r["port"])) for r in replicas]
        return [(f"{kind} {h}:{p}", node(h, p, address.db)) for h, p in hosts]
    if url.startswith(f"{CLUSTER_SCHEME}://"):
        seeds = parse_cluster_url(url)
        seed = node(*seeds[0])
        try:
            listing = _text(seed.execute_command("CLUSTER", "NODES", NEVER_DECODE=True))
        finally:
            seed.close()
        members: list[tuple[str, Any]] = []
        for line in listing.splitlines():
            parts = line.split()
            if len(parts) < 3 or "fail" in parts[2].split(","):
                continue
            ip, _, port_text = parts[1].partition("@")[0].rpartition(":")
            ip = ip or seeds[0][0]  # a node that knows no address of its own says ":port"
            members.append((f"{kind} {ip}:{port_text}", node(ip, int(port_text))))
        try:
            for _, client in members:
                client.execute_command("READONLY")  # a replica answers reads of its keys
        except BaseException:
            for _, client in members:
                client.close()
            raise
        return members
    return [(f"{kind} {url.partition('://')[2].partition('/')[0].rpartition('@')[2]}",
             redis.Redis.from_url(url, socket_timeout=timeout,
                                  socket_connect_timeout=timeout))]


def _redis_value(client: Any, key: bytes, kind: str) -> str | None:
    """The whole value of a key as text, or None for a type this scanner cannot read."""
    commands: dict[str, Callable[[], Any]] = {
        "string": lambda: client.get(key),
        "list": lambda: client.lrange(key, 0, -1),
        "hash": lambda: client.hgetall(key),
        "set": lambda: client.smembers(key),
        "zset": lambda: client.zrange(key, 0, -1, withscores=True),
        "stream": lambda: client.xrange(key, "-", "+"),
        "ReJSON-RL": lambda: client.execute_command("JSON.GET", key),
    }
    if kind in commands:
        return _text(commands[kind]())
    if kind == "vectorset":  # element names and their JSON attributes
        count = int(client.execute_command("VCARD", key))
        names = client.execute_command("VRANDMEMBER", key, count) if count else []
        attributes = [client.execute_command("VGETATTR", key, name) for name in names or []]
        return _text([names, [a for a in attributes if a is not None]])
    return None


def _scan_redis_node(client: Any, redis: Any, finder: _Finder) -> int:
    """Look at every key of every database of one node; returns how many keys it read."""
    keys = 0
    databases = [int(db[2:]) for db in client.info("keyspace")] or [0]
    for db in databases:
        node = client
        if db != client.connection_pool.connection_kwargs.get("db", 0):
            node = redis.Redis(**{**client.connection_pool.connection_kwargs, "db": db})
        try:
            for key in node.scan_iter(count=1000):
                keys += 1
                name = _text(key)
                key_type = _text(node.type(key))
                finder.look(f"db{db} key {name!r} (name)", name)
                value = _redis_value(node, key, key_type)
                if value is None:
                    finder.result.info.append(f"{finder.engine} db{db} key {name!r}: a "
                                              f"{key_type}, whose value this scanner "
                                              "cannot read")
                else:
                    finder.look(f"db{db} key {name!r} ({key_type} value)", value)
        finally:
            if node is not client:
                node.close()
    try:  # RediSearch index names, where the module is loaded
        for index in client.execute_command("FT._LIST") or []:
            finder.look(f"search index {_text(index)!r} (name)", _text(index))
    except redis.ResponseError:
        pass
    return keys


def _scan_redis(kind: str, url: str, wanted: Sequence[Needle], timeout: float) -> ScanResult:
    result = ScanResult()
    redis = _client_module("redis", f"{kind} {_shown(url)}")
    members = _redis_members(kind, url, redis, timeout)
    try:
        for engine, client in members:
            keys = _scan_redis_node(client, redis, _Finder(engine, wanted, result))
            result.scanned.append(Scanned(engine, "keys", keys))
    finally:
        for _, client in members:
            client.close()
    return result


# --- PostgreSQL ----------------------------------------------------------------------

_TABLES = """
SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'm') AND n.nspname <> 'information_schema'
  AND n.nspname NOT LIKE 'pg\\_%' ORDER BY 1, 2
"""
_DEAD = """
SELECT schemaname, relname, n_dead_tup FROM pg_stat_user_tables WHERE n_dead_tup > 0
ORDER BY 1, 2
"""


def _postgres_members(url: str) -> list[tuple[str, dict[str, Any]]]:
    """(host:port, connection keywords) of each host of a (multi-host) URL: a pair's
    standby holds the rows too, so each member is read, not only the primary."""
    conninfo = _client_module("psycopg.conninfo", f"postgres {_shown(url)}")
    params: dict[str, Any] = conninfo.conninfo_to_dict(url)
    params.pop("target_session_attrs", None)
    hosts = str(params.get("host") or "localhost").split(",")
    ports = str(params.get("port") or "5432").split(",")
    ports = ports * len(hosts) if len(ports) == 1 else ports
    return [(f"{h}:{p}", {**params, "host": h, "port": p})
            for h, p in zip(hosts, ports, strict=True)]


def _scan_postgres(kind: str, url: str, wanted: Sequence[Needle], timeout: float) -> ScanResult:
    result = ScanResult()
    psycopg = _client_module("psycopg", f"{kind} {_shown(url)}")
    from psycopg import sql  # psycopg is importable: _client_module checked

    for member, params in _postgres_members(url):
        engine = f"{kind} {member}"
        finder = _Finder(engine, wanted, result)
        rows = 0
        params.setdefault("connect_timeout", max(1, int(timeout)))
        with psycopg.connect(**params, autocommit=True) as conn:
            tables = conn.execute(_TABLES).fetchall()
            for schema, table in tables:
                finder.look(f"table {schema}.{table} (name)", f"{schema}.{table}")
                query = sql.SQL("SELECT ctid::text, t::text FROM {}.{} t").format(
                    sql.Identifier(schema), sql.Identifier(table))
                with conn.transaction(), conn.cursor(name="nomnesia_residue") as cursor:
                    cursor.execute(query)
                    for ctid, text in cursor:
                        rows += 1
                        finder.look(f"table {schema}.{table} row {ctid}", text)
            for schema, table, dead in conn.execute(_DEAD).fetchall():
                result.info.append(f"{engine} table {schema}.{table}: {dead} dead tuples, "
                                   "kept until VACUUM (outside G8, as the WAL is)")
        result.scanned.append(Scanned(engine, f"rows in {len(tables)} tables", rows))
    return result


# --- Qdrant, Qdrant Edge, Milvus -----------------------------------------------------

async def scan_qdrant_client(client: Any, wanted: Sequence[Needle],
                             engine: str = "qdrant") -> ScanResult:
    """Every collection name and point (id and payload) an ``AsyncQdrantClient`` sees.

    The way to scan Qdrant's local mode in memory, which only its own client can see:
    pass the store's client (``store.index._client``).
    """
    result = ScanResult()
    finder = _Finder(engine, wanted, result)
    points = 0
    collections = [c.name for c in (await client.get_collections()).collections]
    for name in collections:
        finder.look(f"collection {name} (name)", name)
        offset: Any = None
        while True:
            batch, offset = await client.scroll(name, limit=1024, offset=offset,
                                                with_payload=True, with_vectors=False)
            for point in batch:
                points += 1
                finder.look(f"collection {name} point {point.id}", str(point.id),
                            json.dumps(point.payload, ensure_ascii=False))
            if offset is None:
                break
    result.scanned.append(Scanned(engine, f"points in {len(collections)} collections", points))
    return result


def _scan_qdrant(kind: str, url: str, wanted: Sequence[Needle], timeout: float) -> ScanResult:
    if url == ":memory:":
        raise _Unreachable(f"{kind} :memory:: an in-memory Qdrant lives in its client's "
                           "process, unseen from outside; scan that client with "
                           "scan_qdrant_client(store.index._client, ...)")
    qdrant_client = _client_module("qdrant_client", f"{kind} {_shown(url)}")

    async def run() -> ScanResult:
        server = url.startswith(("http://", "https://"))
        client = (qdrant_client.AsyncQdrantClient(url=url, timeout=max(1, int(timeout)),
                                                  check_compatibility=False)
                  if server else qdrant_client.AsyncQdrantClient(path=url))
        try:
            return await scan_qdrant_client(client, wanted, f"{kind} {_shown(url)}")
        finally:
            await client.close()
    return asyncio.run(run())


def scan_edge_shard(shard: Any, wanted: Sequence[Needle], engine: str,
                    place: str = "shard") -> ScanResult:
    """Every point (id and payload) of an open Qdrant Edge shard (``qdrant_edge.EdgeShard``)."""
    qe = _client_module("qdrant_edge", engine)
    result = ScanResult()
    finder = _Finder(engine, wanted, result)
    points = 0
    offset: Any = None
    while True:
        request = qe.ScrollRequest(offset=offset, limit=1024, with_payload=True)
        records, offset = shard.scroll(request)
        for record in records:
            points += 1
            finder.look(f"{place} point {record.id}", str(record.id),
                        json.dumps(record.payload, ensure_ascii=False))
        if offset is None:
            break
    result.scanned.append(Scanned(engine, f"points in {place}", points))
    return result


def _scan_qdrant_edge(kind: str, root: str, wanted: Sequence[Needle],
                      timeout: float) -> ScanResult:
    """Each shard directory under ``root`` (one per namespace), loaded and scrolled."""
    qe = _client_module("qdrant_edge", f"{kind} {root}")
    engine = f"{kind} {root}"
    if not Path(root).is_dir():
        raise _Unreachable(f"{engine}: no such directory")
    result = ScanResult()
    finder = _Finder(engine, wanted, result)
    for path in sorted(p for p in Path(root).iterdir() if p.is_dir()):
        finder.look(f"shard {path.name} (name)", path.name)
        shard = qe.EdgeShard.load(str(path))
        try:
            result.extend(scan_edge_shard(shard, wanted, engine, f"shard {path.name}"))
        finally:
            shard.close()
    if not result.scanned:
        result.scanned.append(Scanned(engine, "shards", 0))
    return result


def _scan_milvus(kind: str, uri: str, wanted: Sequence[Needle], timeout: float) -> ScanResult:
    pymilvus = _client_module("pymilvus", f"{kind} {_shown(uri)}")
    engine = f"{kind} {_shown(uri)}"
    result = ScanResult()
    finder = _Finder(engine, wanted, result)
    client = pymilvus.MilvusClient(uri=uri, timeout=timeout)
    rows = 0
    try:
        collections = list(client.list_collections())
        for name in collections:
            finder.look(f"collection {name} (name)", name)
            described = client.describe_collection(name)
            # Every field but the vectors (numbers, never an id), and the dynamic ones.
            fields = [f["name"] for f in described["fields"]
                      if "VECTOR" not in str(f.get("type"))]
            fields += ["$meta"] if described.get("enable_dynamic_field") else []
            primary = next(f["name"] for f in described["fields"] if f.get("is_primary"))
            client.load_collection(name, timeout=timeout)
            iterator = client.query_iterator(name, batch_size=1000, filter="",
                                             output_fields=fields)
            try:
                while batch := iterator.next():
                    for row in batch:
                        rows += 1
                        finder.look(f"collection {name} row {primary}={row.get(primary)}",
                                    json.dumps(row, ensure_ascii=False, default=str))
            finally:
                iterator.close()
    finally:
        client.close()
    result.scanned.append(Scanned(engine, f"rows in {len(collections)} collections", rows))
    return result


_SCANNERS: dict[str, Callable[[str, str, Sequence[Needle], float], ScanResult]] = {
    **{kind: _scan_redis for kind in REDIS_KINDS},
    **{kind: _scan_postgres for kind in POSTGRES_KINDS},
    "qdrant": _scan_qdrant, "qdrant-edge": _scan_qdrant_edge,
    "milvus": _scan_milvus, "milvus-server": _scan_milvus,
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
        except _Unreachable as exc:
            result.unreachable.append(str(exc))
        except Exception as exc:  # the engine or its client failed: name it, scan the rest
            result.unreachable.append(f"{kind} {_shown(url)}: {type(exc).__name__}: "
                                      f"{_shown(str(exc))}")
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


if __name__ == "__main__":
    sys.exit(main())
