"""One verdict on one history as a page: the verdict, each anomaly, the timeline.

What ``nomnesia check FILE --html`` and ``nomnesia.testing.verdict_html`` write: the same
timeline the run pages draw for a failing test (``timeline.py``: a lane per process, the
anomalies' calls outlined and linked to their text, fault windows shaded), for a history
that came from a team's own test or another tool rather than from the suite's report.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from .timeline import CSS as TIMELINE_CSS
from .timeline import anomaly_lines, build, render

__all__ = ["render_history_page"]

_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px; color: #202124; max-width: 1100px; }
.verdict.ok { color: #188038; } .verdict.fail { color: #a50e0e; }
h2 { font-size: 16px; margin-top: 20px; }
"""


def render_history_page(verdict: Mapping[str, Any], ops: Sequence[Mapping[str, Any]], *,
                        title: str = "nomnesia check") -> str:
    """The page of ``verdict`` (``Verdict.to_json()``) on the history ``ops`` (each op's
    ``Op.to_json()``)."""
    esc = html.escape
    anomalies = list(verdict.get("anomalies") or ())
    timeline = build({"ops": list(ops)}, anomalies)
    state = "ok" if verdict.get("ok") else "fail"
    headline = str(verdict.get("headline") or "")
    listed = anomaly_lines(anomalies, timeline, "h")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{esc(title)}: {state.upper()}</title>
<style>{_CSS}{TIMELINE_CSS}</style>
</head>
<body>
<h1>{esc(title)}</h1>
<p id="verdict" class="verdict {state}"><strong>{state.upper()}</strong> {esc(headline)}</p>
{f'<h2 id="anomalies">Anomalies</h2>{listed}' if listed else ""}
<h2 id="timeline">The history</h2>
{render(timeline, "h")}
</body>
</html>
"""
