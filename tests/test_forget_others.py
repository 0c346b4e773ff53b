"""A forget that drops other users' memories fails as the forget's own G1, even when those
users had already lost something before it.

mem0 1.0.5's sync ``Memory.delete_all(user_id=...)`` ends in ``vector_store.reset()``: every
user's memories go (the benchmark's ``mem0-sync-delete-all-reset``). mem0 1.x also drops
every ``system`` message, on the fixed 1.0.6 as well, so the forget tests used to fail both
releases alike (G1, the model check) and never told the reset apart: in
``test_users_are_isolated`` the dropped message stopped the test before the forget. Now the
forget is judged against a snapshot of the other users taken just before it
(``contract_checks.forget_alone``).

Mutant check: with ``forget_alone`` calling ``s.forget`` and comparing nothing (and the first
phase of ``check_isolation`` raising before the forget again), both tests of
``test_a_forget_that_drops_everyone_fails_as_its_own`` fail: no "changed another user's
history" in either failure.
"""

from __future__ import annotations

import re

import pytest

pytest_plugins = ("pytester",)

FORGET_TESTS = "test_forget_removes_everything or test_users_are_isolated"
OWN_FAILURE = r"forget\('(\w*_)?{user}'\) changed another user's history: "
"""The forget's own failure (the report shows the user id as the test named it or, where it
quotes the store's call, with the test's fresh prefix)."""


class DropsSystem:
    """A history-profile store that keeps no ``system`` message (as mem0 1.x) and is
    otherwise correct."""

    def __init__(self) -> None:
        self.users: dict[str, list[dict[str, str]]] = {}

    async def append_message(self, user_id: str, role: str, content: str) -> None:
        if role not in ("user", "assistant", "system", "tool"):
            raise ValueError(f"role {role!r}")
        if role != "system":
            self.users.setdefault(user_id, []).append({"role": role, "content": content})

    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]:
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise TypeError("limit")
        if limit < 1:
            raise ValueError("limit")
        return list(self.users.get(user_id, [])[-limit:])

    async def forget(self, user_id: str) -> None:
        self.users.pop(user_id, None)


class ForgetsEveryone(DropsSystem):
    """The same, whose forget drops every user (mem0 1.0.5's ``reset()``)."""

    async def forget(self, user_id: str) -> None:
        self.users.clear()


def _failures(pytester: pytest.Pytester, suite_args: tuple[str, ...], store: str
              ) -> dict[str, str]:
    pytester.syspathinsert(str(__import__("pathlib").Path(__file__).parent))
    reprec = pytester.inline_run(*suite_args, "--store", f"test_forget_others:{store}",
                                 "-k", FORGET_TESTS)
    passed, _, failed = reprec.listoutcomes()
    assert len(passed) + len(failed) == 2, (passed, failed)
    return {r.nodeid.rsplit("::", 1)[-1]: r.longreprtext
            for r in reprec.getreports("pytest_runtest_logreport") if r.failed}


def test_a_forget_that_drops_everyone_fails_as_its_own(pytester: pytest.Pytester,
                                                       suite_args: tuple[str, ...]) -> None:
    failures = _failures(pytester, suite_args, "ForgetsEveryone")
    assert set(failures) == {"test_forget_removes_everything", "test_users_are_isolated"}
    first = failures["test_forget_removes_everything"]
    assert re.match("G1 durability: " + OWN_FAILURE.format(user="ann"), first), first[:400]
    isolated = failures["test_users_are_isolated"]
    assert isolated.startswith("G1 durability: "), isolated[:300]  # the system message first
    own = re.search("G1 durability: forget\\('anna'\\): " + OWN_FAILURE.format(user="anna")
                    + r"'(\w*_)?ann': [1-9]\d* entries just before it, 0 after", isolated)
    assert own, isolated


def test_an_earlier_loss_alone_is_not_blamed_on_the_forget(
        pytester: pytest.Pytester, suite_args: tuple[str, ...]) -> None:
    """The same store with a forget of its own user only: its dropped ``system`` messages
    fail G1 as before, and nothing is said against the forget."""
    failures = _failures(pytester, suite_args, "DropsSystem")
    assert failures, "the dropped system messages are lost appends: G1"
    for name, text in failures.items():
        assert text.startswith("G1 durability: "), (name, text[:300])
        assert "changed another user's history" not in text, (name, text)
