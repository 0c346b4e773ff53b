"""The nemesis's verdict: the workers' histories merged, checked, and accounted for.

Once the final worker has read everything back (``final.json``), the merged history goes
to the checker that fits the store (by entry id, or by content for the smaller profiles),
and every acknowledged append is accounted for as live, lost or duplicated.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.checker import check
from ..core.checker_keyed import check_keyed
from ..core.history_format import write as write_history
from .report import NemesisReport, account, attribute, latency_series, merge, relabel_keyed
from .worker import read_ops

__all__ = ["judge"]


def judge(report: NemesisReport, histories: Sequence[tuple[str, int | None]], *,
          load_end_ns: int, t0: float, result_path: Path, keep: Path | None = None,
          history_file: Path | None = None) -> None:
    """Fill ``report`` from the workers' ``histories`` (path, when the worker was killed)
    and the final worker's result; ``keep``: where to write the merged history too;
    ``history_file``: where to write it in the history file format, with the bounds the
    checker judged it by."""
    history = merge((read_ops(path), killed_ns) for path, killed_ns in histories)
    report.workers = len(histories)
    report.history_ops = len(history)
    outcomes: dict[str, int] = {}
    calls: dict[str, int] = {}
    for op in history:
        if op.type != "invoke":
            outcomes[op.type] = outcomes.get(op.type, 0) + 1
            calls[f"{op.f}:{op.type}"] = calls.get(f"{op.f}:{op.type}", 0) + 1
    report.operations = {k: outcomes.get(k, 0) for k in ("ok", "fail", "info")}
    report.operations_by_call = dict(sorted(calls.items()))
    report.baseline = attribute(history, report.faults, load_end_ns)
    report.latency = latency_series(history, round(t0 * 1e9))
    if not result_path.exists():
        report.errors.append("no final state: the final worker wrote no result")
        return
    result = json.loads(result_path.read_text(encoding="utf-8"))
    started = time.monotonic()
    keyed = bool(result.get("keyed", False))
    if keyed:
        history, result["live"] = relabel_keyed(history, result["live"])
        anomalies = check_keyed(history, recover=bool(result["recover"]),
                                compact=bool(result["compact"]),
                                search_staleness=float(result["search_staleness"]))
    else:
        anomalies = check(history, keep_last=int(result["keep_last"]),
                          search_staleness=float(result["search_staleness"]))
    report.check_seconds = time.monotonic() - started
    report.anomalies = [str(a) for a in anomalies] + list(result["g11"])
    report.acknowledged_appends, report.lost, report.duplicates = account(
        history, result["live"], keyed=keyed)
    report.seconds = time.monotonic() - t0
    if keep is not None:
        keep.write_text(history.dumps(), encoding="utf-8")
    if history_file is not None:
        bounds: dict[str, Any] = (
            {"profile": "keyed", "compact": bool(result["compact"]),
             "recover": bool(result["recover"])} if keyed
            else {"keep_last": int(result["keep_last"])})
        write_history(history_file, history.ops, **bounds,
                      search_staleness=float(result["search_staleness"]),
                      meta={"nemesis": report.adapter or "store", "seed": report.seed})
