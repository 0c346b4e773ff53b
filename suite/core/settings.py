"""Run-wide knobs of the suite, set once by the plugin from the command line.

One object, read where a bound or a seed is needed; a project that subclasses the suite
without the plugin gets these defaults.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["OPTION_OF", "Settings", "settings"]


@dataclass
class Settings:
    """Run-wide knobs, set by the plugin from the command line (defaults for subclass use)."""

    timeout: float = 120.0
    """Seconds a whole test may take before it fails with G12."""
    fault_timeout: float = 300.0
    """Seconds a fault test may take (partial failures on each engine, reads under
    replication lag): it runs a load through several fault rounds, one per engine
    (``--nomnesia-fault-timeout``)."""
    op_timeout: float = 30.0
    """Seconds one store operation may take where a test checks liveness (locks left held)."""
    seed: int = 0
    """The run's seed (``--nomnesia-seed``); randomised tests derive theirs from it."""
    anomalies: int | None = 3
    """Anomalies a concurrency failure prints (``--nomnesia-anomalies``); None: all of them."""
    profile: str | None = None
    """The profile the run holds every store to (``--nomnesia-profile``); None: detect it."""
    eventually: float = 2.0
    """Seconds the suite polls ``consistent_state`` of a store that declares no staleness
    bound (the seed profile), as the seed's ``assert_eventually`` does."""
    history_dir: str | None = None
    """Where every test writes each history it recorded as a history file
    (``--nomnesia-history DIR``, docs/history-format.md); None: nowhere."""
    history_test: str = ""
    """The running test's node id, set by the plugin: the history files' names."""
    loop_block: float = 3.0
    """Seconds a store call may stop the test's event loop before the suite names it (G12:
    a synchronous call inside an async method; ``--nomnesia-loop-block``, 0: not watched)."""
    event_loop: str = "asyncio"
    """The event loop every test runs on: ``"asyncio"`` or ``"uvloop"`` (``--nomnesia-loop``;
    the plugin picks uvloop for a built-in ``--adapter`` stack where it is installed)."""


settings = Settings()

OPTION_OF = {"timeout": "--nomnesia-timeout", "fault_timeout": "--nomnesia-fault-timeout",
             "op_timeout": "--nomnesia-op-timeout", "loop_block": "--nomnesia-loop-block",
             "eventually": "--nomnesia-eventually"}
"""The option that sets each bound: a bound that fires names it, so the user can raise it."""
