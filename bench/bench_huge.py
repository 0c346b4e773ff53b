"""Huge k and limit on every stack: correct answers, and the engines' RSS while they run.

    python bench/bench_huge.py [--stacks a,b] [--entries 30]

SPEC puts no upper bound on ``k`` or ``limit``; a store clamps them (issue 14).
For every stack this appends ``--entries`` messages for one user, then calls
``search`` and ``get_history`` with k = limit = 2**31, 2**63-1, 2**64 and
10**30, checks each answer (every live entry, in order; search finds the exact
content), and has a bystander user append, read and search afterwards. RSS of
every engine process tree is sampled every 50 ms throughout; the table prints
the peak per engine, so "no single call makes an engine allocate in
proportion to k" is a measured number, not a claim.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from report import engine_rss  # noqa: E402

from nomnesia.adapters import ADAPTERS, open_store  # noqa: E402
from nomnesia.adapters.engines import get_provider  # noqa: E402

HUGE = (2**31, 2**63 - 1, 2**64, 10**30)


class Sampler:
    """Peak RSS per engine name, sampled on a thread while the calls run."""

    def __init__(self, provider: Any, interval: float = 0.05) -> None:
        self.provider = provider
        self.interval = interval
        self.peak: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for row in engine_rss(self.provider):
                if "other child" in row["engine"]:
                    continue
                name = row["engine"]
                self.peak[name] = max(self.peak.get(name, 0.0), row["rss_mib"])
            self._stop.wait(self.interval)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


async def one_stack(name: str, provider: Any, entries: int) -> dict[str, Any]:
    async with open_store(name, provider=provider) as store:
        contents = [f"message {i} of the huge-k check" for i in range(entries)]
        for content in contents:
            await store.append_message("ann", "user", content)
        problems: list[str] = []
        started = time.monotonic()
        for value in HUGE:
            history = await store.get_history("ann", limit=value)
            if [e.content for e in history] != contents:
                problems.append(f"get_history(limit={value}) returned {len(history)} entries")
            hits = await store.search("ann", contents[7], k=value)
            if not hits or hits[0].content != contents[7] or len(hits) > entries:
                problems.append(f"search(k={value}) returned {len(hits)} hits")
            await store.append_message("bob", "user", f"after {value}")
            if not await store.get_history("bob", limit=1):
                problems.append(f"the bystander was not served after k={value}")
        return {"seconds": round(time.monotonic() - started, 2), "problems": problems}


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stacks", default=",".join(ADAPTERS))
    parser.add_argument("--entries", type=int, default=30)
    ns = parser.parse_args(argv)
    failed = False
    print(f"{'stack':<14} {'ok':<4} {'s':>6}  peak RSS MiB per engine (every 50 ms)")
    for name in ns.stacks.split(","):
        provider = get_provider("embedded")
        try:
            with Sampler(provider) as sampler:
                result = await one_stack(name, provider, ns.entries)
        except Exception as exc:  # one broken stack must not hide the rest
            print(f"{name:<14} FAIL {type(exc).__name__}: {exc}")
            failed = True
            continue
        finally:
            await asyncio.to_thread(provider.close)
        ok = not result["problems"]
        failed = failed or not ok
        peaks = ", ".join(f"{engine} {mib:.0f}" for engine, mib in sorted(sampler.peak.items()))
        print(f"{name:<14} {'yes' if ok else 'NO':<4} {result['seconds']:>6.2f}  {peaks}")
        for problem in result["problems"]:
            print(f"    {problem}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
