"""The adapter × guarantee matrix as Markdown and HTML: a facade over ``report.matrix_html``.

``nomnesia report`` and the tests import these names from here; the code lives
in ``nomnesia.suite.report.matrix_html``.
"""

from __future__ import annotations

from .report.matrix_html import (
    COLORS,
    Cell,
    Row,
    build_matrix,
    load_reports,
    render_html,
    render_markdown,
)

__all__ = ["COLORS", "Cell", "Row", "build_matrix", "load_reports", "render_html",
           "render_markdown"]
