"""How this project's stores derive engine keys from ids: one definition for the indexes that
write them and the residue scanner that looks for them.

A user id becomes a key no engine can parse as syntax (``user_key``: hex SHA-256), and a
(user, entry) pair a deterministic point id (``point_uuid``: uuid5), so an upsert replayed
after a crash overwrites instead of duplicating. They live on the engines' floor, the
lowest of ``adapters/``, so the indexes above and the scanner beside the engines share them.
"""

from __future__ import annotations

import hashlib
import uuid

__all__ = ["POINT_NS", "point_uuid", "user_key"]

POINT_NS = uuid.UUID("6f1c3f0e-8a9b-5b4e-9d3c-0b7a4e2f9c11")
"""The uuid5 namespace of point ids (changing it orphans every stored point)."""


def user_key(user_id: str) -> str:
    """Hex SHA-256 of the user id: a filter/key value with no syntax in it."""
    return hashlib.sha256(user_id.encode("utf-8")).hexdigest()


def point_uuid(user_id: str, entry_id: str) -> uuid.UUID:
    """Deterministic point id of (user, entry), for engines that want UUIDs.

    Length-prefixed, so ("ab", "c") and ("a", "bc") never share an id.
    """
    u, e = user_id.encode("utf-8"), entry_id.encode("utf-8")
    return uuid.uuid5(POINT_NS, f"{len(u)}:{u.hex()}:{e.hex()}")
