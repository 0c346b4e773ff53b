"""An interface's own promises, judged in SPEC's terms at the interface itself.

Some interfaces promise more than the profile they reach can show through ``get_history``:
a LangGraph checkpointer keeps every checkpoint of a thread, pages them newest first, stores
a task's retried writes once, deletes a thread whole, and leaves an interrupted run's
thread at its last complete checkpoint. A mapping that has such promises has
``promises()``: guarantee -> an async check ``(saver, token, note) -> problems``
(``interfaces/_checkpointer_checks.py``), each problem naming the guarantee it breaks.
One test per guarantee runs its check on a fresh store; a store whose mapping makes no
promise under that guarantee is *not applicable*, never passed.

The checks write only threads whose ids hold this test's token (SPEC.md: every id is new)
and delete them when they are done.
"""

from __future__ import annotations

from typing import Any

import pytest

from .base import StoreTests
from .contract import G1, G2, G5, G6, G8, G9, G10, G12, Guarantee
from .core.fresh import Namespace
from .core.history import History
from .core.loop import suite_test
from .core.profiles import NOT_APPLICABLE
from .core.recorder import StoreFactory, opened
from .core.violations import GuaranteeViolation, watch

__all__ = ["TestInterfacePromises"]


FAMILIES = {"checkpointer": "a LangGraph checkpointer has them, --langgraph-checkpointer",
            "conversation-store": "a pydantic-ai ConversationStore has them, "
                                  "--pydantic-ai-conversations"}
"""The interfaces with promises of their own, by a mapping's ``promise_family`` (a mapping
without one is a checkpointer's): each test below judges one family's promise."""


def _not_applicable(store: object, guarantee: Guarantee, family: str) -> str:
    return (f"{NOT_APPLICABLE}: {type(store).__name__} maps no interface with promises of "
            f"its own under {guarantee} ({FAMILIES[family]}); it would judge {guarantee}")


async def _subject(raw: Any) -> tuple[Any, str]:
    """What the checks call, and how the log names it: a mapping's ``promise_subject``, or a
    checkpointer mapping's saver."""
    subject = getattr(raw, "promise_subject", None)
    if callable(subject):
        found: tuple[Any, str] = await subject()
        return found
    saver = await raw.saver()
    return saver, (f"{type(saver.saver).__name__} "
                   f"({'sync' if saver.synchronous else 'async'} methods)")


async def _judge(factory: StoreFactory, guarantee: Guarantee,
                 family: str = "checkpointer") -> None:
    """Run the mapping's check for ``guarantee``; a ``GuaranteeViolation`` for what it found."""
    ids = Namespace.new()
    log = History()
    watch(log)
    async with opened(factory, raw=True) as raw:
        promises = getattr(raw, "promises", None)
        checks: dict[Guarantee, Any] = promises() if callable(promises) else {}
        if getattr(raw, "promise_family", "checkpointer") != family:
            checks = {}
        check = checks.get(guarantee)
        if check is None:
            pytest.skip(_not_applicable(raw, guarantee, family))
        subject, named = await _subject(raw)
        user = ids.token
        log.note(f"{named}: the check of {guarantee}", user)
        try:
            problems = await check(subject, ids.token, lambda text: log.note(text, user))
        except Exception as exc:
            raise GuaranteeViolation(
                G12, f"a valid call of the check of {guarantee} raised "
                     f"{type(exc).__name__}: {exc} (after the last step in the history)",
                log, user=user) from exc
    if problems:
        (first, head), rest = problems[0], problems[1:]
        detail = "\n".join([head] + [f"also {g}: {text}" for g, text in rest])
        raise GuaranteeViolation(first, detail, log, user=user)


class TestInterfacePromises(StoreTests):
    """The interface's own promises, one test per guarantee they keep."""

    @pytest.mark.guarantee(G6)
    @suite_test
    async def test_a_retried_write_is_stored_once(self, store: StoreFactory) -> None:
        """A checkpointer's ``aput_writes`` retried with the same task id and write index
        stores nothing new.

        Troubleshooting: key a write by (thread, namespace, checkpoint, task id, index) and
        insert it with "insert or ignore" (regular channels) or "insert or replace" (special
        channels such as ``__error__``), never with a plain insert or an append to a list.
        """
        await _judge(store, G6)

    @pytest.mark.guarantee(G5)
    @suite_test
    async def test_checkpoints_are_listed_newest_first_and_page_without_gaps(
            self, store: StoreFactory) -> None:
        """``alist`` is newest first, ``before``/``limit`` pages add up to it.

        Troubleshooting: order by checkpoint id (or timestamp) descending, filter ``before``
        with a strict "less than" on the same key, and apply ``limit`` after the filter.
        """
        await _judge(store, G5)

    @pytest.mark.guarantee(G9)
    @suite_test
    async def test_neighbouring_thread_ids_never_see_each_other(
            self, store: StoreFactory) -> None:
        """Thread ids sharing a prefix, differing by case or padding, or holding a wildcard
        are different threads, for reads, lists and deletes.

        Troubleshooting: match thread ids by equality (escape them in a key pattern or a
        ``LIKE``), never by prefix, and keep the database's comparison case- and
        padding-sensitive (no case-insensitive collation, no trimmed ``CHAR``).
        """
        await _judge(store, G9)

    @pytest.mark.guarantee(G8)
    @suite_test
    async def test_deleting_a_thread_leaves_nothing(self, store: StoreFactory) -> None:
        """After ``adelete_thread`` nothing of the thread is read back, by any method.

        Troubleshooting: delete the thread's checkpoints, writes and channel blobs of every
        namespace, in one transaction.
        """
        await _judge(store, G8)

    @pytest.mark.guarantee(G10)
    @suite_test
    async def test_an_interrupted_run_leaves_the_last_complete_checkpoint(
            self, store: StoreFactory) -> None:
        """A cancelled or failed run leaves the thread at its last complete checkpoint, and
        the next run appends to it.

        Troubleshooting: write a checkpoint with its blobs and writes in one transaction,
        and roll it back (or release the connection) when the call is cancelled.
        """
        await _judge(store, G10)

    @pytest.mark.guarantee(G1)
    @suite_test
    async def test_a_stale_save_never_loses_a_message(self, store: StoreFactory) -> None:
        """A pydantic-ai ``ConversationStore``'s save from a copy loaded before another save
        (or before a delete) raises ``ConversationConflict``, the documented answer, or at
        least keeps the message the other save stored.

        Troubleshooting: in ``write_record``, replace the record only where its stored
        revision is ``expected_revision`` (one ``UPDATE ... WHERE revision = ?`` or a
        compare-and-set), and raise ``ConversationConflict`` otherwise.
        """
        await _judge(store, G1, "conversation-store")

    @pytest.mark.guarantee(G2)
    @suite_test
    async def test_each_message_is_stored_once(self, store: StoreFactory) -> None:
        """A ``ConversationStore`` stores only the messages a save adds: a loaded
        conversation saved with nothing new, or saved again, adds nothing twice, and its
        entries read back in the order saved.

        Troubleshooting: store ``new_entries`` as given, each once, and read a history by
        following ``parent_id`` from the record's ``head_id``.
        """
        await _judge(store, G2, "conversation-store")

    @pytest.mark.guarantee(G9)
    @suite_test
    async def test_a_fork_and_its_parent_never_see_each_other(
            self, store: StoreFactory) -> None:
        """A ``ConversationStore`` fork and the conversation it was forked from each keep
        their own later messages, and deleting one leaves the other whole.

        Troubleshooting: key a record by its own ``conversation_id`` only; in
        ``delete_record``, delete only the entries no remaining record's history (its
        ``head_id`` and ``branches``) reaches.
        """
        await _judge(store, G9, "conversation-store")
