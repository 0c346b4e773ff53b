"""What a nemesis run is asked to do: the store, the faults, the seed and the load.

``python -m nomnesia.suite.nemesis`` fills it from the command line, ``suite_hook`` from the
suite's options, tests directly; the runner (``runner.py``) reads it and nothing writes it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .failover import FAILOVER_SHARE, FREEZE_SHARE
from .packages import KINDS

__all__ = ["NemesisConfig"]


@dataclass
class NemesisConfig:
    adapter: str = "pgvector"
    faults: int = 200
    kinds: tuple[str, ...] = KINDS
    seed: int = 0
    timeout: float = 1.0
    """The store's backend timeout (SPEC G12)."""
    hold: tuple[float, float] = (0.1, 1.5)
    """Range of seconds an engine or network fault lasts."""
    load_between: int = 10
    """Acknowledged calls the worker must make between two faults (the load)."""
    clients: int = 3
    pace: float = 0.002
    backends: str = "embedded"
    """Where the engines come from when the nemesis makes its own provider: ``embedded``
    (it starts them), or ``external`` (your servers, ``NOMNESIA_*_URL``)."""
    commands: Mapping[str, str] = field(default_factory=dict)
    """The user's commands for faults the nemesis cannot cause on their deployment
    (``commands.py``: failover, pause/resume, kill/restart)."""
    durable_postgres: bool = True
    """Run PostgreSQL with synchronous_commit=on, as production does (the embedded
    default is off, and a killed server then loses acknowledged commits)."""
    store_options: dict[str, Any] = field(default_factory=dict)
    targets: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Engines each fault kind may hit (``{"kill": ("postgres",)}``); default: every
    networked engine of the stack."""
    store_factory: str = ""
    """``module:callable`` opening the store instead of the registry (tests of broken stores)."""
    replicas: int = 1
    """Load workers running at once on the namespace; above 1 their stores get ``shared=True``
    (unless ``store_options`` says otherwise)."""
    failover_share: float = FAILOVER_SHARE
    """Share of the faults that are failovers when ``failover`` is among other kinds
    (``failover.fault_schedule``)."""
    freeze_share: float = FREEZE_SHARE
    """Share of the failovers that freeze the primary (``provider.failover(engine,
    freeze=True)``: SIGSTOP past the failure detection, thawed once a replica is
    promoted, so two primaries run for a while) instead of killing it; each drawn
    with the seeded generator."""
    engine_map: dict[str, str] = field(default_factory=dict)
    """Engine kinds substituted in the stack (``{"postgres-ha": "postgres-ha-async"}``),
    passed to the stack opener as ``engine_map``; the runner starts and faults the
    substitutes."""
    lag: float = 0.0
    """Before each failover, cut the standby off from the primary and keep the load going
    this many seconds (``failover.detach_standby``): what the primary acknowledges
    meanwhile is on it alone. The positive control of an asynchronous pair; 0: none."""
    cascade: bool = False
    """A failover fails every replicated engine of the stack over, the drawn one first,
    as losing a zone takes every primary in it. In the asynchronous pair's control, the
    Sentinel log's failover that follows makes the store rebuild its log from the archive
    (``recover()``), so what the archive lost is gone from every read and the report
    names it lost (G1), where the log alone would still have served it."""
    mix: dict[str, float] = field(default_factory=dict)
    """Fields of the workers' workload :class:`~nomnesia.suite.core.workload.Mix` to change.
    ``{"forget": 0.0}`` for the asynchronous pair's control: a forget that may have taken
    effect after an append excuses its loss (``report.account``), and at the default 2 %
    forgets every user is forgotten within a second or two, so the losses a failover
    causes would show only in the checker's anomalies, not as lost appends with ids."""
    log: Callable[[str], None] = print
    store: str = ""
    """A user's store, ``MODULE:FACTORY`` as ``--store`` takes it, instead of ``adapter``: its
    engines are the kinds it asks ``engine_url`` for when opened (``user_store.py``)."""
    interface: str = ""
    """Or an interface option with its factory: ``--openai-session=MODULE:FACTORY``."""
    history: str = ""
    """Where to write the run's merged history in the history file format
    (``docs/history-format.md``), for ``nomnesia check`` or another tool; empty: nowhere."""

    @property
    def user(self) -> bool:
        """Whether the store is a user's (``store`` or ``interface``), not a registry stack."""
        return bool(self.store or self.interface)
