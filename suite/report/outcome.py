"""What a pytest report says: its outcome for the suite, its failure text, a skip's reason.

Both the hooks that annotate a test (on an xdist worker) and the JSON writer
(on the controller) read reports the same way; this is that one reading.
"""

from __future__ import annotations

import re

import pytest

from .labels import NOT_APPLICABLE

__all__ = ["RANK", "failure_text", "first_line", "is_not_applicable", "outcome", "skip_reason"]

RANK = {"passed": 0, "skipped": 1, "xfailed": 1, NOT_APPLICABLE: 1, "xpassed": 2,
        "failed": 3, "error": 4}
"""A test's outcome is its worst phase's: an error in teardown outranks a passed call."""

_WORKER = re.compile(r"^\[gw\d+\] ")


def failure_text(report: pytest.TestReport) -> str:
    """The crash message and the whole long representation: where guarantees are named."""
    longrepr = report.longrepr
    parts: list[str] = []
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None and getattr(crash, "message", None):
        parts.append(str(crash.message))
    if isinstance(longrepr, str):
        parts.append(longrepr)
    else:
        parts.append(report.longreprtext)
    return "\n".join(parts)


def first_line(report: pytest.TestReport) -> str:
    """The first line of a failure or skip, as a table or a summary shows it."""
    crash = getattr(report.longrepr, "reprcrash", None)
    message = str(getattr(crash, "message", "") or "")
    if not message:
        message = report.longreprtext.strip()
    if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        message = str(report.longrepr[2])  # a skip: (path, line, reason)
    # xdist prefixes a plain-text longrepr with the worker ("[gw0] linux -- Python ...").
    lines = [ln for ln in message.strip().splitlines() if ln.strip() and not _WORKER.match(ln)]
    return lines[0][:500] if lines else ""


def skip_reason(report: pytest.TestReport) -> str:
    """A skipped report's reason, without pytest's ``Skipped: `` prefix ("" if none)."""
    longrepr = report.longrepr
    reason = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else ""
    return reason.removeprefix("Skipped: ")


def is_not_applicable(report: pytest.TestReport) -> bool:
    """Whether a skip is the profile's not applicable (``profiles.not_applicable``)."""
    return bool(report.skipped) and skip_reason(report).startswith(NOT_APPLICABLE)


def outcome(report: pytest.TestReport) -> str | None:
    """The phase's contribution to the test's outcome; None for a passing setup/teardown."""
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    if is_not_applicable(report):
        return NOT_APPLICABLE
    if report.when == "call":
        return str(report.outcome)
    if report.failed:
        return "error"
    if report.skipped:
        return "skipped"
    return None
