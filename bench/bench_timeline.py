"""Benchmark: a failing history of about 5,000 ops as the run page draws it, in headless Chromium.

    python bench/bench_timeline.py [--ops 5000] [--seed 7] [--repeat 3] [--keep DIR]

Records a real history: the suite's workload (``suite/workload.py``) on the
seed's fragile store (``adapters/fragile.py``), concurrent clients until the
history holds ``--ops`` ops, judged by the checker; builds the JSON report's
evidence from it and the run page around it (``suite/report/page.py``). Then
prints the page's size and two times from Debian's ``chromium``:

- **layout**: from navigation start until a script at the end of the page has
  forced the layout of the whole document (``performance.now()`` in the page):
  parsing the HTML and SVG, styling and laying out every bar;
- **screenshot wall**: the wall time of ``chromium --headless --screenshot``
  on the page, minus the same on an empty page: an upper bound that adds paint
  and PNG encoding to the above.

The targets (issue 36): under 2 s, and a page under 5 MB. Not a test: it
prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from nomnesia.adapters.fragile import FragileMemoryStore
from nomnesia.suite.core.violations import GuaranteeViolation
from nomnesia.suite.core.workload import Outcome, Workload, run
from nomnesia.suite.report.evidence import evidence
from nomnesia.suite.report.labels import FORMAT
from nomnesia.suite.report.page import render_page
from nomnesia.suite.report.verdicts import guarantee_verdicts
from nomnesia.suite.reporting import group_causes, violation_causes

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--disable-dev-shm-usage", "--hide-scrollbars")
PROBE = ("<script>document.body.getBoundingClientRect();"
         "for (const s of document.querySelectorAll('svg')) s.getBBox();"
         "document.body.setAttribute('data-layout-ms', performance.now().toFixed(1));</script>")


async def record(ops: int, seed: int) -> Outcome:
    """One round of the suite's workload on the fragile store, about ``ops`` ops long."""
    async with FragileMemoryStore(seed=seed) as store:
        # Each call is two ops; the quiescent phase adds a few hundred more.
        return await run(store, Workload(seed=seed, ops=max(1, ops // 2 - 250)))


def report_of(outcome: Outcome) -> dict[str, Any]:
    """A run's JSON report with one failed concurrency test: what ``run --html`` renders."""
    anomalies = outcome.anomalies
    guarantee = outcome.guarantee
    if guarantee is None:
        raise SystemExit("the fragile store passed this round: try another --seed")
    exc = GuaranteeViolation(guarantee, outcome.detail(), anomalies=anomalies,
                             history=outcome.history)
    nodeid = "suite/test_concurrency.py::TestConcurrency::test_concurrent_mixed_workload"
    causes = violation_causes(exc)
    named = sorted({c["guarantee"] for c in causes}, key=lambda k: int(k[1:]))
    test = {"nodeid": nodeid, "outcome": "failed", "guarantees": named,
            "failed_guarantees": named, "message": str(exc).splitlines()[0],
            "causes": causes, "evidence": evidence(exc)}
    return {"format": FORMAT,
            "meta": {"label": "nomnesia.adapters.fragile:FragileMemoryStore",
                     "store": "nomnesia.adapters.fragile:FragileMemoryStore",
                     "python": sys.version.split()[0],
                     "seed": str(outcome.workload.seed), "exitstatus": 1},
            "summary": {"failed": 1}, "guarantees": guarantee_verdicts([test]),
            "causes": group_causes([(nodeid, causes)]), "tests": [test]}


def chromium(args: list[str], profile: Path) -> tuple[float, str]:
    """(wall seconds, stdout) of one headless Chromium run, its process group reaped."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise SystemExit("no chromium here (apt-get install -y chromium)")
    started = time.perf_counter()
    proc = subprocess.Popen([found, *FLAGS, f"--user-data-dir={profile}", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=300)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return time.perf_counter() - started, out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="keep the page and screenshot here")
    args = parser.parse_args(argv)

    outcome = asyncio.run(record(args.ops, args.seed))
    started = time.perf_counter()
    page = render_page(report_of(outcome))
    made = time.perf_counter() - started
    kept = report_of(outcome)["tests"][0]["evidence"]["history"]
    with tempfile.TemporaryDirectory(prefix="nomnesia-timeline-") as tmp:
        work = Path(args.keep or tmp)
        work.mkdir(parents=True, exist_ok=True)
        target, empty = work / "timeline.html", work / "empty.html"
        target.write_text(page.replace("</body>", PROBE + "</body>"), encoding="utf-8")
        empty.write_text("<!DOCTYPE html><title>empty</title><p>empty", encoding="utf-8")
        layouts, walls = [], []
        for i in range(args.repeat):
            _, dom = chromium(["--dump-dom", target.as_uri()], work / f"p{i}")
            found = re.search(r'data-layout-ms="([\d.]+)"', dom)
            layouts.append(float(found.group(1)) / 1000 if found else float("nan"))
            shot = ["--window-size=1400,900", f"--screenshot={work / 'timeline.png'}"]
            wall, _ = chromium([*shot, target.as_uri()], work / f"s{i}")
            base, _ = chromium([*shot[:1], f"--screenshot={work / 'empty.png'}",
                                empty.as_uri()], work / f"e{i}")
            walls.append(wall - base)
        size = target.stat().st_size
    print(f"history: {len(outcome.history):,} ops ({len(kept['ops']):,} kept, cut: "
          f"{kept['cut']}), {len(outcome.anomalies)} anomalies, seed {args.seed}")
    print(f"page: {size / 1e6:.2f} MB (target < 5 MB), made in {made:.2f} s by Python")
    print(f"chromium layout: median {statistics.median(layouts):.2f} s of {args.repeat} "
          f"({', '.join(f'{t:.2f}' for t in layouts)}) (target < 2 s)")
    print(f"chromium screenshot wall minus an empty page's: median "
          f"{statistics.median(walls):.2f} s ({', '.join(f'{t:.2f}' for t in walls)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
