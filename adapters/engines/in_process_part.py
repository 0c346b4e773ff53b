"""Engines that run inside the caller's process, as parts: Qdrant's local mode, Qdrant Edge
(Milvus Lite is ``milvus_part.MilvusLitePart``).

The provider starts nothing for them: it checks that their wheel is installed and
hands out where they keep their data (inside its directory when they keep any, so
that the watchdog removes it if the process is killed).
"""

from __future__ import annotations

import importlib.util

from .part import EngineHost, EnginePart, _missing

__all__ = ["InProcessPart", "QdrantEdgePart", "QdrantPart"]


class InProcessPart(EnginePart):
    """An in-process engine: its ``module`` must be importable; :meth:`location` is its URL."""

    module: str
    """The module that is the engine, found without importing it."""
    needs: str
    """What the error says the embedded engine needs when ``module`` is missing."""
    hint: str
    """What to install then."""

    def location(self, host: EngineHost) -> str:
        """The URL (a path, or a client's special name) the engine's clients open."""
        raise NotImplementedError

    def start(self, host: EngineHost) -> str:
        if importlib.util.find_spec(self.module) is None:
            raise _missing(self.engine, self.needs, self.hint)
        return self.location(host)

    def self_check(self, host: EngineHost, url: str) -> str:
        """Engines that run inside the caller's process: the version of the wheel that is them."""
        from importlib.metadata import PackageNotFoundError, version

        try:
            return f"{self.wheel} {version(self.wheel)} (in-process)"
        except PackageNotFoundError:
            raise _missing(self.engine, self.wheel) from None


class QdrantEdgePart(InProcessPart):
    """A directory for in-process Qdrant Edge shards."""

    engine = "qdrant-edge"
    wheel = "qdrant-edge-py"
    module = "qdrant_edge"
    needs = "the Qdrant Edge engine"
    hint = "pip install qdrant-edge-py"

    def location(self, host: EngineHost) -> str:
        # A directory, not a server: the engine runs in the caller's process.
        # Inside ours, so the watchdog removes it if that process is killed.
        edge = host.workdir() / "qdrant-edge"
        edge.mkdir(exist_ok=True)
        return str(edge)


class QdrantPart(InProcessPart):
    """qdrant-client's local mode, in memory."""

    engine = "qdrant"
    wheel = "qdrant-client"
    module = "qdrant_client"
    needs = "qdrant-client's local mode"
    hint = "pip install 'nomnesia[qdrant]'"

    def location(self, host: EngineHost) -> str:
        return ":memory:"
