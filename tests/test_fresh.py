"""Fresh ids keep each adversarial id's shape and its relationships with the test's others.

Mutant check: with the token appended (``made = value + token``) instead of put in front,
``test_relationships_between_ids_hold`` fails on ``ann`` no longer being a prefix of
``anna``.
"""

from __future__ import annotations

import fnmatch

from nomnesia.suite.contract import MAX_MESSAGE_ID, MAX_USER_ID, Entry
from nomnesia.suite.core.fresh import Namespace, scrub
from nomnesia.suite.core.inputs import ADVERSARIAL_USER_IDS, INVALID_USER_IDS, random_user_ids


def test_relationships_between_ids_hold() -> None:
    ns = Namespace.new()
    f = ns.user
    assert f("anna").startswith(f("ann"))
    assert f("Ann").lower() == f("ann").lower() and f("Ann") != f("ann")
    assert fnmatch.fnmatchcase(f("anna"), f("ann*"))
    assert f(" ann").strip() == f("ann") and f("ann ").strip() == f("ann")
    assert f("ann\n").strip() == f("ann")


def test_odd_ids_keep_their_shape_and_invalid_ones_stay_invalid() -> None:
    ns = Namespace.new()
    for blank in (" ", "\n", "\r\n", "\xa0"):
        made = ns.user(blank)
        assert made.isspace() and made.startswith(blank) and made != blank
    for at_limit in ("u" * MAX_USER_ID, "🧠" * MAX_USER_ID, "u" * (MAX_USER_ID - 1)):
        assert len(ns.user(at_limit)) == len(at_limit)
    assert len(ns.message("m" * MAX_MESSAGE_ID)) == MAX_MESSAGE_ID
    for invalid in INVALID_USER_IDS:
        assert ns.user(invalid) is invalid
    assert ns.message(None) is None


def test_ids_are_new_to_each_store_and_read_back_as_the_suites() -> None:
    one, two = Namespace.new(), Namespace.new()
    ids = [*ADVERSARIAL_USER_IDS, *random_user_ids(3)]
    made = [one.user(u) for u in ids]
    assert len(set(made)) == len(ids)  # distinct ids stay distinct
    assert not set(made) & {two.user(u) for u in ids}  # and no other store gets one
    assert not set(made) & set(ids)
    assert [one.back(m) for m in made] == ids
    assert one.user(made[0]) == made[0]  # an id already the store's is left alone
    entry = Entry(one.message("req-1"), one.user("ann"), 1, "user", "hi",
                  (one.message("req-0"),))
    assert one.entry(entry) == Entry("req-1", "ann", 1, "user", "hi", ("req-0",))
    plain = Entry("store-made", "someone", 1, "user", "hi")
    assert one.entry(plain) is plain
    assert scrub(f"raised: user {one.user('ann')} unknown") == "raised: user ann unknown"
