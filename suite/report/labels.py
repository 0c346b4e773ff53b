"""The vocabulary every report shares: guarantee keys, outcomes, and reading labels from text.

It imports nothing else of the report, so that every other part (the pytest
hooks, the JSON writer, the matrix, the pages) can import it without a circle.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..contract import Guarantee

__all__ = ["FORMAT", "GUARANTEE_KEYS", "LEGEND", "NA_TEXT", "NOT_APPLICABLE", "NOT_EXERCISED",
           "RAN_OUTCOMES", "TITLES", "failed_guarantees", "guarantee_key", "guarantee_of",
           "label_order", "ordered", "plural"]

FORMAT = "nomnesia-suite-report/1"

_NUMBERED = sorted((g for g in Guarantee if g.number), key=lambda g: g.number)
GUARANTEE_KEYS: tuple[str, ...] = (*(f"G{g.number}" for g in _NUMBERED), "Inputs")
"""Column order of every matrix: G1..G12, then the Inputs section."""

TITLES: dict[str, str] = {**{f"G{g.number}": g.title for g in _NUMBERED}, "Inputs": "validation"}
"""``"G7"`` -> ``"atomic compaction"``: the short name under a column's key."""

LEGEND: dict[str, str] = {(f"G{g.number}" if g.number else "Inputs"): str(g) for g in Guarantee}
"""``"G7"`` -> ``"G7 atomic compaction"``: the table's legend names every guarantee it lists."""

RAN_OUTCOMES: frozenset[str] = frozenset({"passed", "failed", "error", "xpassed"})
"""Outcomes of tests that ran: only these exercise a guarantee."""
NOT_APPLICABLE = "not applicable"
"""The outcome of a test the store's profile cannot be judged by (SPEC.md, "Profiles")."""
NOT_EXERCISED = "—"
NA_TEXT = "n/a"
"""A cell whose guarantee the store's profile is not judged on."""

_BY_NUMBER = {g.number: g.title for g in _NUMBERED}
# A failure message starts with the guarantee; in a traceback it follows "E   "
# and possibly the exception type ("AssertionError: G7 atomic compaction: ...").
_MESSAGE = re.compile(
    r"^(?:E\s+)?(?:\|\s*)?(?:(?:[a-z_]\w*\.)*[A-Z]\w*: )?(?:G(\d{1,2}) ([a-z ]+)|(Inputs)):", re.M)
_LOOSE_GUARANTEE = re.compile(r"\b(G\d{1,2})(?: [a-z][a-z -]*[a-z])?|\bInputs\b")
_RAISED = re.compile(r"(?:\w+\.)*([A-Z]\w*(?:Error|Exception|Unavailable|Timeout|Lost|Closed))\b")


def guarantee_key(value: object) -> str | None:
    """``"G7"`` or ``"Inputs"`` for a Guarantee, number or label; None if it names none."""
    if isinstance(value, Guarantee):
        return f"G{value.number}" if value.number else "Inputs"
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return f"G{value}" if value in _BY_NUMBER else ("Inputs" if value == 0 else None)
    if isinstance(value, str):
        text = value.strip()
        if text.lower().startswith("inputs"):
            return "Inputs"
        match = re.match(r"G?(\d{1,2})\b", text, re.I)
        if match and int(match.group(1)) in _BY_NUMBER:
            return f"G{int(match.group(1))}"
        for g in _NUMBERED:
            if text.lower() == g.title or text.upper() == g.name:
                return f"G{g.number}"
    return None


def ordered(keys: Iterable[str]) -> list[str]:
    """The guarantee keys among ``keys``, in column order (others dropped)."""
    present = set(keys)
    return [k for k in GUARANTEE_KEYS if k in present]


def failed_guarantees(text: str) -> list[str]:
    """The guarantees a failure's text names, in column order.

    Only a line that *starts* a message counts, and the title must be the
    guarantee's own, so a printed history or a source line cannot fake one.
    """
    found: set[str] = set()
    for match in _MESSAGE.finditer(text):
        if match.group(3):
            found.add("Inputs")
            continue
        number = int(match.group(1))
        if _BY_NUMBER.get(number) == match.group(2).strip():
            found.add(f"G{number}")
    return ordered(found)


def guarantee_of(message: str, testname: str = "") -> str:
    """The one label of a failure the report could not attribute to a guarantee.

    Looser than ``failed_guarantees``: any ``G7`` in the message, then a ``test_g7``
    name, then the exception class it raised (a setup error, a missing engine ...).
    """
    for text in (message, testname):
        if m := _LOOSE_GUARANTEE.search(text):
            return m.group(1) or "Inputs"
        if m := re.search(r"test_g(\d{1,2})(?:_|\b)", text):
            return f"G{int(m.group(1))}"
    m = _RAISED.match(message)
    return m.group(1) if m else "unlabelled"


def label_order(label: str) -> tuple[int, str]:
    """G1..G12 by number, then Inputs and other labels, ``unlabelled`` last."""
    m = re.fullmatch(r"G(\d+)", label)
    return (int(m.group(1)), "") if m else (100 if label == "unlabelled" else 99, label)


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")
