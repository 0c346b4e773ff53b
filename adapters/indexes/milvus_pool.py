"""A pool of empty, loaded Milvus collections per server, lent to indexes in turn.

Its own module because it is a cost fix, not the index: loading a new collection
takes a Milvus 2.3 server about 2 s, so ``MilvusIndex`` borrows an idle one
(``CollectionPool``) instead of creating it, and gives it back emptied on close.
Pools are kept per provider and server (``pool_for``) and dropped with the engines.
"""

from __future__ import annotations

import atexit
import contextlib
import secrets
import threading
from typing import Any

from pymilvus import MilvusClient

__all__ = ["CollectionPool", "pool_for"]


class CollectionPool:
    """Empty, loaded collections of one dimension on one Milvus, lent to indexes in turn.

    A Milvus 2.3 server takes about 2 s to load a new collection (its query
    coordinator works in ticks), and the suite opens a store per test and per
    model example: most of a ``milvus-server`` run went to loading collections. An
    index given a pool borrows an idle collection instead of creating one, and on
    ``aclose`` empties it and gives it back. A collection is lent to one index at a
    time, so stores stay as apart as with collections of their own. It is lent only
    after a Strong-consistency count reads 0 rows; one that counts more, cannot be
    read (released by a server restart), or whose index gave up on a call that may
    still land, is dropped, never lent. ``close`` drops every collection of the
    pool: ``pool_for`` has the provider call it before it stops its engines.
    """

    def __init__(self, uri: str, dim: int, *, token: str = "", timeout: float = 5.0,
                 retire_after: int = 50_000) -> None:
        self.uri, self.dim, self.token, self.timeout = uri, dim, token, timeout
        self.retire_after = retire_after
        """Rows deleted from a collection (by its borrowers' closes) before it is
        dropped instead of lent again: deleted rows stay in segments until compaction."""
        self._idle: list[tuple[str, int]] = []  # (name, rows deleted from it so far)
        self._lent: dict[str, int] = {}  # the same, for collections lent or being created
        self._lock = threading.Lock()
        self._closed = False

    def new_name(self) -> str:
        """A name for a collection that joins the pool when its borrower gives it back."""
        name = f"nm_pool_{secrets.token_hex(8)}"
        with self._lock:
            self._lent[name] = 0
        return name

    def take(self, client: MilvusClient) -> str | None:
        """An idle collection that counts 0 rows, or None (then create one)."""
        while True:
            with self._lock:
                if self._closed or not self._idle:
                    return None
                name, deleted = self._idle.pop()
                self._lent[name] = deleted
            try:
                if _count(client, name) == 0:
                    return name
            except Exception:  # e.g. released by a server restart: not worth reloading
                pass
            self.discard(client, name)

    def give(self, client: MilvusClient, name: str) -> None:
        """Empty ``name`` and keep it idle (``take`` counts its rows before lending it);
        drop it instead after too many deletes, or when the pool is closed."""
        result = client.delete(name, filter='pk != ""', timeout=self.timeout)
        # A server answers {"delete_count": n}; Milvus Lite the deleted primary keys.
        count = len(result) if isinstance(result, list) else int(result.get("delete_count", 0))
        with self._lock:
            deleted = self._lent.get(name, 0) + count
        if deleted <= self.retire_after:
            with self._lock:
                if not self._closed and self._lent.pop(name, None) is not None:
                    self._idle.append((name, deleted))
                    return
        self.discard(client, name)

    def discard(self, client: MilvusClient, name: str) -> None:
        """Drop ``name`` and forget it."""
        with self._lock:
            self._lent.pop(name, None)
        client.drop_collection(name, timeout=self.timeout)

    def close(self) -> None:
        """Drop every collection of the pool, idle or lent (lent ones would otherwise be
        dropped on give-back, which an index abandoned mid-create never does)."""
        with self._lock:
            self._closed = True
            names = [name for name, _ in self._idle] + list(self._lent)
            self._idle, self._lent = [], {}
        if not names:
            return
        with contextlib.suppress(Exception):
            client = MilvusClient(self.uri, token=self.token, timeout=self.timeout)
            try:
                for name in names:
                    with contextlib.suppress(Exception):
                        client.drop_collection(name, timeout=self.timeout)
            finally:
                client.close()


def _count(client: MilvusClient, name: str) -> int:
    rows = client.query(name, filter='pk != ""', output_fields=["count(*)"],
                        consistency_level="Strong")
    return int(rows[0]["count(*)"])


_POOLS: dict[tuple[int, str, str, int], CollectionPool] = {}
_POOLS_LOCK = threading.Lock()


def pool_for(provider: Any, uri: str, dim: int, *, token: str = "",
             timeout: float = 5.0) -> CollectionPool:
    """The pool of ``dim``-dimensional collections on ``uri`` for the stores of ``provider``.

    The pool is dropped with the provider's engines: ``Provider.at_close`` runs its
    ``close`` before they stop. A provider without that hook (or None) gets it at
    interpreter exit instead. A collection left by a killed run sits in the embedded
    provider's directory, which goes with it.
    """
    key = (id(provider), uri, token, dim)
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is not None:
            return pool
        pool = _POOLS[key] = CollectionPool(uri, dim, token=token, timeout=timeout)

    def close() -> None:
        with _POOLS_LOCK:
            if _POOLS.get(key) is pool:
                del _POOLS[key]
        pool.close()

    at_close = getattr(provider, "at_close", None)
    if callable(at_close):
        at_close(close)
    else:
        atexit.register(close)
    return pool
