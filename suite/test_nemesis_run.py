"""Faults beyond the process, as one suite test that runs only when asked (``--nemesis``)."""

from __future__ import annotations

import pytest

from .contract import G1, G2, G3, G4, G5, G6, G7, G8, G9, G10, G11, G12
from .core.profiles import NOT_APPLICABLE
from .core.settings import settings
from .plugin import _target


# The history checker on a default mix (G1-G9), lost and doubled appends (G1, G2),
# consistent_state at the end (G11), the store answering again within 5 s of every
# fault (G12), and all of it across crashed clients and failing backends (G10).
@pytest.mark.guarantee(G1, G2, G3, G4, G5, G6, G7, G8, G9, G10, G11, G12)
def test_nemesis(request: pytest.FixtureRequest) -> None:
    """Crashed clients, paused and killed engines, a lying network: nothing acknowledged is lost.

    Runs with ``--nemesis crash,pause,kill,net,failover`` (or ``all``) and
    ``--nemesis-faults N``, on ``--adapter NAME``, ``--store MODULE:FACTORY`` or an
    interface option; skipped otherwise, because it takes minutes. A store of your own
    is judged on the engines it asks ``engine_url`` for (docs/faults.md).

    Troubleshooting: the message starts with the broken guarantee and the run's
    summary (faults by kind, outcomes, recovery times); docs/nemesis.md explains
    each fault. Replay with ``--nomnesia-seed N``.
    """
    config = request.config
    kinds = config.getoption("nomnesia_nemesis", None)
    if not kinds:
        pytest.skip("the nemesis runs with --nemesis KINDS (it takes minutes; docs/nemesis.md)")
    target = _target(config)
    if target is None:
        pytest.skip("the nemesis runs on --adapter, --store or an interface option, not on a "
                    "subclass's store fixture")
    option, value = target
    from .nemesis.suite_hook import nemesis_test  # function-level: ~170 ms, --nemesis only

    adapter = value if option == "--adapter" else ""
    store = value if option == "--store" else ""
    interface = "" if adapter or store else f"{option}={value}"
    try:
        nemesis_test(adapter, kinds, seed=settings.seed, store=store, interface=interface,
                     faults=config.getoption("nomnesia_nemesis_faults"))
    except ValueError as exc:  # the store cannot be run: no engine of the suite's, say
        pytest.skip(f"{NOT_APPLICABLE}: {exc}")
