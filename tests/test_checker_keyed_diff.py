"""The near-linear keyed checker finds exactly what the straightforward one finds.

``check_keyed`` answers its questions from indexes (sorted sweeps, the order graph's
components, counts) where tests/keyed_reference.py, the algorithm it replaced, asks each
read about each acknowledged append with a search per pair. Both run here on seeded
synthetic histories (tests/keyed_histories.py), correct ones and ones with lost, reordered,
repeated, leaked and resurrected messages, under every profile; the anomalies must be the
same, in the same order, with the same messages and evidence.

The seeds are fixed per commit (``tests/seeds.py``; fresh ones with ``nox -s
fresh-seeds``), after one fixed seed that breaks every kind the test checks it compared,
and printed on failure; replay one with
``NOMNESIA_DIFF_SEED=<seed> pytest tests/test_checker_keyed_diff.py``.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from keyed_histories import generate
from keyed_reference import check_keyed_reference
from seeds import seeds

from nomnesia.suite.contract import Guarantee
from nomnesia.suite.core.checker import Anomaly
from nomnesia.suite.core.checker_keyed import check_keyed
from nomnesia.suite.core.history import Op

ROUNDS = 30
PROFILES = [(True, True), (False, True), (True, False), (False, False)]  # recover, compact


COVERING_SEED = 37
"""A seed whose history breaks every kind the coverage check below asks for (found by a
search over seeds 1-59): 30 random seeds alone missed one in a CI run."""


def _seeds() -> list[int]:
    fixed = os.environ.get("NOMNESIA_DIFF_SEED")
    if fixed:
        return [int(fixed)]
    return [COVERING_SEED, *seeds("checker_keyed_diff", ROUNDS)]


def _history(seed: int) -> list[Op]:
    """A history whose shape the seed chooses too, so one seed replays everything."""
    rng = random.Random(seed)
    return generate(seed, rng.choice([60, 300, 800]), users=rng.randint(1, 3),
                    processes=rng.randint(1, 7), faults=rng.choice([0.0, 0.003, 0.01, 0.03, 0.3]),
                    forgets=rng.random() < 0.7, recover=rng.random() < 0.8)


def _same(found: list[Anomaly]) -> list[tuple[Guarantee, str, str, list[Op]]]:
    return [(a.guarantee, a.kind, a.message, a.ops) for a in found]


def test_fast_and_reference_checkers_agree_on_random_histories() -> None:
    kinds: set[tuple[Guarantee, str]] = set()
    for seed in _seeds():
        ops = _history(seed)
        for recover, compact in PROFILES:
            want = check_keyed_reference(ops, recover=recover, compact=compact, minimise=False)
            got = check_keyed(ops, recover=recover, compact=compact, minimise=False)
            assert _same(got) == _same(want), (
                f"seed {seed} (recover={recover}, compact={compact}): replay with "
                f"NOMNESIA_DIFF_SEED={seed}\nfast: {got}\nreference: {want}")
            kinds.update((a.guarantee, a.kind.split(":")[0]) for a in want)
    if "NOMNESIA_DIFF_SEED" not in os.environ:
        # The comparison means something only if the histories break things the checker
        # finds by its indexes: losses, order, covering, forgets.
        assert {(Guarantee.ORDER, "flip"), (Guarantee.DURABILITY, "missing"),
                (Guarantee.ATOMIC_COMPACTION, "lost"), (Guarantee.FORGET, "forgotten"),
                (Guarantee.ISOLATION, "foreign"),
                (Guarantee.ATOMIC_COMPACTION, "uncovered")} <= kinds, sorted(kinds, key=str)


@pytest.mark.parametrize("seed", [3, 17, 2024])
def test_minimised_anomalies_agree(seed: int) -> None:
    """Shrinking re-runs the checker on parts of the history: those must agree too."""
    ops = generate(seed, 600, users=2, processes=4, faults=0.1)
    want = check_keyed_reference(ops, recover=True, compact=True)
    got = check_keyed(ops, recover=True, compact=True)
    assert want, "the history must have anomalies to shrink"
    assert _same(got) == _same(want), f"seed {seed}"


def test_a_correct_history_is_legal_to_both() -> None:
    """The generator's fault-free histories are linearizable: neither checker flags one."""
    ops = generate(11, 5000, users=2, processes=6)
    assert check_keyed_reference(ops, recover=True, compact=True, minimise=False) == []
    assert check_keyed(ops, recover=True, compact=True, minimise=False) == []
