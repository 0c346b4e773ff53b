"""Engine provisioning: where a store's PostgreSQL, Redis, Valkey, Milvus and Qdrant come from.

The same suite runs on a laptop without Docker (``embedded``: engines from
wheels), on CI with Docker (``docker``: testcontainers) and against staging
servers (``external``: URLs from the environment). Choosing is a flag
(``NOMNESIA_BACKENDS`` or ``--backends``), never a code change::

    from nomnesia.adapters.engines import get_provider

    with get_provider() as engines:
        dsn = engines.url("postgres")

A provider starts an engine on its first ``url()`` call and stops everything on
``close()``. Embedded engines never outlive the process that started them.
"""

from __future__ import annotations

import os

from ._base import ENGINES, TOPOLOGIES, Provider, Topology
from ._proc import engine_cpu, launcher
from .control import EngineControl
from .docker import DockerProvider, docker_available
from .embedded import EmbeddedProvider
from .external import ENV_VARS, ExternalProvider

__all__ = [
    "ENGINES",
    "ENV_VARS",
    "KINDS",
    "TOPOLOGIES",
    "DockerProvider",
    "EmbeddedProvider",
    "EngineControl",
    "ExternalProvider",
    "Provider",
    "Topology",
    "docker_available",
    "engine_cpu",
    "get_provider",
    "launcher",
    "resolve_kind",
]

KINDS: tuple[str, ...] = ("auto", "embedded", "docker", "external")


def resolve_kind(kind: str | None = None) -> str:
    """The concrete provider kind: the argument, else ``NOMNESIA_BACKENDS``, else ``auto``,
    where ``auto`` means docker when a Docker engine answers and embedded otherwise."""
    chosen = (kind or os.environ.get("NOMNESIA_BACKENDS") or "auto").strip().lower()
    if chosen not in KINDS:
        raise ValueError(f"unknown backends {chosen!r}; choose one of {', '.join(KINDS)}")
    if chosen == "auto":
        return "docker" if docker_available() else "embedded"
    return chosen


def get_provider(kind: str | None = None) -> Provider:
    """A new provider of the given kind; keep one per process (e.g. a session fixture)."""
    resolved = resolve_kind(kind)
    if resolved == "embedded":
        return EmbeddedProvider()
    if resolved == "docker":
        return DockerProvider()
    return ExternalProvider()
