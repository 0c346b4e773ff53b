"""The parts of a benchmark report that report.py and bench_load.py both write.

An error shortened to a table cell, a Markdown table, and the RSS of every
engine process. They live here, apart from both, so that neither script
imports the other's module to get them (report.py runs bench_load's load
benchmark, and bench_load used to import these from report.py: a circle).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["engine_rss", "short", "table"]


def short(exc: Exception) -> str:
    """The part of an error a table cell can hold: its last clause before any advice."""
    clauses = [c.strip() for c in str(exc).split(":") if c.strip()]
    return f"{type(exc).__name__}: {clauses[min(1, len(clauses) - 1)] if clauses else ''}"[:100]


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


# -- memory -------------------------------------------------------------------

def _stat(pid: int) -> tuple[int, int, str] | None:
    """(ppid, pgrp, comm) of a live process, None if it is gone or unreadable."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    comm = text[text.index("(") + 1: text.rindex(")")]
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[1]), int(fields[2]), comm


def _rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def engine_rss(provider: Any) -> list[dict[str, Any]]:
    """RSS per engine: its process and all its descendants (PostgreSQL's backends each take a
    session of their own, so a process group would miss them; shared buffers count once per
    process, as RSS does). Also the other children of this process (the watchdog) and this
    process itself, which holds the in-process indexes (qdrant local, qdrant-edge)."""
    leaders = set(provider.process_groups()) if hasattr(provider, "process_groups") else set()
    procs = {pid: st for pid in (int(p) for p in os.listdir("/proc") if p.isdigit())
             if (st := _stat(pid)) is not None}
    kids: dict[int, list[int]] = {}
    for pid, st in procs.items():
        kids.setdefault(st[0], []).append(pid)

    def tree(pid: int) -> list[int]:
        return [pid] + [d for kid in kids.get(pid, []) for d in tree(kid)]

    rows = []
    for leader in sorted(leaders):
        members = tree(leader) if leader in procs else []
        rows.append({"engine": procs[leader][2] if leader in procs else f"pid {leader}",
                     "processes": len(members),
                     "rss_mib": round(sum(_rss_mib(pid) for pid in members), 1)})
    me = os.getpid()
    for pid in kids.get(me, []):
        if pid not in leaders:
            members = tree(pid)
            rows.append({"engine": f"{procs[pid][2]} (other child of the bench)",
                         "processes": len(members),
                         "rss_mib": round(sum(_rss_mib(p) for p in members), 1)})
    rows.append({"engine": "bench process (in-process indexes)", "processes": 1,
                 "rss_mib": round(_rss_mib(me), 1)})
    return rows
