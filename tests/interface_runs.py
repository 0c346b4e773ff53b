"""What every interface option's own tests share: the suite's arguments for an in-process
run, and the check that a run's failures are findings (a guarantee first), never an
interface error. One copy here; each option's test file adds the errors of its own mapping.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

SUITE = ("--pyargs", "nomnesia.suite", "-p", "no:cacheprovider", "-p", "no:randomly")
GUARANTEE_FIRST = re.compile(r"^\s*(G(\d{1,2}) [a-z ]+|Inputs): ")
NOT_FINDINGS = ("InterfaceMismatch", "AttributeError", "unlabelled")
"""Words that no finding's text holds: a mapped method missing, an error no guarantee names."""


def failures(reprec: pytest.HookRecorder) -> dict[str, str]:
    """The failed tests of an inline run, node id to text."""
    return {r.nodeid: r.longreprtext for r in reprec.getreports("pytest_runtest_logreport")
            if r.failed}


def findings_only(reprec: pytest.HookRecorder, also: tuple[str, ...] = ()) -> dict[str, str]:
    """The failed tests' texts, each checked to be a finding, never an interface error (nor
    one of ``also``, a mapping's own usage errors)."""
    found = failures(reprec)
    for nodeid, text in found.items():
        assert GUARANTEE_FIRST.match(text), f"{nodeid}: not a finding:\n{text[:600]}"
        for error in (*NOT_FINDINGS, *also):
            assert error not in text, f"{nodeid}: {error}:\n{text[:600]}"
    return found


def quiet_ini(pytester: pytest.Pytester) -> None:
    """An inline run's ini (asyncio's fixture loop scope, said so it does not warn) and this
    folder on its path, where the planted stores live."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.syspathinsert(str(Path(__file__).parent))
