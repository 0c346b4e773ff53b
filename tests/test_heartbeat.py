"""A store call that blocks the event loop is named, under G12 (issue 48).

An ``async`` method that calls a synchronous client stops the loop: nothing else runs and
no timeout fires, so the suite used to say only that "no store operation was in flight".
The heartbeat (``suite/core/heartbeat.py``) watches the loop from another thread.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from nomnesia.adapters.memory import InMemoryStore
from nomnesia.suite.core.heartbeat import Heartbeat
from nomnesia.suite.core.history import History

pytest_plugins = ("pytester",)
ROOT = Path(__file__).resolve().parent.parent


class SleepsInAppend(InMemoryStore):
    """Correct in every answer, but ``append_message`` sleeps synchronously first."""

    async def append_message(self, user_id: str, role: str, content: str, *,
                             message_id: str | None = None) -> Any:
        time.sleep(1.2)  # noqa: ASYNC251 (the defect under test: a synchronous wait)
        return await super().append_message(user_id, role, content, message_id=message_id)


def test_a_store_call_that_blocks_the_loop_is_named_under_g12(
        pytester: pytest.Pytester, suite_args: tuple[str, ...]) -> None:
    pytester.syspathinsert(str(ROOT))
    reprec = pytester.inline_run(*suite_args, "--store", f"{__name__}:SleepsInAppend",
                                 "-k", "test_append_returns_the_entry_and_history_shows_it",
                                 "--nomnesia-loop-block", "0.5")
    failed = [r.longreprtext for r in reprec.getreports("pytest_runtest_logreport") if r.failed]
    assert len(failed) == 1, failed
    assert failed[0].startswith("G12 errors: append_message("), failed[0][:300]
    seconds = float(failed[0].split("blocked the event loop for ")[1].split(" s")[0])
    assert seconds >= 1.2 and "a synchronous call inside an async method" in failed[0], \
        failed[0][:400]


def test_the_same_store_without_the_sleep_passes(pytester: pytest.Pytester,
                                                 suite_args: tuple[str, ...]) -> None:
    reprec = pytester.inline_run(*suite_args, "--store", "nomnesia.adapters.memory:InMemoryStore",
                                 "-k", "test_append_returns_the_entry_and_history_shows_it",
                                 "--nomnesia-loop-block", "0.5")
    passed, _, failed = reprec.listoutcomes()
    assert (len(passed), failed) == (1, [])


def test_a_block_with_no_store_call_in_flight_is_not_the_stores() -> None:
    """The suite's own work on the loop (building inputs, checking) is not a finding."""
    async def body() -> None:
        time.sleep(0.4)  # noqa: ASYNC251 (the loop blocked on purpose)

    loop = asyncio.new_event_loop()
    try:
        with Heartbeat(loop, [History()], bound=0.1, interval=0.02) as beat:
            loop.run_until_complete(body())
    finally:
        loop.close()
    assert beat.blocks == []


def test_a_block_inside_a_recorded_call_is_measured() -> None:
    log = History()

    async def body() -> None:
        op = log.invoke(0, "append", "ann", ("user", "x", None))
        time.sleep(0.4)  # noqa: ASYNC251 (the loop blocked on purpose)
        log.complete(op, "ok")

    loop = asyncio.new_event_loop()
    try:
        with Heartbeat(loop, [log], bound=0.1, interval=0.02) as beat:
            loop.run_until_complete(body())
    finally:
        loop.close()
    assert len(beat.blocks) == 1 and beat.blocks[0].seconds >= 0.3, beat.blocks
    assert beat.blocks[0].describe().startswith("append_message('ann', 'user', 'x') blocked")


class SleepsThenLoses(SleepsInAppend):
    """Blocks the loop in ``append_message`` and then loses the append: two failures."""

    async def get_history(self, user_id: str, limit: int = 10) -> Any:
        return []


def test_a_block_during_another_failure_is_its_own_g12_line(
        pytester: pytest.Pytester, suite_args: tuple[str, ...]) -> None:
    """A blocked loop named beside another failure (G1 here) is a G12 failure too: its own
    line starts with the guarantee, so the verdicts count it (an audit read G12 "pass")."""
    pytester.syspathinsert(str(ROOT))
    reprec = pytester.inline_run(*suite_args, "--store", f"{__name__}:SleepsThenLoses",
                                 "-k", "test_append_returns_the_entry_and_history_shows_it",
                                 "--nomnesia-loop-block", "0.5")
    failed = [r.longreprtext for r in reprec.getreports("pytest_runtest_logreport") if r.failed]
    assert len(failed) == 1, failed
    from nomnesia.suite.report.labels import failed_guarantees

    assert "G12" in failed_guarantees(failed[0]) and len(failed_guarantees(failed[0])) > 1, \
        failed[0][:600]
    assert "\nG12 errors: meanwhile, append_message(" in failed[0], failed[0][:600]
