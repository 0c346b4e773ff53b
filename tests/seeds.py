"""Seeds of the project's randomised tests: fixed per commit, fresh on request.

A test that draws a fresh seed every run can turn CI red on a commit that did not cause
what it found (issue 47). So each randomised test draws from a generator seeded by
:data:`FIXED` (the same seeds every run of a commit; change it, and the tests that use it,
in the same commit), and only ``nox -s fresh-seeds`` (``NOMNESIA_FRESH_SEEDS=1``) draws new
ones, printed, to keep looking. A seed a test prints replays with the variable it names.
"""

from __future__ import annotations

import os
import random

__all__ = ["FIXED", "fresh", "seeds"]

FIXED = 20261207
"""The base of every fixed seed; moved only by a commit that says why."""


def fresh() -> bool:
    """Whether this run draws new seeds (``NOMNESIA_FRESH_SEEDS=1``: ``nox -s fresh-seeds``)."""
    return os.environ.get("NOMNESIA_FRESH_SEEDS", "").strip() == "1"


def seeds(name: str, count: int) -> list[int]:
    """``count`` seeds for the test ``name``: fixed per commit, or fresh under ``fresh()``."""
    rng = random.Random() if fresh() else random.Random(f"{FIXED}/{name}")
    return [rng.randrange(2**32) for _ in range(count)]
