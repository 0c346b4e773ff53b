"""Failures grouped by cause, every anomaly kept, and matrices that never pass what did not run.

One root cause (a store that trims user ids) turned a dozen tests red, and the
matrix said "pass" for a guarantee whose every test had crashed before
checking it. These tests pin the cause key, the summary at the end of a run,
``--nomnesia-anomalies``, and the "not reached" and "skipped" cells of the
HTML/Markdown matrix and of the nox table.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from nomnesia.adapters.memory import InMemoryStore
from nomnesia.suite.contract import Entry, Guarantee
from nomnesia.suite.core.violations import GuaranteeViolation
from nomnesia.suite.report_html import build_matrix, render_markdown
from nomnesia.suite.reporting import (
    FORMAT,
    GUARANTEE_KEYS,
    cause_key,
    cause_lines,
    group_causes,
    guarantee_verdicts,
    leaf_cell,
    verdict_text,
    violation_causes,
)

pytest_plugins = ("pytester",)

ROOT = Path(__file__).resolve().parent.parent
SUITE = ("--pyargs", "nomnesia.suite", "-p", "no:cacheprovider", "-p", "no:randomly")


class TrimmingStore(InMemoryStore):
    """Trims user ids (as mem0 does): 'ann ' and 'ann' share one memory."""

    async def append_message(self, user_id: str, role: str, content: str, *,
                             message_id: str | None = None) -> Entry:
        entry = await super().append_message(_trim(user_id), role, content,
                                             message_id=message_id)
        return Entry(entry.id, user_id, entry.seq, entry.role, entry.content, entry.covers) \
            if isinstance(user_id, str) and user_id.strip() else entry

    async def get_history(self, user_id: str, limit: int = 10) -> list[Entry]:
        return await super().get_history(_trim(user_id), limit)

    async def search(self, user_id: str, query: str, k: int = 5) -> list[Entry]:
        return await super().search(_trim(user_id), query, k)

    async def compact(self, user_id: str) -> Entry | None:
        return await super().compact(_trim(user_id))

    async def forget(self, user_id: str) -> None:
        await super().forget(_trim(user_id))


def _trim(user_id: Any) -> Any:
    return user_id.strip() or user_id if isinstance(user_id, str) else user_id


@pytest.fixture(autouse=True)
def _quiet_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


# --------------------------------------------------------------------------- the cause key


def test_a_cause_key_blanks_the_values_and_keeps_the_call() -> None:
    a = cause_key("G9", None, "get_history('ann ') returned entry 'a1b2c3d4e5' ('note 0 of "
                              "user number 5') written for user 'ann' (seed 7: replay with "
                              "--nomnesia-seed 7)")
    b = cause_key("G9", "search", "get_history(' ann') returned entry 'ffee0011aa' ('note 3 "
                                  "of user number 12') written for user 'ann'")
    assert a == b == "G9 get_history: get_history(…) returned entry … (…) written for user …"
    # Without a call in the message, the last call before the check names the kind.
    assert cause_key("G1", "get_history", "acknowledged appends are neither live nor covered "
                                          "by the live summary: ['x', 'y']") \
        == "G1 get_history: acknowledged appends are neither live nor covered by the live " \
           "summary: […]"
    # A shortened repr of a hostile id is blanked whole, quotes and all.
    hostile = "'ab\"c\\'d" + "x" * 30 + "...(256 chars)"
    assert cause_key("Inputs", None, f"valid input refused: append_message({hostile}, 'user', "
                                     "'x') raised ValueError: no") \
        == "Inputs append_message: valid input refused: append_message(…) raised ValueError: no"


def test_violation_causes_one_per_failing_input() -> None:
    inner = GuaranteeViolation(Guarantee.ISOLATION, "get_history('*') returned an entry of "
                                                    "user 'ann'", op="get_history")
    refused = GuaranteeViolation(Guarantee.INPUTS, "valid input refused: append_message('a\"b',"
                                                   " 'user', 'x') raised ValueError: quote")
    both = GuaranteeViolation(Guarantee.ISOLATION, "x", parts=[("user id '*'", inner),
                                                                ("user id 'a\"b'", refused)])
    causes = violation_causes(both)
    assert [c["guarantee"] for c in causes] == ["G9", "Inputs"]
    assert [c["input"] for c in causes] == ["user id '*'", "user id 'a\"b'"]
    plain = violation_causes(RuntimeError("G12 errors: boom"))
    assert plain[0]["guarantee"] == "G12" and plain[0]["key"].startswith("G12 -: RuntimeError")


def test_twelve_tests_one_cause_read_as_one_line() -> None:
    leak = "G9 get_history: get_history(…) returned an entry of another user: … (…), written " \
           "for user …"
    said = "get_history('ann ') returned an entry of another user: 'a1' ('note 0')"
    cause = {"key": leak, "guarantee": "G9", "op": "get_history", "message": said}
    groups = group_causes((f"t.py::test_{i}", [cause]) for i in range(12))
    # The key groups; the line shows one of the group's own messages, values and all.
    assert cause_lines(groups, 12) == [f"12 failed tests, 1 cause: G9 get_history: {said}"]
    other = {**cause, "key": "G7 compact: compact(…) returned None", "guarantee": "G7",
             "op": "compact", "message": "compact('ann') returned None"}
    groups = group_causes([*((f"t.py::test_{i}", [cause]) for i in range(12)),
                           ("t.py::test_c", [other])])
    lines = cause_lines(groups, 13)
    assert lines[0] == "13 failed tests, 2 causes:"
    assert lines[1] == f"  12 tests  G9 get_history: {said}"
    assert lines[2].strip() == "e.g. test_0, test_1 and 10 more"
    assert lines[3] == "    1 test  G7 compact: compact('ann') returned None"


def test_the_summary_shows_the_values_that_broke_the_page() -> None:
    """Issue 48: "N of N huge values broke the page: N**N (Inputs)" told nobody which."""
    huge = GuaranteeViolation(Guarantee.INPUTS, "2 of 4 huge values broke the page: 2**64 "
                                                "(Inputs), 10**30 (Inputs). With 2**64: ...")
    lines = cause_lines(group_causes([("t.py::test_huge", violation_causes(huge))]), 1)
    assert lines == ["1 failed test, 1 cause: Inputs: 2 of 4 huge values broke the page: "
                     "2**64 (Inputs), 10**30 (Inputs). With 2**64: ..."], lines


def test_every_accepted_invalid_input_is_one_cause() -> None:
    """A store without validation is one defect, not one cause per argument and value."""
    found = [(f"t.py::test_invalid[{arg}]",
              violation_causes(GuaranteeViolation(Guarantee.INPUTS, f"{arg}={value} was "
                                                                    "accepted")))
             for arg, value in (("append_message.user_id", "''"), ("append_message.role", "'x'"),
                                ("get_history.limit", "-1"))]
    groups = group_causes(found)
    assert len(groups) == 1 and len(groups[0]["tests"]) == 3, groups
    assert groups[0]["inputs"] == ["append_message.user_id=''", "append_message.role='x'",
                                   "get_history.limit=-1"]
    assert cause_lines(groups, 3)[0].startswith(
        "3 failed tests, 1 cause: Inputs: 3 invalid inputs accepted (the profile promises")


def test_a_symptom_seen_again_after_an_interruption_is_the_same_cause() -> None:
    """Issue 48: a store's order defect failed G5, then again as four G10 failures."""
    order = GuaranteeViolation(Guarantee.ORDER, "get_history('ann') returned 'b' before 'a'",
                               op="get_history")
    after = order.again(f"after get_history was cancelled: {order.guarantee}: {order.detail}",
                        Guarantee.INTERRUPTION)
    assert after.within is order
    groups = group_causes([("t.py::test_order", violation_causes(order)),
                           *((f"t.py::test_cut[{i}]", violation_causes(after))
                             for i in range(4))])
    assert len(groups) == 1 and groups[0]["guarantee"] == "G5", groups
    assert groups[0]["also"] == {"G10": [f"t.py::test_cut[{i}]" for i in range(4)]}
    assert cause_lines(groups, 5)[0].endswith("; also seen inside G10 failures (4 tests)")
    # Alone, the reframed failure stays a G10 cause of its own: nothing to attach it to.
    alone = group_causes([("t.py::test_cut[0]", violation_causes(after))])
    assert [g["guarantee"] for g in alone] == ["G10"]


def test_the_run_ends_with_the_summary_by_cause(pytester: pytest.Pytester) -> None:
    out = pytester.path / "report.json"
    result = pytester.runpytest(*SUITE, "--store", f"{__name__}:TrimmingStore", "-k",
                                "test_inputs", f"--nomnesia-json={out}")
    lines = result.stdout.lines
    start = next(i for i, ln in enumerate(lines) if "nomnesia: failures by cause" in ln)
    summary = lines[start + 1:]
    # Said once, above the causes: how the ids a store received relate to the suite's.
    assert re.match(r"\(ids: .*'\w+1_ann'", summary[0]), summary
    assert re.fullmatch(r"\d+ failed tests, \d+ causes:", summary[1]), summary
    # The trimmed ids are one cause, across tests, listing the ids that show it, and the
    # line quotes a real message: ids and all, not the blanked key.
    trimmed = [ln for ln in summary if "G9 get_history: get_history('ann" in ln]
    assert trimmed and re.match(r" *\d+ tests ", trimmed[0]), summary
    assert "…) returned" not in trimmed[0], trimmed[0]
    report = json.loads(out.read_text(encoding="utf-8"))
    causes = report["causes"]
    assert causes[0]["example"].startswith("get_history('"), causes[0]
    assert len(causes[0]["tests"]) >= 5, causes[0]
    assert {"user id 'ann '", "user id ' ann'"} <= set(causes[0]["inputs"]), causes[0]
    assert {"cause", "guarantee", "example", "tests", "inputs"} <= causes[0].keys()
    failed = [t for t in report["tests"] if t["outcome"] == "failed"]
    assert all(t["causes"] for t in failed)


# --------------------------------------------------------------------------- anomalies


def test_anomalies_option_prints_them_all_and_the_json_keeps_them(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOMNESIA_ROUNDS", "1")
    test = ("-k", "test_concurrent_mixed_workload", "--nomnesia-seed", "3")
    store = ("--store", "nomnesia.adapters.fragile:FragileMemoryStore")
    out = pytester.path / "short.json"
    short = pytester.runpytest(*SUITE, *store, *test, f"--nomnesia-json={out}")
    text = short.stdout.str()
    assert "more anomalies (--nomnesia-anomalies N or all shows more" in text
    (entry,) = [t for t in json.loads(out.read_text())["tests"] if t["outcome"] == "failed"]
    assert len(entry["anomalies"]) > 3
    out = pytester.path / "every.json"
    every = pytester.runpytest(*SUITE, *store, *test, "--nomnesia-anomalies", "all",
                               f"--nomnesia-json={out}")
    text = every.stdout.str()
    assert "more anomalies" not in text
    (entry,) = [t for t in json.loads(out.read_text())["tests"] if t["outcome"] == "failed"]
    assert len(entry["anomalies"]) > 3
    assert all(a.split("\n", 1)[0] in text for a in entry["anomalies"])
    # The summary names each kind of anomaly once, by the checker's own kind.
    assert re.search(r"^ +1 test +G\d+ \w+: [a-z-]+$", text, re.M), text[-3000:]


def test_anomalies_option_rejects_nonsense(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*SUITE, "--adapter", "memory", "--nomnesia-anomalies", "0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--nomnesia-anomalies*number >= 1 or 'all'*"])


# --------------------------------------------------------------------------- matrices


def _test(nodeid: str, outcome: str, guarantees: list[str],
          failed: list[str] | None = None) -> dict[str, Any]:
    return {"nodeid": nodeid, "outcome": outcome, "guarantees": guarantees,
            "failed_guarantees": failed or [], "message": ""}


# pgvector today: every search crashed the engine, so no G4 check ran; most tests skipped.
TESTS = [
    _test("search_1", "failed", ["G4", "G12"], ["G12"]),
    _test("search_2", "failed", ["G4", "G12"], ["G12"]),
    _test("history", "passed", ["G3"]),
    *(_test(f"failpoint_{i}", "skipped", ["G10"]) for i in range(5)),
    _test("interrupt", "passed", ["G10"]),
    _test("only_skipped", "skipped", ["G11"]),
]


def test_verdicts_never_pass_what_did_not_run() -> None:
    verdicts = guarantee_verdicts(TESTS)
    assert verdicts["G4"]["verdict"] == "not reached"
    assert verdicts["G4"]["not_reached"] == 2 and verdicts["G4"]["failed"] == 0
    assert verdicts["G12"]["verdict"] == "fail"
    assert verdicts["G3"]["verdict"] == "pass"
    assert (verdicts["G10"]["verdict"], verdicts["G10"]["skipped"]) == ("pass", 5)
    assert verdicts["G11"]["verdict"] == "skipped"
    assert verdicts["G1"]["verdict"] == "not exercised"


@pytest.mark.parametrize(("counts", "text"), [
    ((2, 0, 0, 0), "FAIL (2)"), ((0, 3, 0, 0), "pass"),
    ((0, 6, 53, 0), "pass (6 of 59, 53 skipped)"), ((0, 0, 0, 2), "not reached (2)"),
    ((0, 0, 0, 1), "not reached"), ((0, 0, 4, 0), "skipped (4)"), ((0, 0, 0, 0), "—"),
    ((0, 1, 1, 2), "pass (1 of 2, 1 skipped)"), ((0, 1, 0, 2), "pass"),
])
def test_verdict_text(counts: tuple[int, int, int, int], text: str) -> None:
    assert verdict_text(*counts) == text


def test_matrix_cells_say_not_reached_and_count_skips() -> None:
    report = {"format": FORMAT, "meta": {"label": "pgvector", "python": "3.12"},
              "tests": TESTS}
    (row,) = build_matrix([report])
    assert (row.cells["G4"].state, row.cells["G4"].text) == ("unreached", "not reached (2)")
    assert row.cells["G10"].text == "pass (1 of 6, 5 skipped)"
    assert row.cells["G3"].text == "pass" and row.cells["G12"].text == "FAIL (2)"
    assert (row.cells["G11"].state, row.cells["G11"].text) == ("none", "skipped (1)")
    line = render_markdown([row]).splitlines()[2]
    cells = [c.strip() for c in line.split("|")[2:-2]]
    assert cells[GUARANTEE_KEYS.index("G4")] == "not reached (2)"


def test_nox_cells_name_what_was_not_reached_or_skipped() -> None:
    def leaf(tests: list[dict[str, Any]], code: int, verdicts: list[dict[str, Any]]
             ) -> dict[str, Any]:
        return {"format": FORMAT, "meta": {"label": "pgvector", "python": "3.12.1",
                                           "exitstatus": code},
                "tests": tests, "guarantees": guarantee_verdicts(verdicts)}

    fail = {**_test("search_1", "failed", [], ["G12"]),
            "message": "G12 errors: search raised InternalError"}
    cell = leaf_cell(leaf([fail], 1, TESTS))
    assert cell.text() == "FAIL G12 (G4 not reached)"
    passing = [t for t in TESTS if t["outcome"] != "failed"]
    ok = leaf([_test("t", "passed", []), _test("s", "skipped", [])], 0, passing)
    assert leaf_cell(ok).text() == "pass (1, 1 skipped; G11 skipped)"
