"""Per-guarantee verdicts: never "pass" for a guarantee no test got to check.

The JSON report's ``guarantees`` section and every matrix cell come from here,
so a guarantee whose tests all stopped early on another failure, were all
skipped, or are not applicable to the store's profile reads so everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .labels import GUARANTEE_KEYS, NA_TEXT, NOT_APPLICABLE, NOT_EXERCISED, RAN_OUTCOMES

__all__ = ["guarantee_verdicts", "verdict_text"]


def guarantee_verdicts(tests: Iterable[Mapping[str, Any]], *,
                       judged: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
    """Per guarantee: tests that exercised it, how many failed on it, the first to fail.

    A guarantee is ``pass`` only if a test that exercises it passed: when
    every such test failed on another guarantee first (every search crashed
    the engine, so no G4 check ran), it is ``not reached``; when they were
    all skipped, ``skipped``; when the store's profile is not judged on it
    (``judged``: the keys it is judged on) or every test of it was not
    applicable, ``not applicable``. ``passed``, ``skipped``, ``not_reached``
    and ``not_applicable`` count the tests behind that.
    """
    verdicts: dict[str, dict[str, Any]] = {
        key: {"verdict": "not exercised", "tests": 0, "failed": 0, "first_failure": None,
              "passed": 0, "skipped": 0, "not_reached": 0, "not_applicable": 0}
        for key in GUARANTEE_KEYS}
    for test in tests:
        outcome = test.get("outcome")
        failed = set(test.get("failed_guarantees", ()))
        keys = set(test.get("guarantees", ())) | failed
        if outcome == NOT_APPLICABLE:
            for key in keys & verdicts.keys():
                verdicts[key]["not_applicable"] += 1
            continue
        if outcome not in RAN_OUTCOMES:
            for key in keys & verdicts.keys():
                verdicts[key]["skipped"] += 1  # a skipped test exercised nothing
            continue
        for key in keys:
            cell = verdicts[key]
            cell["tests"] += 1
            if key in failed:
                cell["failed"] += 1
                cell["first_failure"] = cell["first_failure"] or test["nodeid"]
            elif outcome in ("failed", "error"):
                cell["unattributed_failures"] = cell.get("unattributed_failures", 0) + 1
                cell["not_reached"] += 1
            else:
                cell["passed"] += 1
    outside = set() if judged is None else set(GUARANTEE_KEYS) - set(judged)
    for key, cell in verdicts.items():
        if cell["failed"]:
            cell["verdict"] = "fail"
        elif key in outside:
            cell["verdict"] = NOT_APPLICABLE
        elif cell["passed"]:
            cell["verdict"] = "pass"
        elif cell["not_reached"]:
            cell["verdict"] = "not reached"
        elif cell["skipped"]:
            cell["verdict"] = "skipped"
        elif cell["not_applicable"]:
            cell["verdict"] = NOT_APPLICABLE
    return verdicts


def verdict_text(failed: int, passed: int, skipped: int, not_reached: int,
                 not_applicable: int = 0) -> str:
    """A matrix cell: ``FAIL (2)``, ``pass``, ``pass (6 of 59, 53 skipped)``, ``not reached``,
    ``n/a``.

    A plain ``pass`` means a test that exercises the guarantee passed and none
    was skipped; skips are counted, and a guarantee that no test got to check
    (all failed on another guarantee first, all skipped, or all not applicable
    to the store's profile) never reads as a pass.
    """
    if failed:
        return f"FAIL ({failed})"
    if not passed:
        if not_reached:
            return "not reached" + (f" ({not_reached})" if not_reached > 1 else "")
        if skipped:
            return f"skipped ({skipped})"
        return NA_TEXT if not_applicable else NOT_EXERCISED
    # A test that failed on another guarantee may well have checked this one first,
    # so beside a passing test it does not qualify the pass; a skipped test checked nothing.
    return f"pass ({passed} of {passed + skipped}, {skipped} skipped)" if skipped else "pass"
