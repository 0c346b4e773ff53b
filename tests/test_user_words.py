"""Messages in the user's words (issue 48): the thread a cancel could not stop, and what a
present method turned on.

A store that runs a sync client under ``asyncio.to_thread`` cannot be cancelled: the
await ends, the call runs on in its thread. A G10 failure after such a cut must say so,
or its author looks for a cancel-unsafe await that is not there. A store that gained
``search`` is held to refusing invalid input (the memory profile); the profile section
must say that a method did it.
"""

from __future__ import annotations

import asyncio
import re
import threading

import pytest

from nomnesia.adapters.memory import InMemoryStore
from nomnesia.suite.contract import Entry
from nomnesia.suite.core.loop import wait_until
from nomnesia.suite.core.profiles import HISTORY, MEMORY, Resolved
from nomnesia.suite.core.threads import busy_workers

pytest_plugins = ("pytester",)

SUITE = ("--pyargs", "nomnesia.suite", "-p", "no:cacheprovider", "-p", "no:randomly")


@pytest.fixture(autouse=True)
def _quiet_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


class LateThreadedAppends(InMemoryStore):
    """Appends through a worker thread; a cancelled append still lands, marked, later.

    The mark makes the late write a G10 failure the suite can see (a write that lands
    after its caller was told it was cancelled, with content it never sent); the thread
    is what the message must name.
    """

    async def append_message(self, user_id: str, role: str, content: str, *,
                             message_id: str | None = None) -> Entry:
        loop = asyncio.get_running_loop()
        cancelled = threading.Event()

        def write() -> Entry:
            # A slow sync client: the thread still runs when the cancel arrives.
            cancelled.wait(0.05)
            text = f"{content} (late)" if cancelled.is_set() else content
            return asyncio.run_coroutine_threadsafe(InMemoryStore.append_message(
                self, user_id, role, text, message_id=message_id), loop).result()

        try:
            return await asyncio.to_thread(write)
        except asyncio.CancelledError:
            cancelled.set()
            raise


def test_a_cancelled_call_left_running_in_its_thread_is_named(
        pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*SUITE, "--store", f"{__name__}:LateThreadedAppends", "-k",
                                "test_cancel_at_every_step_then_recover and append")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = result.stdout.str()
    # The G10 sentence itself names the thread (the operations list notes it too).
    assert re.search(r"G10 interruption: after append was cancelled after \d+ event-loop "
                     r"steps \(cancelled\), though the call kept running in worker thread "
                     r"asyncio_\d", text), text[-3000:]


def test_busy_workers_sees_a_running_work_item_and_not_an_idle_one() -> None:
    release = threading.Event()
    started = threading.Event()

    def work() -> None:
        started.set()
        release.wait(10)

    async def main() -> tuple[list[str], list[str]]:
        task = asyncio.get_running_loop().run_in_executor(None, work)  # submitted now
        started.wait(10)  # blocks the loop on purpose: no other work item may start
        during = busy_workers()
        release.set()
        await task
        # The worker hands its result over before its run() returns: poll, bounded.
        async def now() -> list[str]:
            return busy_workers()

        after, _ = await wait_until(now, lambda busy: not busy, within=10)
        return during, after

    during, after = asyncio.run(main())
    assert len(during) == 1 and during[0].startswith("asyncio_"), during
    assert after == [], after


def test_the_profile_says_what_search_turned_on() -> None:
    memory = Resolved(MEMORY, frozenset({"append", "read", "search", "forget", "rejects"}),
                      ("append_message", "get_history", "search", "forget"))
    said = memory.turned_on()
    assert said and said[0].startswith("search present: the memory profile, which promises "
                                       "to refuse invalid input"), said
    # A declared profile is the author's choice; a history store has nothing to explain.
    declared = Resolved(MEMORY, memory.features, memory.methods, declared=True)
    history = Resolved(HISTORY, frozenset({"append", "read", "forget"}),
                       ("append_message", "get_history", "forget"))
    assert declared.turned_on() == [] and history.turned_on() == []
