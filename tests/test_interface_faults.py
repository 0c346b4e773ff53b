"""The interface-fault judge can fail: a poisoned batch run through ``--langchain-history``,
as a user would, over fake histories that get it wrong in each way the trackers show
(``interface_fault_stores.py``), and over one that gets it right."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("langchain_core.chat_history")

pytest_plugins = ("pytester",)

ONLY = ("-k", "poisoned_batch")  # the suite's tests this module runs
STORES = "tests.interface_fault_stores"
ROOT = Path(__file__).resolve().parent.parent


def _run(pytester: pytest.Pytester,
         suite_args: tuple[str, ...], *option: str) -> tuple[int, list[str], list[str]]:
    """The poisoned-batch test: (passed, skip reasons, failure texts)."""
    pytester.syspathinsert(str(ROOT))
    reprec = pytester.inline_run(*suite_args, *ONLY, "--nomnesia-op-timeout", "3", *option)
    passed, skipped, failed = reprec.listoutcomes()
    reasons = [str(r.longrepr[2]).removeprefix("Skipped: ") for r in skipped
               if isinstance(r.longrepr, tuple)]
    return len(passed), reasons, [r.longreprtext for r in failed]


def _history(name: str) -> tuple[str, str]:
    return "--langchain-history", f"{STORES}:{name}"


def test_a_batch_stored_item_by_item_is_a_partial_effect_under_g10(
        pytester: pytest.Pytester, suite_args: tuple[str, ...]) -> None:
    _, _, failures = _run(pytester, suite_args, *_history("PartialHistory"))
    assert len(failures) == 1, failures
    (text,) = failures
    assert text.startswith("G10 interruption: PartialHistory.aadd_messages([5 items, new "
                           "#3's additional_kwargs holding an Unserializable]) raised "
                           "TypeError"), text[:600]
    assert "a partial effect" in text
    assert "history before: (3)" in text and "history after:  (5)" in text, text[:1500]
    assert "operations, oldest first:" in text


def test_a_batch_serialized_whole_before_it_is_written_passes(pytester: pytest.Pytester,
                                                              suite_args: tuple[str, ...]) -> None:
    passed, skipped, failures = _run(pytester, suite_args, *_history("AtomicHistory"))
    assert (passed, skipped, failures) == (1, [], [])


def test_the_sync_methods_are_poisoned_too(pytester: pytest.Pytester,
                                           suite_args: tuple[str, ...]) -> None:
    _, _, failures = _run(pytester, suite_args, *_history("PartialHistory"), "--langchain-sync")
    assert len(failures) == 1 and ".add_messages([5 items" in failures[0], failures


def test_a_batch_that_drops_what_it_cannot_store_loses_an_acknowledged_write(
        pytester: pytest.Pytester, suite_args: tuple[str, ...]) -> None:
    _, _, failures = _run(pytester, suite_args, *_history("DroppingHistory"))
    assert len(failures) == 1, failures
    assert failures[0].startswith("G1 durability: DroppingHistory.aadd_messages("), \
        failures[0][:600]
    assert "returned, but the history holds only part of it" in failures[0]


def test_a_lock_the_failed_batch_kept_wedges_the_store_under_g10(
        pytester: pytest.Pytester, suite_args: tuple[str, ...]) -> None:
    _, _, failures = _run(pytester, suite_args, *_history("WedgingHistory"))
    assert len(failures) == 1, failures
    text = failures[0]
    # The call itself changed nothing: the failure is what came after it, every time.
    assert text.startswith("G10 interruption: after the poisoned call, a second store from "
                           "the same factory, on another thread and event loop, appending and "
                           "reading a new user before this store was called again: raised "
                           "RuntimeError: database is locked"), text[:600]
    assert "also G10 interruption: after the poisoned call, an append and a read for the " \
           "same user on the same store: raised RuntimeError: database is locked" in text


def test_a_transaction_left_open_on_its_own_connection_is_caught_under_g10(
        pytester: pytest.Pytester, suite_args: tuple[str, ...]) -> None:
    """The wedge that healed in the check's own order (issue 44): the failing store's next
    write commits what the failed batch left open, so the suite probes from another
    connection first; with the transaction rolled back on the error, the same store passes."""
    _, _, failures = _run(pytester, suite_args, *_history("ConnectionWedgingHistory"))
    assert len(failures) == 1, failures
    assert failures[0].startswith("G10 interruption: after the poisoned call, a second store "
                                  "from the same factory"), failures[0][:600]
    assert "before this store was called again: raised RuntimeError: database is locked" \
        in failures[0]
    passed, skipped, failures = _run(pytester, suite_args,
                                     *_history("ConnectionReleasingHistory"))
    assert (passed, skipped, failures) == (1, [], [])


def test_a_store_with_no_batch_method_is_not_applicable(pytester: pytest.Pytester,
                                                        suite_args: tuple[str, ...]) -> None:
    passed, reasons, failures = _run(pytester, suite_args, "--store",
                                     "nomnesia.adapters.memory:InMemoryStore")
    assert (passed, failures) == (0, [])
    assert len(reasons) == 1 and reasons[0].startswith("not applicable: InMemoryStore maps no "
                                                       "library method"), reasons


def test_a_store_that_no_longer_answers_is_caught_under_g10_once_per_store(
        pytester: pytest.Pytester, suite_args: tuple[str, ...]) -> None:
    """Past the op timeout it is a wedge; the same store is not waited on a second time."""
    _, _, failures = _run(pytester, suite_args, *_history("HangingHistory"),
                          "--nomnesia-op-timeout", "1")
    assert len(failures) == 1, failures
    text = failures[0]
    assert text.startswith("G10 interruption: after the poisoned call, a second store from "
                           "the same factory, on another thread and event loop, appending and "
                           "reading a new user before this store was called again: did not "
                           "answer within 1s"), text[:600]
    assert "not tried: an append and a read for the same user" in text
    assert "not tried: an append and a read for another user" in text


def test_a_thread_the_caller_gave_up_on_ends_quietly() -> None:
    """The poisoned call and the reads after it run in a thread of their own, bounded by
    the op timeout. A call that fails after the caller gave up used to raise
    ``InvalidStateError`` in that thread (its future was already cancelled), and pytest
    printed it as an unhandled thread exception in whatever test ran next."""
    import asyncio
    import threading

    from nomnesia.suite.test_interface_faults import _in_thread

    started, release = threading.Event(), threading.Event()

    async def fails_late() -> None:
        started.set()
        release.wait(10)  # blocks this thread's own loop, as a held lock does
        raise RuntimeError("database is locked")

    async def give_up() -> None:
        waiting = asyncio.ensure_future(_in_thread(fails_late))
        assert await asyncio.to_thread(started.wait, 10)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting

    before = set(threading.enumerate())
    unhandled: list[threading.ExceptHookArgs] = []
    previous, threading.excepthook = threading.excepthook, unhandled.append
    try:
        asyncio.run(give_up())
        (thread,) = [t for t in threading.enumerate()
                     if t.name == "nomnesia-interface-fault" and t not in before]
        release.set()
        thread.join(10)
        assert not thread.is_alive()
    finally:
        threading.excepthook = previous
    assert [f"{a.exc_type.__name__}: {a.exc_value}" for a in unhandled] == []


def test_a_check_from_another_thread_that_cannot_run_is_named_not_exercised(
        pytester: pytest.Pytester, suite_args: tuple[str, ...]) -> None:
    """A factory whose stores share a client bound to one loop: the thread checks cannot tell
    a wedge from that, so the test says in the summary that they were not judged (it used to
    warn, and the summary counted a plain pass)."""
    pytester.syspathinsert(str(ROOT))
    result = pytester.runpytest(*suite_args, *ONLY, "--nomnesia-op-timeout", "3",
                                *_history("LoopBoundHistory"))
    result.assert_outcomes(passed=1)
    text = result.stdout.str()
    section = text[text.index("nomnesia: not exercised"):]
    assert ("poisoned batch: no store on another thread was tried after the failed call, "
            "since one failed before it too (raised RuntimeError: the client is attached to "
            "a different loop)") in " ".join(section.split()), section
