"""Hypothesis strategies for what the suite already knows breaks memory stores.

The values are the suite's own (``nomnesia.suite.core.inputs``: the adversarial ids and
contents every suite run tries; ``model_inputs``: what the model-based test draws), reused
here rather than copied, so a team's property test meets every id the suite adds later::

    from hypothesis import given
    from nomnesia.testing.strategies import contents, user_ids

    @given(user=user_ids(), content=contents())
    def test_round_trip(user, content): ...

Every drawn value is valid input by SPEC.md ("Inputs"): a store must store it and give it
back exactly; ``invalid_calls()`` draws the values it must refuse before any write.
"""

from __future__ import annotations

from hypothesis import strategies as st

from nomnesia.suite.contract import MAX_CONTENT, MAX_USER_ID, ROLES
from nomnesia.suite.core.inputs import (
    ADVERSARIAL_CONTENTS,
    ADVERSARIAL_USER_IDS,
    random_user_ids,
)
from nomnesia.suite.core.model_inputs import INVALID, PLAIN, by_index

__all__ = ["contents", "invalid_calls", "roles", "user_ids"]


def user_ids(*, hostile_only: bool = False) -> st.SearchStrategy[str]:
    """Valid user ids that break stores in practice: filter syntax of every backend, ids
    that are prefixes or case variants of each other, astral and zero-width characters,
    exactly 256 code points; unless ``hostile_only``, also ids from the suite's hostile
    alphabet (``inputs.random_user_ids``) drawn by seed."""
    fixed = by_index(ADVERSARIAL_USER_IDS)
    if hostile_only:
        return fixed
    seeded = st.integers(0, 2**32 - 1).map(lambda seed: random_user_ids(seed, 1)[0])
    return st.one_of(fixed, seeded).filter(lambda u: 0 < len(u) <= MAX_USER_ID)


def contents(*, plain: bool = True) -> st.SearchStrategy[str]:
    """Valid contents a backend or driver may mangle: NUL, combining marks, RTL, SQL, the
    longest allowed (65,536 code points); with ``plain``, ordinary sentences too, so a
    search for one finds something to rank."""
    odd = by_index(ADVERSARIAL_CONTENTS)
    chosen = st.one_of(st.sampled_from(PLAIN), odd) if plain else odd
    return chosen.filter(lambda c: len(c) <= MAX_CONTENT)


def roles() -> st.SearchStrategy[str]:
    """The roles an append may take (``summary`` is written by ``compact`` alone)."""
    return st.sampled_from(sorted(ROLES))


def invalid_calls() -> st.SearchStrategy[tuple[str, object]]:
    """``(argument, value)`` pairs a store must refuse with ``ValueError`` or ``TypeError``
    before it writes anything: ``("user_id", "")``, ``("k", True)``, ``("role", "summary")``
    ... (``model_inputs.INVALID``, what the model-based test draws)."""
    return INVALID
