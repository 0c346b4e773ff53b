"""A poll's last probe begins at or after its deadline (the model test's laggy-search flake).

A search index that shows an entry 4 ms after its append, polled for 55 ms: a first probe
that began at once, before the entry was visible, and then ran 70 ms on a busy machine
used to end the poll, and the store was told its search missed the entry. A probe that
began before the deadline proves nothing about it, so one more is made.
"""

from __future__ import annotations

import asyncio
import time

from nomnesia.suite.core.eventually import poll, poll_sync


def test_a_slow_first_probe_is_followed_by_one_that_begins_after_the_deadline() -> None:
    visible_at = time.monotonic() + 0.02
    probes: list[float] = []

    async def probe() -> bool:
        probes.append(time.monotonic())
        seen = time.monotonic() >= visible_at
        if len(probes) == 1:
            await asyncio.sleep(0.1)  # the probe itself is slow: it ends past the deadline
        return seen

    polled = asyncio.run(poll(probe, bool, timeout=0.05))
    assert polled.held and len(probes) == 2, (polled, probes)


def test_the_sync_poll_does_the_same_and_timeout_zero_is_one_probe() -> None:
    calls: list[float] = []

    def slow() -> bool:
        calls.append(time.monotonic())
        time.sleep(0.06 if len(calls) == 1 else 0)  # the probe's own duration
        return len(calls) > 1

    assert poll_sync(slow, bool, timeout=0.05).held and len(calls) == 2
    once: list[int] = []
    assert not poll_sync(lambda: once.append(1), bool, timeout=0).held and once == [1]
