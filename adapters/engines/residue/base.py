"""What the scanner looks for (every form of an id or a content), and what it found where."""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..keys import point_uuid, user_key

__all__ = ["KINDS", "POSTGRES_KINDS", "REDIS_KINDS", "Finder", "Needle", "Residue", "ScanResult",
           "Scanned", "Unreachable",
           "client_module", "needles", "shown", "text"]

REDIS_KINDS = ("redis", "valkey", "redis-search", "redis-sentinel", "valkey-sentinel",
               "redis-cluster")
POSTGRES_KINDS = ("postgres", "postgres-ha", "postgres-ha-async")
KINDS = (*REDIS_KINDS, *POSTGRES_KINDS, "qdrant", "qdrant-edge", "milvus", "milvus-server")
"""Engine kinds ``scan`` knows: the provider's names (``adapters/registry.py``)."""

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


class Finder:
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


def text(value: Any) -> str:
    """Any client reply as text: bytes decoded (undecodable bytes escaped), lists joined."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="backslashreplace")
    if isinstance(value, list | tuple | set):
        return "\n".join(text(v) for v in value)
    if isinstance(value, dict):
        return "\n".join(f"{text(k)}\n{text(v)}" for k, v in value.items())
    return str(value)


_SECRET = re.compile(r"(?<=://)([^/@,]*?):[^/@]*@|(?<=password=)[^&\s]+")


def shown(url: str) -> str:
    """A URL as findings and errors show it: with any password masked."""
    return _SECRET.sub(lambda m: f"{m.group(1)}:***@" if m.group(1) is not None else "***",
                       url)


def client_module(name: str, engine: str) -> Any:
    """Import a client library, or raise ``_Unreachable`` with what to install."""
    try:
        return importlib.import_module(name)
    except ImportError:
        extra = _CLIENTS.get(name.partition(".")[0], "")
        raise Unreachable(f"{engine}: scanning it needs the Python module {name!r}: "
                           f"pip install 'nomnesia[{extra}]'") from None


class Unreachable(Exception):
    """An engine this scan could not read: the message names it."""


