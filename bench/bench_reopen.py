"""How soon a new store answers on a Milvus server that was just SIGKILLed and restarted.

Run:  python bench/bench_reopen.py [--rounds 4] [--timeout 1.0]

This is the nemesis' "crash" fault after a "kill" of the server, taken apart: one
store writes to a namespace and closes; then, each round, the server is SIGKILLed
and restarted (``EngineControl``, as the nemesis does), and a new store opens the
same namespace with the nemesis' 1 s timeout and appends once. Failed opens are
retried as the nemesis worker retries them (0.02 s, doubling, at most 0.5 s).

It prints, per round, when the restarted server answered its health check, when
the new store's first append returned (both from the kill), and how many opens
that took. Before ``MilvusIndex`` stopped waiting on the load progress of a
collection the server was reloading, every round took 2 opens and 1.4-2.5 s more
than the health check.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import time

from nomnesia.adapters import open_store
from nomnesia.adapters.engines import EmbeddedProvider
from nomnesia.adapters.engines.control import EngineControl


async def _reopen(provider: EmbeddedProvider, namespace: str, timeout: float,
                  since: float) -> tuple[float, int]:
    pause, opens = 0.02, 0
    while time.monotonic() < since + 60:
        opens += 1
        try:
            async with open_store("milvus-server", provider=provider, namespace=namespace,
                                  timeout=timeout) as store:
                await store.append_message("u1", "user", "after the restart")
                return time.monotonic() - since, opens
        except Exception:  # the server still reloading: the nemesis worker retries too
            pass
        await asyncio.sleep(pause)  # the worker's bounded retry, not a wait for a store
        pause = min(pause * 2, 0.5)
    raise TimeoutError(f"no store opened within 60 s ({opens} opens)")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=1.0, help="the stores' timeout")
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)  # pymilvus logs every "collection not loaded"
    lags: list[float] = []
    with EmbeddedProvider() as provider:
        async with open_store("milvus-server", provider=provider, namespace="reopen",
                              timeout=5.0) as store:
            for i in range(30):
                await store.append_message(f"u{i % 3}", "user", f"before {i}")
        control = EngineControl(provider)
        try:
            for n in range(args.rounds):
                await asyncio.to_thread(control.kill, "milvus-server")
                killed = time.monotonic()
                await asyncio.to_thread(control.start, "milvus-server")
                healthy = time.monotonic() - killed
                answered, opens = await _reopen(provider, "reopen", args.timeout, killed)
                lags.append(answered - healthy)
                print(f"round {n}: server healthy {healthy:.1f} s after the kill, new store "
                      f"answered {answered:.1f} s ({opens} open{'s' * (opens > 1)})", flush=True)
        finally:
            control.close()
    print(f"on {os.cpu_count()} CPUs: the new store answered {statistics.median(lags):.2f} s "
          f"(median; max {max(lags):.2f} s) after the server's health check")


if __name__ == "__main__":
    asyncio.run(main())
