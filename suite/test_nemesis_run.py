"""Faults beyond the process, as one suite test that runs only when asked (``--nemesis``)."""

from __future__ import annotations

import pytest

from ._run import settings
from .contract import G1, G2, G3, G4, G5, G6, G7, G8, G9, G10, G11, G12


# The history checker on a default mix (G1-G9), lost and doubled appends (G1, G2),
# consistent_state at the end (G11), the store answering again within 5 s of every
# fault (G12), and all of it across crashed clients and failing backends (G10).
@pytest.mark.needs("entries")
@pytest.mark.guarantee(G1, G2, G3, G4, G5, G6, G7, G8, G9, G10, G11, G12)
def test_nemesis(request: pytest.FixtureRequest) -> None:
    """Crashed clients, paused and killed engines, a lying network: nothing acknowledged is lost.

    Runs with ``--adapter NAME --nemesis crash,pause,kill,net,failover`` (or ``all``) and
    ``--nemesis-faults N``; skipped otherwise, because it needs engines it can
    signal (the embedded provider) and takes minutes.

    Troubleshooting: the message starts with the broken guarantee and the run's
    summary (faults by kind, outcomes, recovery times); docs/nemesis.md explains
    each fault. Replay with ``--nomnesia-seed N``.
    """
    kinds = request.config.getoption("nomnesia_nemesis", None)
    adapter = request.config.getoption("nomnesia_adapter", None)
    if not kinds or not adapter:
        pytest.skip("the nemesis runs with --adapter NAME --nemesis KINDS")
    from .nemesis.suite_hook import nemesis_test

    nemesis_test(adapter, kinds, seed=settings.seed,
                 faults=request.config.getoption("nomnesia_nemesis_faults"))
