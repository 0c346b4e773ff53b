"""The milvus wheel's server binaries, unpacked once per wheel version into the user's cache.

The wheel ships Milvus 2.3 and its libraries lzma-packed (57 MB, about 250 MB
unpacked). Unpacking them into each provider's directory cost 5 CPU-seconds of
every provider that started a server: a ``milvus-server`` leaf of the matrix
spent about 5 of its 110 there, and ``nox -s tests`` starts several servers.

The cache is ``$XDG_CACHE_HOME/nomnesia`` (``~/.cache/nomnesia``), one directory per
wheel version, so that a server running from one version's files is never
overwritten by another venv's. The wheel's own unpacker compares each file with
an MD5 of its packed form and skips what is current; an ``flock`` keeps two
providers from writing one file at once. A cache that cannot be written (a
read-only home) leaves the caller's fallback: unpacking into its own directory.
"""

from __future__ import annotations

import fcntl
import os
from importlib.metadata import version
from pathlib import Path
from typing import Any

__all__ = ["cache_root", "milvus_binaries"]


def cache_root() -> Path:
    """Where nomnesia keeps what it unpacks: ``$XDG_CACHE_HOME/nomnesia``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "nomnesia"


def milvus_binaries(milvus_wheel: Any, fallback: Path) -> Path:
    """The ``bin`` directory of an unpacked Milvus server: the cache's, else ``fallback``'s.

    ``milvus_wheel`` is the imported ``milvus`` package (its ``_initialize_data_files``
    unpacks into ``<dir>/bin``).
    """
    target = cache_root() / f"milvus-server-{version('milvus')}"
    try:
        target.mkdir(parents=True, exist_ok=True)
        with open(target / ".lock", "w", encoding="utf-8") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            milvus_wheel._initialize_data_files(str(target))
    except OSError:
        milvus_wheel._initialize_data_files(str(fallback))
        return fallback / "bin"
    return target / "bin"
