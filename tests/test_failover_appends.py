"""Appends answered through a Sentinel failover, each applied once (issue 34.4).

An append whose archive commit succeeded while the log's primary was failing over
used to raise, though the entry was durable. ``TieredMemoryStore`` now sends the
log's put again, within its timeout, until the log's client reaches the promoted
replica through the Sentinels. Checked on the embedded ``redis-sentinel`` group:
appends made while the primary is dead answer, nothing is lost and nothing shows
twice, and the checker finds no anomaly in the recorded history.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from typing import Any

import pytest
from test_sentinel import sentinel_store

from nomnesia.adapters.engines import EmbeddedProvider
from nomnesia.adapters.engines.resp_ha import SentinelGroup
from nomnesia.adapters.redis_log import RedisLog
from nomnesia.adapters.resp import resp_client
from nomnesia.adapters.tiers import TierDown
from nomnesia.suite.contract import Entry

pytestmark = [pytest.mark.xdist_group("redis-sentinel"), pytest.mark.slow]

TIMEOUT = 10.0
"""The store's timeout: a Sentinel failover of the embedded group takes about 3 to 4 s
(``resp_ha.DOWN_AFTER_MS`` plus the election), which the store must wait out within it."""


@pytest.fixture
def groups(engines: EmbeddedProvider) -> EmbeddedProvider:
    """This worker's shared engines (conftest's ``engines``), under this module's name."""
    return engines


class CountingLog(RedisLog):
    """RedisLog that counts the puts that met no answer: proof the test met the failover."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.unanswered = 0

    async def put(self, entries: Sequence[Entry]) -> None:
        try:
            await super().put(entries)
        except TierDown:
            self.unanswered += 1
            raise


async def _until_down(url: str, within: float = 10.0) -> None:
    """Until ``url`` stops answering PING (the primary was killed); bounded."""
    from nomnesia.suite.core.loop import wait_until

    async def answers() -> bool:
        client = resp_client(url, timeout=0.2)
        try:
            return bool(await client.redis.ping())
        except Exception:
            return False
        finally:
            with contextlib.suppress(Exception):
                await client.aclose()

    _, took = await wait_until(answers, lambda up: not up, within=within)
    assert took < within, f"{url} still answers {within:g} s after the kill"


async def test_appends_during_a_sentinel_failover_are_answered_once(
        groups: EmbeddedProvider) -> None:
    from nomnesia.suite.core.checker import check

    await asyncio.to_thread(groups.url, "redis-sentinel")
    group = groups._parts["redis-sentinel"]
    assert isinstance(group, SentinelGroup)
    async with sentinel_store(groups, CountingLog, timeout=TIMEOUT) as store:
        acked = [await store.append_message("ann", "user", "before")]
        old = group.primary_url
        failover = asyncio.ensure_future(asyncio.to_thread(groups.failover, "redis-sentinel"))
        try:
            await _until_down(old)
            took = []
            for i in range(3):  # the first meets the dead primary; all must answer
                started = time.monotonic()
                acked.append(await store.append_message("ann", "user", f"during {i}"))
                took.append(time.monotonic() - started)
        finally:
            figures = await failover
        assert group.primary_url != old
        log = store.inner.log
        assert isinstance(log, CountingLog) and log.unanswered >= 1, (
            "no put met the failover: the test did not exercise it")
        assert max(took) < TIMEOUT + 1, (took, figures)

        await store.recover()
        history = await store.get_history("ann", 50)
        assert [e.id for e in history] == [e.id for e in acked]  # each once, in order
        assert [e.seq for e in history] == [1, 2, 3, 4]
        assert await store.consistent_state("ann")
        assert await log.ids("ann") == {e.id for e in acked}  # the promoted primary's log
        anomalies = check(store.log, keep_last=store.inner.keep_last,
                          search_staleness=store.inner.search_staleness)
        assert not anomalies, "\n".join(map(str, anomalies))
