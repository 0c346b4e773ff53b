"""nomnesia.testing: the suite's way of testing, for a team's own tests of its own store.

The only import such a test needs::

    from nomnesia.testing import check, eventually, lost_reply, record

- :func:`eventually` (sync, or awaited with a coroutine function; on tenacity): poll a
  condition until it holds, raising :class:`EventuallyTimeout` with the last value or
  exception and how long it waited. No ``time.sleep(3)``.
- Faults as context managers on the engines the test got from ``engine_url`` (or passed
  through ``fault_url``): :func:`lost_reply`, :func:`refuse`, :func:`stall`,
  :func:`latency`, :func:`pause`, and on replicated topologies :func:`lag` and
  :func:`cut_primary`; ``with`` or ``async with``, healed on exit whatever happened. They
  are the suite's own fault parts (``nomnesia.suite.faults``). The ``nomnesia_fault``
  fixture, parametrized over :data:`FAULT_KINDS`, holds each kind in turn.
- :func:`record` wraps a store in the suite's recorder; :func:`check` judges what it
  recorded (or a history file) with the suite's checker and returns a :class:`Verdict`
  whose anomalies name their guarantee and carry the smallest history that shows them.
- :func:`write_history` / :func:`read_history`: the versioned history file
  (docs/history-format.md) that ``nomnesia check FILE`` reads.
- :mod:`nomnesia.testing.strategies`: Hypothesis strategies for adversarial ids and contents.

This package is installed as ``nomnesia.testing`` from ``suite/testing/`` (pyproject's
package-dir). An editable install would also make the same files importable as
``nomnesia.suite.testing``, a second copy of every class and of the registry of histories
being recorded; that name is refused below, so there is one module under one name.
"""

from __future__ import annotations

if __name__ != "nomnesia.testing":  # pragma: no cover - the editable install's second name
    raise ImportError(f"import nomnesia.testing, not {__name__}: the same files under two "
                      "names would be two modules")

from nomnesia.suite.core.eventually import EventuallyTimeout, eventually, eventually_async
from nomnesia.suite.core.history_format import HistoryFile, HistoryFormatError
from nomnesia.suite.core.history_format import schema as history_schema
from nomnesia.suite.core.verdict import Verdict

from .faults import (
    FAULT_KINDS,
    LINK_KINDS,
    WIRE_KINDS,
    Fault,
    FaultUnavailable,
    cut_primary,
    fault,
    faultable,
    lag,
    latency,
    lost_reply,
    pause,
    refuse,
    stall,
)
from .recording import Recorded, check, read_history, record
from .render import verdict_html, write_history

__all__ = ["FAULT_KINDS", "LINK_KINDS", "WIRE_KINDS", "EventuallyTimeout", "Fault",
           "FaultUnavailable", "HistoryFile", "HistoryFormatError", "Recorded", "Verdict",
           "check", "cut_primary", "eventually", "eventually_async", "fault", "faultable",
           "history_schema", "lag", "latency", "lost_reply", "pause", "read_history", "record",
           "refuse", "stall", "verdict_html", "write_history"]
