"""The terminal's words for a run: the summary by cause and the not-applicable account.

A person reads these at the end of ``nomnesia run``; the JSON report holds the
same facts whole, so what is cut here for width is never lost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from .causes import CAUSE_WIDTH
from .labels import plural
from .outcome import skip_reason

__all__ = ["cause_lines", "not_applicable_lines"]


def cause_lines(groups: list[dict[str, Any]], failed: int, *, examples: int = 2,
                most: int = 20) -> list[str]:
    """The summary by cause: one line when one cause explains every failure.

    At most ``most`` causes, those behind the most tests first; the JSON report has all.
    """
    if not groups:
        return []
    head = f"{plural(failed, 'failed test')}, {plural(len(groups), 'cause')}"
    if len(groups) == 1 and not groups[0].get("kind"):
        return [f"{head}: {_cause_text(groups[0])}"]
    lines = [f"{head}:"]
    width = len(plural(max(len(g["tests"]) for g in groups), "test"))
    for group in groups[:most]:
        count = plural(len(group["tests"]), "test").rjust(width)
        lines.append(f"  {count}  {_cause_text(group)}")
        shown = [t.rsplit("::", 1)[-1] for t in group["tests"][:examples]]
        more = len(group["tests"]) - len(shown)
        lines.append(f"  {'':{width}}  e.g. {', '.join(shown)}"
                     + (f" and {more} more" if more > 0 else ""))
        if group.get("kind"):  # a checker's kind says little alone: show one of its messages
            lines.append(f"  {'':{width}}  {str(group['example'])[:CAUSE_WIDTH]}")
    if len(groups) > most:
        lines.append(f"  ... and {plural(len(groups) - most, 'more cause')} (every one is in "
                     "the --nomnesia-json report)")
    return lines


def _cause_text(group: Mapping[str, Any]) -> str:
    """A cause as a person reads it: one of its own messages, real values and all (the
    blanked key only grouped it), the inputs that showed it, and where else it was seen."""
    if group.get("kind") or not group.get("example"):
        text = str(group["cause"])
    elif group.get("summary"):  # many invalid inputs, one defect: counted, then listed
        text = f"{group['guarantee']}: " \
               f"{plural(len(group.get('inputs') or ()), 'invalid input')} {group['summary']}"
    else:
        op = group.get("op", "-")
        text = f"{group['guarantee']}{'' if op == '-' else ' ' + op}: {group['example']}"
        if len(text) > CAUSE_WIDTH:
            text = text[:CAUSE_WIDTH - 1] + "…"
    inputs = [i if len(i) <= 40 else i[:39] + "…" for i in group.get("inputs") or ()]
    if inputs:
        listed = ", ".join(inputs[:3]) + (f" (+{len(inputs) - 3} more)" if len(inputs) > 3 else "")
        text += f" [{listed}]"
    for guarantee, tests in sorted((group.get("also") or {}).items()):
        text += f"; also seen inside {guarantee} failures ({plural(len(tests), 'test')})"
    return text


def not_applicable_lines(reports: Sequence[pytest.TestReport], *, examples: int = 2
                         ) -> list[str]:
    """The terminal's account of not-applicable tests, grouped by what they need."""
    if not reports:
        return []
    groups: dict[str, list[str]] = {}
    for report in reports:
        reason = skip_reason(report)
        needs = reason.partition(": needs ")[2].partition(" (")[0] or reason
        groups.setdefault(needs, []).append(report.nodeid.rsplit("::", 1)[-1])
    lines = [f"{plural(len(reports), 'test')} not applicable (never counted as a pass), by "
             "what they need that the profile lacks:"]
    width = min(max(len(needs) for needs in groups), 30)
    for needs, names in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        shown = ", ".join(names[:examples]) + (f" and {len(names) - examples} more"
                                               if len(names) > examples else "")
        lines.append(f"  {len(names):>3}  {needs:<{width}}  e.g. {shown}")
    return lines
