"""Every suite test declares the guarantees it checks, and the report reads nothing else.

The JSON report and the matrix attribute a test to the guarantees its
``@pytest.mark.guarantee(G1, G7, ...)`` names (``nomnesia.suite.reporting.declared``),
never to what its code happens to mention. So a suite test without the mark would
quietly count for nothing: these collect the whole suite, every module, class and
parametrized case, and fail on any item that declares nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nomnesia.suite import reporting
from nomnesia.suite.reporting import GUARANTEE_KEYS, declared

pytest_plugins = ("pytester",)

SUITE_DIR = Path(reporting.__file__).resolve().parent
QUIET = ("-p", "no:cacheprovider", "-p", "no:randomly")
SELF_TESTS = {"test_no_overrides_DO_NOT_OVERRIDE", "test_guarantee_names_are_stable"}
"""The suite's tests of itself: the only ones that may declare ``none="why"``."""


@pytest.fixture(autouse=True)
def _quiet_ini(pytester: pytest.Pytester) -> None:
    # Inner runs get a neutral ini (pytest-asyncio warns without a loop scope).
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


@pytest.fixture
def suite_items(pytester: pytest.Pytester) -> list[pytest.Item]:
    """The suite as ``--adapter memory`` collects it (the nemesis test included)."""
    items, _ = pytester.inline_genitems("--pyargs", "nomnesia.suite", "--adapter", "memory",
                                        "--strict-markers", *QUIET)
    return items


def test_every_suite_test_declares_its_guarantees(suite_items: list[pytest.Item]) -> None:
    modules = {Path(str(item.path)).name for item in suite_items}
    assert modules == {p.name for p in SUITE_DIR.glob("test_*.py")}, "a module collected nothing"
    undeclared = [item.nodeid for item in suite_items if declared(item) is None]
    assert not undeclared, (
        f"{len(undeclared)} suite tests declare no guarantee; add "
        "@pytest.mark.guarantee(G..., from nomnesia.suite.contract) naming what their "
        "assertions check:\n  " + "\n  ".join(undeclared))
    for item in suite_items:
        keys = declared(item) or []
        assert set(keys) <= set(GUARANTEE_KEYS), item.nodeid
        if not keys:
            assert item.originalname in SELF_TESTS, (
                f"{item.nodeid} declares none=: only the suite's tests of itself may")


def test_every_guarantee_has_a_declared_test(suite_items: list[pytest.Item]) -> None:
    """A column of the matrix that no suite test declares could only ever read "—"."""
    covered = {key for item in suite_items for key in declared(item) or []}
    assert covered == set(GUARANTEE_KEYS), sorted(set(GUARANTEE_KEYS) - covered)


def test_a_parametrized_case_adds_its_own_declaration(suite_items: list[pytest.Item]) -> None:
    by_id = {item.name: declared(item) for item in suite_items}
    common = by_id["test_cancel_at_every_step_then_recover[search]"]
    assert common is not None and "G10" in common and "G7" not in common
    assert by_id["test_cancel_at_every_step_then_recover[compact]"] == sorted(
        [*common, "G7"], key=GUARANTEE_KEYS.index)


TOY = '''
import pytest
from nomnesia.suite.contract import G3, G7, INPUTS

@pytest.mark.guarantee(G3)
@pytest.mark.parametrize("op", [pytest.param("compact", marks=pytest.mark.guarantee(G7)),
                                pytest.param("bad", marks=pytest.mark.guarantee(INPUTS)), "read"])
def test_case(op):
    assert op != "bad", "Inputs: a bad value was accepted"

@pytest.mark.guarantee(none="the toy's own plumbing")
def test_self():
    pass
'''


def test_the_report_attributes_exactly_the_declarations(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_toy=TOY)
    out = pytester.path / "report.json"
    result = pytester.runpytest("--strict-markers", f"--nomnesia-json={out}", *QUIET)
    result.assert_outcomes(passed=3, failed=1)
    tests = {t["nodeid"].split("::")[-1]: t for t in json.loads(out.read_text())["tests"]}
    assert tests["test_case[compact]"]["guarantees"] == ["G3", "G7"]
    assert tests["test_case[read]"]["guarantees"] == ["G3"]
    assert tests["test_case[bad]"]["guarantees"] == ["G3", "Inputs"]
    assert tests["test_case[bad]"]["failed_guarantees"] == ["Inputs"]
    assert tests["test_self"]["guarantees"] == []


@pytest.mark.parametrize(("mark", "message"), [
    ('"G7"', "takes Guarantee members"),
    ("G7, because='x'", "because="),
    ("", "names no guarantee"),
    ("G7, none='x'", "no guarantees beside it"),
    ("none=''", "give a reason"),
])
def test_a_malformed_declaration_is_a_usage_error(pytester: pytest.Pytester, mark: str,
                                                  message: str) -> None:
    pytester.makepyfile(test_bad=f"import pytest\nfrom nomnesia.suite.contract import G7\n\n"
                                 f"@pytest.mark.guarantee({mark})\ndef test_x():\n    pass\n")
    result = pytester.runpytest(f"--nomnesia-json={pytester.path / 'out.json'}", *QUIET)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*test_bad.py::test_x*{message}*"])
    assert pytester.runpytest(*QUIET).ret == 0, "another project's mark is its own business"
