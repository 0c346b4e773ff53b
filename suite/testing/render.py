"""A verdict as a page, and a recorded history as a history file.

Kept apart from ``recording.py`` so that recording a store imports no report code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nomnesia.suite.core import history_format
from nomnesia.suite.core.history import History
from nomnesia.suite.core.verdict import Verdict
from nomnesia.suite.report.history_page import render_history_page

from .recording import Recorded

__all__ = ["verdict_html", "write_history"]


def verdict_html(verdict: Verdict, *, title: str = "nomnesia check") -> str:
    """The verdict as a static HTML page with the history's timeline (what ``nomnesia check
    --html`` writes)."""
    data = {**verdict.to_json(), "headline": verdict.headline()}
    return render_history_page(data, verdict.history.to_json(), title=title)


def write_history(history: Recorded | History, path: str | Path, **header: Any) -> Path:
    """Write a recorded store's history (or any ``History``) as a history file; a recorded
    store's ``keep_last``, ``search_staleness`` and profile go in the header."""
    if isinstance(history, Recorded):
        return history.write(path, **header)
    return history_format.write(path, history.ops, **header)
