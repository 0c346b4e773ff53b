"""The ecosystem audits' bookkeeping, without running any audited library.

The audits themselves take minutes and need the ``ecosystem`` extra (``nox -s
audits``); what must never silently break is the part that decides whether the
findings changed, and the agreement between the checked-in expectation and the
checked-in document.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from nomnesia.adapters.ecosystem import AUDITS
from nomnesia.adapters.ecosystem.causes import CAUSES, SEVERITIES, classify
from nomnesia.adapters.ecosystem.probes import PROBES
from nomnesia.adapters.ecosystem.report import (
    diff_findings,
    failure_parts,
    findings_block,
    findings_of,
    main,
    render,
)

ROOT = Path(__file__).resolve().parents[1]
EXPECTED = ROOT / "adapters" / "ecosystem" / "expected.json"
DOC = ROOT / "docs" / "ecosystem.md"

COVERED_RETRY = "G6 idempotent appends: a retry of a covered message changed the history"


def _report(*failures: tuple[str, str]) -> dict[str, Any]:
    tests = [{"nodeid": f"suite/test_contract.py::TestContract::{name}", "outcome": "failed",
              "message": message, "guarantees": [], "failed_guarantees": []}
             for name, message in failures]
    tests.append({"nodeid": "suite/test_contract.py::TestContract::test_ok", "outcome": "passed",
                  "message": ""})
    return {"summary": {"failed": len(failures), "passed": 1}, "guarantees": {}, "tests": tests}


def _render(tmp_path: Path, report: dict[str, Any], expected: dict[str, list[str]]) -> int:
    results = tmp_path / "results"
    results.mkdir(exist_ok=True)
    (results / "mem0.json").write_text(json.dumps(report), encoding="utf-8")
    exp = tmp_path / "expected.json"
    exp.write_text(json.dumps(expected), encoding="utf-8")
    return main(["render", "--results", str(results), "--expected", str(exp),
                 "--out", str(tmp_path / "ecosystem.md"), "--only", "mem0"])


def test_same_findings_pass(tmp_path: Path) -> None:
    report = _report(("test_retry", COVERED_RETRY))
    assert _render(tmp_path, report, {"mem0": ["covered-retry"]}) == 0


def test_a_new_failure_fails(tmp_path: Path) -> None:
    report = _report(("test_retry", COVERED_RETRY),
                     ("test_new", "G2 exactly once: something nobody has seen"))
    assert _render(tmp_path, report, {"mem0": ["covered-retry"]}) == 1


def test_a_fixed_failure_fails(tmp_path: Path) -> None:
    assert _render(tmp_path, _report(), {"mem0": ["covered-retry"]}) == 1


def test_update_accepts_the_findings(tmp_path: Path) -> None:
    report = _report(("test_retry", COVERED_RETRY))
    results = tmp_path / "results"
    assert _render(tmp_path, report, {}) == 1
    exp = tmp_path / "expected.json"
    assert main(["render", "--results", str(results), "--expected", str(exp), "--out",
                 str(tmp_path / "x.md"), "--only", "mem0", "--update"]) == 0
    assert json.loads(exp.read_text(encoding="utf-8"))["mem0"] == ["covered-retry"]
    assert _render(tmp_path, report, json.loads(exp.read_text(encoding="utf-8"))) == 0


def test_diff_names_both_directions() -> None:
    lines = diff_findings({"mem0": ["a", "b"]}, {"mem0": ["b", "c"]})
    assert lines == ["mem0: new finding c", "mem0: fixed (expected but not found) a"]
    assert diff_findings({"mem0": ["a"]}, {"mem0": ["a"]}) == []


def test_a_racy_cause_a_run_missed_is_no_fix() -> None:
    racy = frozenset({"r"})
    assert diff_findings({"mem0": ["a", "r"]}, {"mem0": ["a"]}, racy) == []
    # Caught this time: a known, traced cause of this library, not news either.
    assert diff_findings({"mem0": ["a"]}, {"mem0": ["a", "r"]}, racy) == []
    assert diff_findings({"mem0": ["a"]}, {"mem0": ["a", "b"]}, racy) == ["mem0: new finding b"]


def test_an_unexplained_failure_is_a_finding_of_its_own() -> None:
    found = findings_of("mem0", _report(("test_odd", "G2 exactly once: odd")))
    assert found.keys == ["unclassified:test_contract.py::TestContract::test_odd"]


def test_probes_count_only_when_they_reproduced() -> None:
    found = findings_of("mem0", _report(), probes={"mem0-wildcard-delete-all": "deleted",
                                                   "mem0-trims-user-ids": None})
    assert found.keys == ["mem0-wildcard-delete-all"]


def test_mem0_causes_are_told_apart() -> None:
    trimmed = ("G9 isolation: get_history('ann') returned entry 'x' ('x ann  1') written for "
               "user 'ann '")
    refused = ("Inputs: append_message('say \"hi\"', 'user', 'n') raised ValueError: Invalid "
               "user_id: cannot contain whitespace.")
    dropped = ("G1 durability: acknowledged appends are neither live nor covered: ['i']\n"
               "  3. append_message('ann', 'system', 'm') -> <system seq=3 id='i' 'm'>")
    assert classify("mem0", trimmed) == ["mem0-trims-user-ids"]
    quoted = ("G9 isolation: user id \"🧠ß*' \": get_history(\"🧠ß*' \") returned an entry of "
              "another user: '3a64' ('note 0 of user number 3'), written for user \"🧠ß*'\"")
    assert classify("mem0", quoted) == ["mem0-trims-user-ids"]
    assert classify("mem0", refused) == ["mem0-refuses-whitespace-ids"]
    assert classify("mem0", dropped) == ["mem0-drops-system"]


# One failure of the merged suite: every failing input as a block of its own
# (suite/core/attempts.py), then pytest's traceback. Shortened from a real mem0 run.
MANY_INPUTS = """\
Inputs: user id 'say "hi"': valid input refused: append_message('say "hi"', 'user', 'note 0') \
raised ValueError: Invalid user_id: cannot contain whitespace. Provide a valid identifier.
(3 failures among 67 user ids, each tried on its own and shown below with its own operations: \
'say "hi"' (Inputs), 'ann ' (G9), '*' (G9))

operations, oldest first:
   25. append_message('say "hi"', 'user', 'note 0') -> raised ValueError: ...

G9 isolation: user id 'ann ': get_history('ann ') returned an entry of another user: 'db50' \
('note 0 of user number 0'), written for user 'ann'

operations, oldest first:
    1. append_message('ann', 'system', 'note 0 of user number 0') -> <system seq=1 id='db50'>

G9 isolation: user id '*': forget('*') after compact('*') changed the history of 46 other users: \
'ann', 'Ann'

operations, oldest first:
   33. forget('*') -> None

test_inputs.py:129: in test_adversarial_user_ids_compact_and_forget_alone
    'system' in the source of the test
"""


def test_a_failure_is_cut_into_its_violations() -> None:
    parts = failure_parts(MANY_INPUTS)
    assert [column for column, _ in parts] == ["Inputs", "G9", "G9"]
    assert "test_inputs.py:129" not in parts[-1][1]


def test_each_violation_is_classified_on_its_own() -> None:
    """One test shows three causes; 'system' in another block does not make a G9 one G1."""
    report = _report(("test_adversarial_user_ids", MANY_INPUTS))
    found = findings_of("mem0", report)
    assert found.keys == ["mem0-refuses-whitespace-ids", "mem0-trims-user-ids",
                          "mem0-wildcard-delete-all"]
    assert found.broken["mem0-wildcard-delete-all"] == {"G9"}
    assert found.broken["mem0-refuses-whitespace-ids"] == {"Inputs"}


def test_invalid_values_of_the_merged_suite_are_told_apart() -> None:
    def keys(audit: str, line: str) -> list[str]:
        return classify(audit, line)

    head = "Inputs: append_message.content "
    assert keys("langgraph-memory", head + "None: append_message.content=None was accepted") \
        == ["unchecked-content-type"]
    assert keys("langgraph-postgres", head + "'\\ud800': append_message.content='\\ud800' "
                "raised InvalidTextRepresentation, not ValueError or TypeError") \
        == ["unchecked-surrogates"]
    assert keys("mem0", "Inputs: get_history.user_id 1: get_history.user_id=1 was accepted") \
        == ["mem0-coerces-ids"]
    assert keys("langchain-postgres", "Inputs: forget.user_id '\\x00': forget.user_id='\\x00' "
                "raised DataError, not ValueError or TypeError") == ["unchecked-nul-user-id"]
    assert keys("llama-index-redis", head + "None: rejecting append_message.content=None "
                "changed the store's state") == ["llama-refused-content-half-written"]


def test_a_cause_the_adapter_guards_against_says_why_only_its_probe_shows_it() -> None:
    found = findings_of("langchain-postgres", _report(),
                        probes={"langchain-k-bigint": "k=2**64 raised DataError"})
    assert found.keys == ["langchain-k-bigint"]
    doc = render({"langchain-postgres": found})
    assert "the probe only (no suite test can reach it: the adapter clamps" in doc

def test_every_cause_is_well_formed() -> None:
    keys = [c.key for c in CAUSES]
    assert len(keys) == len(set(keys))
    for cause in CAUSES:
        assert set(cause.audits) <= set(AUDITS), cause.key
        assert cause.function and cause.reproduction and cause.guarantees, cause.key
        assert cause.severity in SEVERITIES and cause.conditions, cause.key
        assert cause.kind in ("library", "mapping"), cause.key
        assert cause.match or cause.probe, f"{cause.key} can never be found"
        for pattern in cause.match:
            re.compile(pattern)
        assert cause.probe is None or cause.probe in PROBES, cause.key


def test_expectation_and_document_agree() -> None:
    """docs/ecosystem.md states exactly the checked-in findings, each cause with its function."""
    expected = json.loads(EXPECTED.read_text(encoding="utf-8"))
    doc = DOC.read_text(encoding="utf-8")
    assert findings_block(doc) == expected
    by_key = {c.key: c for c in CAUSES}
    for audit, keys in expected.items():
        assert audit in AUDITS
        assert AUDITS[audit].title in doc
        for key in keys:
            if key.startswith("unclassified:"):
                assert key.partition(":")[2] in doc
                continue
            cause = by_key[key]
            assert f"`{key}`" in doc and f"`{cause.function}`" in doc, key
            assert f"`{cause.reproduction}`" in doc, key


@pytest.mark.parametrize("key", ["mem0-wildcard-delete-all", "mem0-trims-user-ids",
                                 "mem0-drops-system", "mem0-refuses-whitespace-ids"])
def test_mem0_findings_of_issue_13_are_expected(key: str) -> None:
    assert key in json.loads(EXPECTED.read_text(encoding="utf-8"))["mem0"]


def test_the_document_covers_sixteen_configurations_at_least() -> None:
    assert len(json.loads(EXPECTED.read_text(encoding="utf-8"))) >= 16


def test_every_audit_runs_through_a_suite_option_with_a_pinned_seed() -> None:
    from nomnesia.suite.interfaces import INTERFACES

    options = {"--store", *(i.option for i in INTERFACES)}
    for audit in AUDITS.values():
        assert audit.option in options, audit.name
        assert f"--nomnesia-seed={audit.seed}" in audit.argv, audit.name


# A failure of suite/test_model.py: one block headed by its guarantee, then the shrunk call
# sequence, numbered. Shortened from a real langgraph-memory run.
MODEL_FAILURE = """\
Inputs: an invalid content 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx was \
accepted, not rejected with ValueError or TypeError

the smallest call sequence Hypothesis found, 1 calls on a fresh store (seed 2178745034: replay \
with --nomnesia-seed 2178745034):
    1. append_message('ann', 'user', 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...(65537 chars)) -> \
<user seq=1796122832913278 id='c17c' 'xxxxxxxxxxxxxxxxxxxxxxxxxxx...(65537 chars)>
"""


def test_model_test_failures_are_traced_like_the_input_tests() -> None:
    assert classify("langgraph-memory", MODEL_FAILURE) == ["contract-limits"]

    def model(line: str) -> str:
        return f"Inputs: {line}\n\nthe smallest call sequence Hypothesis found, 2 calls:\n"

    assert classify("mem0", model("an invalid user_id 1 was accepted, not rejected with "
                                  "ValueError or TypeError")) == ["mem0-coerces-ids"]
    assert classify("langchain-postgres", model("an invalid user_id '' was accepted, not "
                                                "rejected with ValueError or TypeError")) \
        == ["chat-accepts-empty-key"]
    assert classify("langgraph-memory", model("an invalid content None was accepted, not "
                                              "rejected with ValueError or TypeError")) \
        == ["unchecked-content-type"]
    assert classify("llama-index-redis", model("a call rejected for its content changed the "
                                               "history (written before the check?)")) \
        == ["llama-refused-content-half-written"]


def test_the_wildcard_user_id_shows_under_forget_and_isolation() -> None:
    """Issue 13: forget('*') deletes other users' memories (G8), reading '*' all (G9)."""
    found = findings_of("mem0", _report(), probes={
        "mem0-wildcard-delete-all": "forget('*') deleted the entries of 'ann' and 'bob'"})
    row = next(line for line in render({"mem0": found}).splitlines()
               if line.startswith("| mem0") and "isolation" not in line and "tests" not in line
               and line.count("|") > 10)
    cells = dict(zip(("G1", "G2", "G3", "G4", "G5", "G6", "G7", "G8", "G9", "G10", "G11", "G12",
                      "Inputs"), [c.strip() for c in row.strip("|").split("|")[2:]], strict=True))
    assert "(#mem0-wildcard-delete-all)" in cells["G8"]
    assert "(#mem0-wildcard-delete-all)" in cells["G9"]


def test_the_wildcard_forget_and_the_wildcard_read_are_two_causes() -> None:
    """Issue 22: the read is documented ('*' in filters: field exists), the delete is not."""
    forget = ("G9 isolation: user id '*': forget('*') after compact('*') changed the history "
              "of 46 other users: 'ann', 'Ann'")
    read = ("G9 isolation: user id '*': get_history('*') returned an entry of another user: "
            "'3a64' ('note 0 of user number 3'), written for user 'ann'")
    assert classify("mem0", forget) == ["mem0-wildcard-delete-all"]
    assert classify("mem0", read) == ["mem0-wildcard-filter"]
    by_key = {c.key: c for c in CAUSES}
    assert by_key["mem0-wildcard-delete-all"].severity == "data loss"
    assert by_key["mem0-wildcard-filter"].severity == "hazard"
    assert by_key["mem0-wildcard-filter"].documented


def test_the_six_causes_a_maintainer_read_are_corrected() -> None:
    """Issue 22's review: intent told from defect, the right distribution, the conditions."""
    by_key = {c.key: c for c in CAUSES}
    for key in ("mem0-trims-user-ids", "mem0-drops-system", "langgraph-dot-in-namespace"):
        assert by_key[key].severity == "hazard" and by_key[key].documented, key
    assert by_key["langgraph-dot-in-namespace"].functions == (
        "langgraph.store.base:_validate_namespace_labels",)
    assert "autocommit" in by_key["langchain-no-rollback"].conditions
    assert "2**62" in by_key["langgraph-postgres-limit-bigint"].what
    assert "get_history" not in by_key["mem0-wildcard-delete-all"].reproduction


def test_the_summary_leads_with_the_worst_severity() -> None:
    found = findings_of("mem0", _report(), probes={"mem0-wildcard-delete-all": "deleted",
                                                   "mem0-trims-user-ids": "trimmed"})
    doc = render({"mem0": found})
    summary = doc.index("## Summary by library, worst first")
    assert summary < doc.index("## Library × guarantee") < doc.index("## Causes")
    header = next(line for line in doc[summary:].splitlines() if line.startswith("| library"))
    assert header.index("data loss") < header.index("leak") < header.index("hazard") \
        < header.index("contract gap")
    assert doc.index('id="mem0-wildcard-delete-all"') < doc.index('id="mem0-trims-user-ids"')


def test_probes_read_the_entries_an_interface_mapping_returns() -> None:
    """An interface audit's probes run on the store its option's mapping opens
    (``report._probe``), whose entries are dicts and whose append returns nothing; the
    probes read them as they read an ``Entry``."""
    import asyncio
    import importlib.util

    if importlib.util.find_spec("mem0") is None:  # checked, not imported: the shape needs none
        pytest.skip("the --mem0-memory option needs mem0ai")

    from interface_shapes import Mem0Shaped

    from nomnesia.adapters.ecosystem.probes import system_dropped, trimmed_user_id
    from nomnesia.suite.interfaces import by_option, store_factory

    class DropsSystem(Mem0Shaped):
        async def add(self, messages: Any, **kwargs: Any) -> dict[str, Any]:
            return await super().add([m for m in messages if m["role"] != "system"], **kwargs)

    mem0 = by_option("--mem0-memory")
    dropped = asyncio.run(system_dropped(store_factory(mem0, DropsSystem)))
    assert dropped is not None and dropped.startswith("append_message('ann', 'system', ...)")
    assert asyncio.run(system_dropped(store_factory(mem0, Mem0Shaped))) is None
    assert asyncio.run(trimmed_user_id(store_factory(mem0, Mem0Shaped))) is None


# Shortened from the autogen-redis audit (issue 48): a concurrency failure whose anomalies are
# G1 losses, after which the suite adds the calls that blocked the event loop meanwhile.
BLOCKED_LOOP = (
    "G1 durability: 'p4 n12 iris nectar' was acknowledged, then read 596 (limit 1) does not "
    "return it, though it is missing and the read is whole (no summary, fewer entries than "
    "its limit)\n     237 p4   invoke append  'q_anna' ('system', 'p4 n12 iris nectar', None)\n"
    "(meanwhile, append_message('q_ann', 'tool', 'p0 n68') blocked the event loop for 60.5 s: "
    "a synchronous call inside an async method (nothing else runs meanwhile, no timeout "
    "fires: a call that blocks the loop cannot be bounded by its timeout))\n")


def test_a_blocked_event_loop_after_another_failure_is_a_g12_violation_of_its_own() -> None:
    """The anomalies of a concurrency failure do not carry the sentence: it is read from the
    full text, classified under G12, and not glued to the block before it."""
    anomaly = BLOCKED_LOOP.partition("(meanwhile")[0].strip()
    report = _report(("test_partial_failures_on_each_engine", BLOCKED_LOOP))
    report["tests"][0]["anomalies"] = [anomaly]
    found = findings_of("autogen-redis", report)
    assert found.keys == ["autogen-redis-blocks-event-loop", "autogen-redis-clear-prefix"]
    assert found.broken["autogen-redis-blocks-event-loop"] == {"G12"}
    assert found.broken["autogen-redis-clear-prefix"] == {"G1"}
    without = findings_of("autogen-redis", _report(("test_x", BLOCKED_LOOP)))
    assert without.broken["autogen-redis-clear-prefix"] == {"G1"}


def test_agno_losses_are_told_from_agno_order() -> None:
    """A miss in a read its limit cut is the order cause; in a whole read, a lost write."""
    cut = ("G1 durability: 'p1 n15' was acknowledged, then read 406 (limit 6) does not return "
           "it, though it is newer than the oldest message it returns")
    whole = cut + " and the read is whole (no summary, fewer entries than its limit)"
    nul = ("G1 durability: content #4 'a\\x00b': acknowledged appends are not live (and no "
           "summary is live that could cover them): ['a\\x00b']")
    assert classify("agno-postgres", cut) == ["agno-postgres-last-n-order"]
    assert classify("agno-postgres", whole) == ["agno-acks-failed-write"]
    assert classify("agno-postgres", nul) == ["agno-acks-failed-write"]


def test_the_audits_take_their_engines_from_the_suites_session() -> None:
    """Inside a suite run an audit's store must get the session's URL (the one the
    partial-failure test routes through its fault proxy), not a provider of its own: since
    the session moved to nomnesia.adapters.engines.session, looking for
    nomnesia.suite.engines in sys.modules found nothing, and no audit was faulted."""
    from nomnesia.adapters.ecosystem import _engines
    from nomnesia.adapters.engines.session import EngineSession, install

    class Fake:
        def url(self, engine: str) -> str:
            return f"fake://{engine}"

        def close(self) -> None:
            return None

    uninstall = install(EngineSession(Fake))
    try:
        assert _engines.url("postgres") == "fake://postgres"
    finally:
        uninstall()


def test_a_suite_that_crashed_leaves_no_results_and_the_others_still_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A segfault in a library's native code (langchain-sql-postgres under asyncpg, once)
    used to stop ``nox -s audits`` at that audit, and an earlier run's JSON would have been
    read as its findings: run.py removes it first and returns ``CRASHED``, which the session
    accepts until the render names the audit without results."""
    import subprocess

    from nomnesia.adapters.ecosystem import run

    name = next(iter(AUDITS))
    stale = tmp_path / f"{name}.json"
    stale.write_text("{}", encoding="utf-8")
    monkeypatch.setattr(run, "python_for", lambda audit, results: "python")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, -11))
    assert run.main([name, "--results", str(tmp_path)]) == run.CRASHED
    assert not stale.exists()
