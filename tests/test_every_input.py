"""One violation never hides another: multi-input suite tests report every failing input.

mem0 refuses ``'say "hi"'`` and treats ``'*'`` as a wildcard in get_history and
forget; a suite that stopped at the first refused id never reported the leak.
``WildcardStore`` does both on top of the oracle, and the suite must name both. Its
``'*'`` is a glob over user ids (as a Redis key pattern is), so that the suite's fresh
ids (``tok_*``, SPEC "What the suite may assume") still reach every user of the test.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Any

import pytest

from nomnesia.adapters.memory import InMemoryStore
from nomnesia.suite.contract import Entry

pytest_plugins = ("pytester",)

SUITE = ("--pyargs", "nomnesia.suite", "-p", "no:cacheprovider", "-p", "no:randomly")


def _glob(user_id: object) -> bool:
    return isinstance(user_id, str) and "*" in user_id


class WildcardStore(InMemoryStore):
    """Refuses ids with a double quote; an id with ``*`` is a glob: it reads and forgets the
    memories of every user it matches."""

    async def append_message(self, user_id: str, role: str, content: str, *,
                             message_id: str | None = None) -> Entry:
        if isinstance(user_id, str) and '"' in user_id:
            raise ValueError(f"user_id {user_id!r} may not contain a quote")
        return await super().append_message(user_id, role, content, message_id=message_id)

    async def get_history(self, user_id: str, limit: int = 10) -> list[Entry]:
        if not _glob(user_id):
            return await super().get_history(user_id, limit)
        everyone = []
        for user in [u for u in self._users if fnmatch.fnmatchcase(u, user_id)]:
            everyone += await super().get_history(user, limit)
        return sorted(everyone, key=lambda e: e.seq)[-limit:]

    async def forget(self, user_id: str) -> None:
        if not _glob(user_id):
            return await super().forget(user_id)
        for user in [u for u in self._users if fnmatch.fnmatchcase(u, user_id)]:
            await super().forget(user)


class NulRefusingStore(InMemoryStore):
    """Refuses NUL in content, as a JSONB or text column would (a valid input refused)."""

    async def append_message(self, user_id: str, role: str, content: str, *,
                             message_id: str | None = None) -> Entry:
        if isinstance(content, str) and "\x00" in content:
            raise ValueError("NUL characters are not supported")
        return await super().append_message(user_id, role, content, message_id=message_id)


class BackendNulStore(InMemoryStore):
    """Fails on NUL content with a backend's own error type, not ValueError."""

    async def append_message(self, user_id: str, role: str, content: str, *,
                             message_id: str | None = None) -> Entry:
        if isinstance(content, str) and "\x00" in content:
            raise RuntimeError("invalid byte sequence for encoding UTF8: 0x00")
        return await super().append_message(user_id, role, content, message_id=message_id)


@pytest.fixture(autouse=True)
def _quiet_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


def _failures(reprec: pytest.HookRecorder) -> dict[str, str]:
    return {r.nodeid.rsplit("::", 1)[-1]: r.longreprtext
            for r in reprec.getreports("pytest_runtest_logreport") if r.failed}


def _blocks(text: str) -> list[str]:
    """The failure's separate reports: every line that starts with a guarantee."""
    return re.findall(r"^(?:G\d{1,2} [a-z ]+|Inputs): .*$", text, re.M)


def test_a_refused_id_does_not_hide_a_wildcard_leak(pytester: pytest.Pytester) -> None:
    reprec = pytester.inline_run(*SUITE, "--store", f"{__name__}:WildcardStore",
                                 "-k", "test_adversarial_user_ids")
    failures = _failures(reprec)
    round_trip = failures["test_adversarial_user_ids_round_trip_and_stay_isolated"]
    blocks = _blocks(round_trip)
    # The refused ids, each reported as a valid input refused ...
    refused = [b for b in blocks if b.startswith("Inputs: user id") and "refused" in b]
    assert any("say \"hi\"" in b for b in refused), blocks
    # ... and the wildcard read of '*', which a stop-at-first suite never reached.
    assert any(b.startswith("G9 isolation: user id '*': get_history('*')") for b in blocks), blocks
    assert "'o\\'brien'" not in round_trip.split("\n", 1)[0]  # a single quote is fine
    # Each failure carries its own operations: the '*' block shows the leak's two users only.
    star = round_trip[round_trip.index("G9 isolation: user id '*'"):]
    star = star.split("\n\nG", 1)[0].split("\n\nInputs", 1)[0]
    assert "operations, oldest first:" in star
    assert re.search(r"get_history\('[0-9a-z]+_\*'", star), star  # as the store got it
    forget = failures["test_adversarial_user_ids_compact_and_forget_alone"]
    wiped = "G9 isolation: user id '*': forget('*') after compact('*') changed the history of"
    assert any(b.startswith(wiped) for b in _blocks(forget)), _blocks(forget)
    assert any("say \"hi\"" in b and b.startswith("Inputs") for b in _blocks(forget))


def test_every_failing_value_of_an_argument_is_reported(pytester: pytest.Pytester) -> None:
    # The fragile store validates nothing: every invalid user id slips through, not only the first.
    reprec = pytester.inline_run(*SUITE, "--store", "nomnesia.adapters.fragile:FragileMemoryStore",
                                 "-k", "append_message.user_id")
    (text,) = _failures(reprec).values()
    accepted = [b for b in _blocks(text) if "was accepted" in b or "changed" in b]
    assert len(accepted) >= 5, _blocks(text)


@pytest.mark.parametrize("store", ["NulRefusingStore", "BackendNulStore"])
def test_a_refused_valid_content_is_inputs_and_g1_not_g12(pytester: pytest.Pytester,
                                                          store: str) -> None:
    reprec = pytester.inline_run(*SUITE, "--store", f"{__name__}:{store}",
                                 "-k", "test_adversarial_contents_round_trip")
    (text,) = _failures(reprec).values()
    assert text.startswith("Inputs: content #3 '\\x00': valid input refused: append_message("), \
        text[:300]
    blocks = _blocks(text)
    assert "G12" not in " ".join(b[:4] for b in blocks), blocks
    assert sum(b.startswith("G1 durability: the append of valid content") for b in blocks) == 3
    # Every NUL content failed on its own, and nothing else did.
    assert sum(b.startswith("Inputs: content #") for b in blocks) == 3
    assert all(c in text for c in ("#4 'a\\x00b'", "#5 '\\x00\\x00\\x00\\x00\\x00'"))


def test_attempts_report_each_failure_with_its_own_operations() -> None:
    from nomnesia.suite.contract import Guarantee
    from nomnesia.suite.core.attempts import Attempts
    from nomnesia.suite.core.history import History
    from nomnesia.suite.core.recorder import LoggedStore
    from nomnesia.suite.core.violations import expect

    log = History()
    store: Any = LoggedStore(object(), log)
    attempts = Attempts("user id", 3)
    for user in ("a", "b", "c"):
        log.complete(log.invoke(0, "read", user), "ok", (), shown="[]")
        with attempts(user):
            expect(user == "b", Guarantee.ISOLATION, f"{user} broke", store.log, user=user)
    violation = attempts.violation()
    assert violation is not None
    text = str(violation)
    assert text.startswith("G9 isolation: user id 'a': a broke\n(2 failures among 3 user ids")
    assert "\nG9 isolation: user id 'c': c broke\n" in text
    own = text.split("G9 isolation: user id 'c'")[1]
    assert "get_history('c')" in own and "get_history('a')" not in own
    assert [label for label, _ in violation.parts] == ["user id 'a'", "user id 'c'"]
    assert violation.op == "get_history"
