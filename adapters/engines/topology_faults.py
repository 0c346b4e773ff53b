"""Faults of a replicated topology (a failover, lagged or cut links), asked of its part.

Its own module because these are the nemesis's questions, not the provider's
lifecycle: a provider that runs engines as parts (``part.EnginePart``) answers them
by handing the fault to the part of that engine kind, if the part is a topology
(``postgres_ha.PostgresPair``, ``resp_ha.SentinelGroup``, ``resp_cluster.RespCluster``).
"""

from __future__ import annotations

from typing import Any

from ._base import Provider
from .part import EnginePart

__all__ = ["TopologyFaults"]


class TopologyFaults(Provider):
    """A provider of engine parts, some of them topologies; ``_parts`` is set by the subclass."""

    _parts: dict[str, EnginePart]

    def can_fail_over(self, engine: str) -> bool:
        """Whether ``engine`` is a replicated topology that :meth:`failover` can fail over
        (asked without starting anything: the nemesis picks its faults by it)."""
        return callable(getattr(self._parts.get(engine), "failover", None))

    def failover(self, engine: str, *, freeze: bool = False) -> dict[str, float | int]:
        """Fail ``engine``'s primary over to its standby, as a failover manager would;
        with ``freeze``, the primary is frozen (SIGSTOP) rather than killed, and thawed
        after the promotion: the split brain of a VM pause (the parts say what follows).

        Only a replicated topology has one (``postgres-ha``, ``postgres-ha-async``,
        ``redis-sentinel``, ``valkey-sentinel``, ``redis-cluster``); the figures it
        returns say what the failover took (``postgres_ha.PostgresPair``,
        ``resp_ha.SentinelGroup``, ``resp_cluster.RespCluster``)."""
        self.url(engine)
        part = self._parts[engine]
        failover = getattr(part, "failover", None)
        if failover is None:
            raise ValueError(f"{engine} is a single instance: it has no failover")
        result: dict[str, float | int] = failover(self, freeze=freeze)
        return result

    # -- links between a topology's members -------------------------------------

    def link_faults(self, engine: str) -> tuple[str, ...]:
        """The faults :meth:`lag_links` and :meth:`cut_primary` can cause on ``engine``'s
        links between members (empty for a single instance), asked without starting it."""
        return tuple(getattr(self._parts.get(engine), "link_faults", ()))

    def lag_links(self, engine: str, ms: float) -> str:
        """Delay ``engine``'s replication by ``ms``; the store's own links pass. What was
        done (``resp_ha.SentinelGroup.lag_links``, ``postgres_ha.PostgresPair.lag_links``)."""
        return str(self._linked(engine, "lag").lag_links(self, ms))

    def cut_primary(self, engine: str) -> str:
        """Cut ``engine``'s primary off from its replicas (and Sentinels); what was done."""
        return str(self._linked(engine, "cut-primary").cut_primary(self))

    def heal_links(self, engine: str) -> None:
        """Undo :meth:`lag_links` and :meth:`cut_primary` on ``engine``."""
        if self.link_faults(engine) and engine in self._urls:
            self._parts[engine].heal_links(self)  # type: ignore[attr-defined]

    def _linked(self, engine: str, fault: str) -> Any:
        if fault not in self.link_faults(engine):
            raise ValueError(f"{engine} has no {fault} fault on its links (it has: "
                             f"{', '.join(self.link_faults(engine)) or 'none'})")
        self.url(engine)
        return self._parts[engine]
