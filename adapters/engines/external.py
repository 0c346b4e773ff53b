"""Servers the user names: staging clusters, a CI service container, anything already running.

The provider starts and stops nothing; it only reads URLs from the
environment, so the same suite runs against real deployments unchanged.
Cleaning up what tests write is the stores' job (each test gets its own
namespace), because these servers outlive the run by design.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from nomnesia.suite.contract.errors import BackendUnavailable

from ._base import TOPOLOGIES, Provider

__all__ = ["ENV_VARS", "ExternalProvider"]

ENV_VARS: dict[str, str] = {
    "postgres": "NOMNESIA_POSTGRES_URL",
    "redis": "NOMNESIA_REDIS_URL",
    "valkey": "NOMNESIA_VALKEY_URL",
    "qdrant": "NOMNESIA_QDRANT_URL",
    "milvus": "NOMNESIA_MILVUS_URI",
    "redis-search": "NOMNESIA_REDIS_SEARCH_URL",
    "qdrant-edge": "NOMNESIA_QDRANT_EDGE_DIR",
    "milvus-server": "NOMNESIA_MILVUS_SERVER_URL",
    **{kind: topology.env for kind, topology in TOPOLOGIES.items()},
}

_EXAMPLES = {
    "postgres": "postgresql://user:password@host:5432/db (pgvector installed)",
    "redis": "redis://host:6379/0 (Redis 8 for vector sets)",
    "valkey": "redis://host:6379/0",
    "qdrant": "http://host:6333",
    "milvus": "http://host:19530",
    "redis-search": "redis://host:6379/0 (Redis Stack / Redis 8 with the query engine)",
    "qdrant-edge": "/var/lib/nomnesia/edge (an existing directory for Qdrant Edge shards)",
    "milvus-server": "http://host:19530 (a Milvus server, standalone or cluster)",
    **{kind: topology.example for kind, topology in TOPOLOGIES.items()},
}


class ExternalProvider(Provider):
    """URLs from ``NOMNESIA_*_URL`` variables (or an explicit mapping, for tests)."""

    kind = "external"

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        super().__init__()
        self._environ = os.environ if environ is None else environ

    def _start(self, engine: str) -> str:
        variable = ENV_VARS[engine]
        url = self._environ.get(variable, "").strip()
        if not url:
            raise BackendUnavailable(
                engine, f"the external provider needs the environment variable {variable} "
                f"(e.g. {variable}={_EXAMPLES[engine]})")
        return url

    def _stop(self) -> None:
        """Nothing to stop: these servers are not ours."""
