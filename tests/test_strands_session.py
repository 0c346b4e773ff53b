"""``--strands-session`` (issue 46 item 2): the real ``FileSessionManager`` is judged with no
interface error, and each planted defect (``tests/strands_stores.py``) fails under its
guarantee.

Mutant checks (each done by hand, each made the named test fail):

- ``_read`` returning the first page only: ``test_file_repository_is_judged_with_no_
  interface_error`` fails (G3 in ``test_history_past_page_sizes``);
- the page-start check in ``_read`` removed: the ``offset_ignored`` case of
  ``test_planted_defect_fails_under_its_guarantee`` never ends (killed after 90 s: the
  repository pages forever), so the check is what bounds it;
- ``_forget`` re-raising every ``SessionException``: the unknown user's forget fails
  (``test_forget_of_an_unknown_user_succeeds``).
"""

from __future__ import annotations

import asyncio
import re
from functools import partial

import pytest
from interface_runs import SUITE, findings_only, quiet_ini  # tests/ is on sys.path

pytest.importorskip("strands.session")

pytest_plugins = ("pytester",)

_findings_only = partial(findings_only, also=("TypeError",))
"""This file's runs: findings only (and never `TypeError`)."""

FILE = "nomnesia.suite.examples:strands_file"


@pytest.fixture(autouse=True)
def _quiet_ini(pytester: pytest.Pytester) -> None:
    quiet_ini(pytester)


def test_file_repository_is_judged_with_no_interface_error(pytester: pytest.Pytester) -> None:
    """The history profile on ``FileSessionManager``: its sequential contract, forget and
    interruption tests pass (its findings, under concurrency and for ids with a path
    separator, are in the README and docs/ecosystem/repro/)."""
    result = pytester.inline_run(*SUITE, "--strands-session", FILE, "-k",
                                 "test_contract or test_interruption or test_reopen")
    assert not _findings_only(result)
    passed, _, _ = result.listoutcomes()
    assert len(passed) >= 8, [r.nodeid for r in passed]


def test_profile_line(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*SUITE, "--strands-session", FILE, "-k",
                                "test_unknown_user_is_empty")
    result.stdout.fnmatch_lines(["*nomnesia profile history (declared)*"])
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize(("factory", "test", "guarantee"), [
    ("prefix_list", "test_users_are_isolated", "G9"),
    ("delete_session_file_only", "test_forget_removes_everything", "G8"),
    ("offset_ignored", "test_history_past_page_sizes", "G3"),
])
def test_planted_defect_fails_under_its_guarantee(pytester: pytest.Pytester, factory: str,
                                                  test: str, guarantee: str) -> None:
    result = pytester.inline_run(*SUITE, "--strands-session", f"strands_stores:{factory}",
                                 "-k", test)
    failures = _findings_only(result)
    assert len(failures) == 1, failures
    text = next(iter(failures.values()))
    assert re.search(rf"(^|\n)\s*{guarantee} ", text), text[:800]


def test_forget_of_an_unknown_user_succeeds() -> None:
    """``FileSessionManager.delete_session`` raises ``SessionException`` for a session that
    does not exist; SPEC's forget of a user never written succeeds, and another user's
    history stays."""
    from nomnesia.suite.examples import strands_file
    from nomnesia.suite.interfaces import strands

    async def body() -> tuple[list[dict[str, str]], list[dict[str, str]]]:
        async with strands.open_store(strands_file) as store:
            await store.append_message("bob", "user", "hello")
            await store.forget("ann")
            return await store.get_history("ann"), await store.get_history("bob")

    assert asyncio.run(body()) == ([], [{"role": "user", "content": "hello"}])


def test_roles_round_trip_as_strands_messages() -> None:
    """``tool`` is a ``user`` message of one ``toolResult`` block, as an agent stores a
    tool's result; the four roles read back as written, across pages."""
    from nomnesia.suite.examples import strands_file
    from nomnesia.suite.interfaces import strands

    written = [(("user", "assistant", "tool", "system")[i % 4], f"m{i}")
               for i in range(2 * strands.PAGE + 3)]

    async def body() -> list[dict[str, str]]:
        async with strands.open_store(strands_file) as store:
            for role, content in written:
                await store.append_message("ann", role, content)
            return await store.get_history("ann", 100)

    assert asyncio.run(body()) == [{"role": r, "content": c} for r, c in written]


@pytest.mark.parametrize(("audit", "text", "key"), [
    ("strands-file", "Inputs: user id 'a\\n/b': valid input refused: append_message('x_a\\n/b'"
     ", 'user', 'note') raised ValueError: session_id=x_a\n/b | id cannot contain path "
     "separators", "strands-file-path-separator-ids"),
    ("strands-file", "G12 errors: forget('x_ann') raised FileNotFoundError: [Errno 2] No such "
     "file or directory: 'agents', with no fault injected", "strands-file-delete-wedges-session"),
    ("strands-valkey", "G9 isolation: read 61 (limit 6) for 'x_ann*' returned 'p5 n1', written "
     "for user 'x_ann'", "strands-valkey-key-patterns"),
    ("strands-valkey", "G10 interruption: every fault had healed, yet get_history('a:b') kept "
     "failing for 30 s (ValueError: session_id cannot contain ':' characters: x_a:b)",
     "strands-valkey-colon-ids"),
    ("strands-sql-postgres", "G12 errors: append_message('x_ann', 'tool', 'p1') raised "
     "IntegrityError: (psycopg.errors.UniqueViolation) duplicate key value",
     "strands-create-message-overwrites"),
])
def test_strands_failures_are_traced_to_their_causes(audit: str, text: str, key: str) -> None:
    """The audits' causes (``adapters/ecosystem/causes/strands.py``) read the suite's own
    sentences, ids with newlines included, each to one cause."""
    from nomnesia.adapters.ecosystem.causes import classify

    assert classify(audit, text) == [key]
