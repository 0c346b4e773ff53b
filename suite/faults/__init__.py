"""The one fault model: parts composed by fault name, and the partial-failure round.

- ``base``: the part protocol (``FaultPart``), what a start did (``Started``), and the
  composition by name (``Nemesis``);
- ``wire``: ``lost-reply``, ``refuse``, ``stall``, ``latency`` on the fault proxies (their
  toxics: ``nomnesia.adapters.engines.toxics``);
- ``process``: ``pause`` and ``kill`` of engine processes;
- ``replication``: ``failover``, ``lag`` and ``cut-primary`` of replicated topologies;
- ``during``: the partial-failure round, a ``workload.During`` that holds faults beside a
  seeded load and judges the store after the heal.

The nemesis runner (``nomnesia.suite.nemesis``) schedules the same parts as packages
(``nemesis/packages.py``), and adds the crash of its own workers (``nemesis/crash.py``).
"""

from __future__ import annotations

from .base import FaultPart, Nemesis, Started
from .process import KillPart, PausePart
from .replication import FailoverPart, LinkPart
from .wire import WirePart

__all__ = ["FailoverPart", "FaultPart", "KillPart", "LinkPart", "Nemesis", "PausePart", "Started",
           "WirePart"]
