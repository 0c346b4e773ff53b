"""What the model-based test's state machine draws from: users, contents, roles, invalid calls.

Its own module because these are the test's inputs, to be read (and extended) apart
from the machine's rules: a newcomer adding an adversarial user id or an invalid
``k`` changes this file only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from hypothesis import strategies as st

from ..contract import (
    MAX_CONTENT,
    ROLES,
)
from .inputs import (
    ADVERSARIAL_CONTENTS,
    ADVERSARIAL_USER_IDS,
    INVALID_CONTENTS,
    INVALID_KS,
    INVALID_MESSAGE_IDS,
    INVALID_ROLES,
    INVALID_USER_IDS,
)

T = TypeVar("T")


def by_index(values: Sequence[T]) -> st.SearchStrategy[T]:
    """``sampled_from(values)`` whose repr stays short however long the values are.

    Hypothesis formats the repr of the machine's rule strategy, arguments and all,
    each time a precondition rejects a rule; with the 65,536-code-point contents and
    the invalid values (130 KB each) in it, that formatting was 30% of the model
    test's time on an in-memory store. Drawing an index shrinks the same way.
    """
    return st.sampled_from(range(len(values))).map(values.__getitem__)

# Users: "ann" three times in four (so that one user's history grows long
# enough to compact, twice), otherwise ids that break stores that match users by
# prefix, case, trimmed whitespace, a wildcard or a filter expression.
_OTHER_USERS = ("anna", "Ann", "ann ", "*", '" or user_id != "', "@user_id:{ann}", "🧠")
assert all(u in ADVERSARIAL_USER_IDS for u in ("ann", *_OTHER_USERS))
USERS = st.one_of(st.just("ann"), st.just("ann"), st.just("ann"), st.sampled_from(_OTHER_USERS))

PLAIN = ("pay the rent on friday", "my favourite colour is teal", "call the dentist",
          "deploy the service", "the cat sat on the mat")
_ODD = ("", "\x00", "a\x00b", " leading", "trailing ", "e\u0301", "🧠💾",
        "'; DROP TABLE x; --")
LONGEST = ("x" * MAX_CONTENT, "🧠" * MAX_CONTENT)
"""The longest valid contents, appended by a rule of their own (truncation shows at once)."""
assert all(c in ADVERSARIAL_CONTENTS for c in (*_ODD, *LONGEST))
CONTENTS = st.one_of(st.sampled_from(PLAIN), st.sampled_from(_ODD))
ROLE = st.sampled_from(sorted(ROLES))
MESSAGE_IDS = st.sampled_from(("m1", "m2", "M1"))
"""Few, so that Hypothesis reuses them: retries, conflicts, and re-appends after forget."""
QUERIES = st.one_of(CONTENTS, st.just("words nobody wrote"))

_INVALID: tuple[tuple[str, object], ...] = (
    *(("role", v) for v in INVALID_ROLES),
    *(("content", v) for v in INVALID_CONTENTS),
    *(("message_id", v) for v in INVALID_MESSAGE_IDS),
    *(("user_id", v) for v in INVALID_USER_IDS),
    *(("limit", v) for v in INVALID_KS),
    *(("k", v) for v in INVALID_KS),
)
INVALID = by_index(_INVALID)
