"""The pytest side of the report: what each test declares it checks, and why it failed.

Under pytest-xdist the workers run the tests and the controller writes the
file: workers annotate each report's ``user_properties`` (which xdist forwards),
and the controller's ``json_report.JsonReporter`` reads them. Everything put
there is plain JSON for that reason.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from ..contract import Guarantee
from ..core.profiles import ITEM_PROFILE
from .causes import cause, guarantee_of_text, violation_causes
from .evidence import evidence
from .labels import guarantee_key, ordered
from .outcome import failure_text, first_line, is_not_applicable

__all__ = ["ANOMALIES", "CAUSES", "EVIDENCE", "MARK", "PROPERTY", "Annotator", "annotate",
           "declared", "report_causes"]

PROPERTY = "nomnesia_guarantees"
"""user_properties key: the guarantees a test exercises."""
CAUSES = "nomnesia_causes"
"""user_properties key: the causes of a failed test (``annotate``), one per failing input."""
ANOMALIES = "nomnesia_anomalies"
"""user_properties key: every anomaly of a concurrency failure, however many were printed."""
EVIDENCE = "nomnesia_evidence"
"""user_properties key: the whole message, the anomalies' ops and the failing history."""
MARK = "guarantee"
"""The one mark a suite test declares what it checks with (registered by plugin.py)."""
"""The suite's machinery, looked up only if loaded: the report never imports it."""


def declared(item: pytest.Item) -> list[str] | None:
    """The guarantees ``item`` declares it checks, in column order; None if it declares nothing.

    A test declares them with ``@pytest.mark.guarantee(G1, G7, ...)`` (the names
    ``nomnesia.suite.contract`` exports); marks add up, so a parametrized case
    can add its own (``pytest.param("compact", marks=pytest.mark.guarantee(G7))``).
    A test of the suite itself declares ``none="why"`` and gets ``[]``.
    Anything else in the mark is a ``pytest.UsageError``: a misspelt declaration
    would otherwise quietly turn a guarantee's column into "not exercised".
    """
    marks = [*item.iter_markers(MARK), *_overridden_marks(item)]
    if not marks:
        return None
    keys: set[str] = set()
    reasons: list[object] = []
    for mark in marks:
        unknown = sorted(set(mark.kwargs) - {"none"})
        bad = [a for a in mark.args if not isinstance(a, Guarantee)]
        if unknown or bad:
            raise pytest.UsageError(
                f"{item.nodeid}: @pytest.mark.{MARK} takes Guarantee members "
                f"(nomnesia.suite.contract.G1 ... G12, INPUTS) and none='why', not "
                f"{', '.join([*map(repr, bad), *(f'{k}=' for k in unknown)])}")
        keys.update(k for g in mark.args if (k := guarantee_key(g)))
        if "none" in mark.kwargs:
            reasons.append(mark.kwargs["none"])
    if (reasons and keys) or any(not isinstance(r, str) or not r.strip() for r in reasons):
        raise pytest.UsageError(
            f"{item.nodeid}: @pytest.mark.{MARK}(none='why') declares that the test checks no "
            "guarantee: give a reason, and no guarantees beside it")
    if not keys and not reasons:
        raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.{MARK}() names no guarantee; "
                                "a test of the suite itself says none='why'")
    return ordered(keys)


def _overridden_marks(item: pytest.Item) -> list[pytest.Mark]:
    """The marks of the suite test that ``item`` overrides in a user's subclass, if any.

    A store's test class may override a suite test only to mark it
    ``xfail(reason=...)``; the override has no guarantee mark of its own, and
    without the original's the report would lose which guarantees that xfail
    gives up on.
    """
    cls, name = getattr(item, "cls", None), getattr(item, "originalname", None)
    for base in (cls.__mro__[1:] if cls is not None and name else ()):
        original = base.__dict__.get(name)
        if original is not None:
            return [m for m in getattr(original, "pytestmark", ()) if m.name == MARK]
    return []


_DECLARED = pytest.StashKey[list[str]]()


def annotate(report: pytest.TestReport, excinfo: pytest.ExceptionInfo[BaseException] | None
             ) -> None:
    """Attach a failed suite test's causes (and every anomaly) to its report.

    ``user_properties`` travel with the report to an xdist controller, where
    the terminal summary and the JSON report read them.
    """
    if not report.failed or any(key == CAUSES for key, _ in report.user_properties):
        return
    if excinfo is not None:
        causes = violation_causes(excinfo.value)
        anomalies = [str(a) for a in getattr(excinfo.value, "anomalies", None) or []]
    else:
        text = failure_text(report)
        causes, anomalies = [cause(guarantee_of_text(text), None, first_line(report))], []
    if report.when != "call":
        for one in causes:
            one["key"] = f"{one['key']} (in {report.when})"
    report.user_properties.append((CAUSES, causes))
    if anomalies:
        report.user_properties.append((ANOMALIES, anomalies))


def report_causes(report: pytest.TestReport) -> list[dict[str, Any]]:
    """The causes ``annotate`` attached to a report ([] if none)."""
    for key, value in report.user_properties:
        if key == CAUSES and isinstance(value, list):
            return [c for c in value if isinstance(c, dict)]
    return []


def _item_judged(item: pytest.Item) -> set[str] | None:
    """The guarantee keys the profile a test ran under is judged on (None: not known)."""
    resolved = item.stash.get(ITEM_PROFILE, None)
    if resolved is None:
        return None
    return {guarantee_key(g) or "" for g in resolved.profile.judged}


class Annotator:
    """Worker side: annotate every report with the guarantees its test declares, and a
    failure with its evidence (only for the JSON report: a history is too big for a log)."""

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            item.stash[_DECLARED] = declared(item) or []

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]
                                  ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if report.when == "setup":
            keys = item.stash.get(_DECLARED, None)
            if keys is None:  # added after collection by another plugin
                keys = declared(item) or []
            judged = _item_judged(item)
            if judged is not None and not is_not_applicable(report):
                keys = [k for k in keys if k in judged]  # a seed store is not judged on G4
            if keys:
                report.user_properties.append((PROPERTY, keys))
        if report.failed and call.excinfo is not None and not any(
                key == EVIDENCE for key, _ in report.user_properties):
            report.user_properties.append((EVIDENCE, evidence(call.excinfo.value)))
        return report
