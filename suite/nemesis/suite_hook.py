"""The nemesis as one suite test: ``pytest --adapter pgvector --nemesis crash,net``,
or on your store: ``pytest --store mod:factory --nemesis all`` (any interface option too).

The plugin owns the option; this is the test body it calls, so a failure reads
like every other suite failure: the guarantee first, then the evidence and the
seed that replays it.
"""

from __future__ import annotations

import asyncio

from ..contract import Guarantee
from .runner import NemesisConfig, kinds_of, run_nemesis

__all__ = ["nemesis_test"]


def nemesis_test(adapter: str, kinds: str, *, seed: int, faults: int = 50,
                 timeout: float = 1.0, store: str = "", interface: str = "") -> None:
    """Run the nemesis on ``adapter`` (or a user's ``store`` / ``interface``, as
    ``NemesisConfig`` takes them); raise AssertionError naming the first broken guarantee.
    ``ValueError`` says the store cannot be run (no engine, a kind that does not apply)."""
    report = asyncio.run(run_nemesis(NemesisConfig(adapter=adapter, faults=faults,
                                                   kinds=kinds_of(kinds), seed=seed,
                                                   timeout=timeout, store=store,
                                                   interface=interface, log=lambda _: None)))
    if report.passed:
        return
    if report.lost:
        head = f"{Guarantee.DURABILITY}: {len(report.lost)} acknowledged appends lost"
    elif report.duplicates:
        head = f"{Guarantee.EXACTLY_ONCE}: {len(report.duplicates)} entries accounted twice"
    elif report.anomalies:
        head = report.anomalies[0].splitlines()[0]
    elif report.recovery["over_bar"]:
        head = (f"{Guarantee.ERRORS}: the store did not answer within 5 s of "
                f"{report.recovery['over_bar']} fault(s) ending")
    else:
        head = "the nemesis run itself failed"
    raise AssertionError(f"{head}\n{report.summary()}\nreplay with --nomnesia-seed {seed}")
