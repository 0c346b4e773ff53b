"""The suite's report, by the name callers have always used: a facade over ``report/``.

``plugin.py`` and ``cli.py`` import it, ``-p nomnesia.suite.reporting`` loads it
as a pytest plugin (the two hooks below), and the noxfile runs
``python -m nomnesia.suite.reporting matrix DIR`` and ``... leaf REPORT``. The
code lives in ``nomnesia.suite.report``, one concern a module (its
``__init__`` says which); this file only hands the names on.
"""

from __future__ import annotations

import sys

from .report.annotate import (
    ANOMALIES,
    CAUSES,
    EVIDENCE,
    MARK,
    PROPERTY,
    annotate,
    declared,
    report_causes,
)
from .report.causes import cause_key, group_causes, normalise, violation_causes
from .report.json_report import (
    ADAPTER_INFO,
    INTERFACE_INFO,
    PROFILE_INFO,
    JsonReporter,
    add_options,
    build_report,
    configure,
    cpu_seconds,
    pytest_addoption,
    pytest_configure,
    run_metadata,
)
from .report.labels import (
    FORMAT,
    GUARANTEE_KEYS,
    LEGEND,
    NA_TEXT,
    NOT_APPLICABLE,
    NOT_EXERCISED,
    RAN_OUTCOMES,
    failed_guarantees,
    guarantee_key,
    guarantee_of,
    label_order,
)
from .report.matrix import (
    LeafCell,
    job_summary,
    leaf_cell,
    main,
    matrix_cells,
    minor,
    read_reports,
    record_exit,
    render_table,
)
from .report.outcome import failure_text, is_not_applicable, skip_reason
from .report.text import cause_lines, not_applicable_lines
from .report.verdicts import guarantee_verdicts, verdict_text

__all__ = [
    "ADAPTER_INFO", "ANOMALIES", "CAUSES", "EVIDENCE", "FORMAT", "GUARANTEE_KEYS",
    "INTERFACE_INFO", "LEGEND", "MARK", "NA_TEXT", "NOT_APPLICABLE", "NOT_EXERCISED",
    "PROFILE_INFO", "PROPERTY", "RAN_OUTCOMES", "JsonReporter", "LeafCell", "add_options",
    "annotate", "build_report", "cause_key", "cause_lines", "configure", "cpu_seconds",
    "declared", "failed_guarantees", "failure_text", "group_causes", "guarantee_key",
    "guarantee_of", "guarantee_verdicts", "is_not_applicable", "job_summary", "label_order",
    "leaf_cell", "main", "matrix_cells", "minor", "normalise", "not_applicable_lines",
    "pytest_addoption", "pytest_configure", "read_reports", "record_exit", "render_table",
    "report_causes", "run_metadata", "skip_reason", "verdict_text", "violation_causes",
]

if __name__ == "__main__":
    sys.exit(main())
