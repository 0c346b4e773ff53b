"""The interface steps with valid calls can fail. First the stored batch: a batch written in
one call and a replace, run through ``--openai-session`` and ``--llama-chat-store`` as a user
would, over fake stores that order them wrong in the two ways the trackers show, and over
twins that order them right.

- openai-agents-python #1900: ``SQLAlchemySession`` ordered by ``created_at`` alone, and a
  batch written in one PostgreSQL transaction shares one ``now()``: ``TiedSession`` stamps
  every item of one ``add_items`` alike and returns ties in no particular order (newest
  first, as an unstable sort may).
- run-llama/llama_index#19389: ``SQLAlchemyChatStore`` stamped ``int(time.time())`` and gave
  a replace's messages ``t, t+1, ...``: ``AheadChatStore`` does the same on a frozen clock,
  ordering by (stamp, id), so an append after a replace sorts before the replace's tail.

Then the pops (openai-agents-python #4205: ``SQLAlchemySession.pop_item`` selected the
newest row, then deleted it, so two concurrent pops returned one item): ``RacyPopSession``
awaits between the two, and ``OrderedSession`` claims the item in one step.

Mutant checks: with ``test_a_stored_batch_reads_back_in_order_and_before_what_follows``
skipping every store (its ``stored_batch`` lookup made to find nothing), both
``..._fails_g5`` tests fail; with ``_in_order`` comparing contents as sets (order
ignored), both fail too; with ``test_concurrent_pops_return_each_item_once`` finding no
item returned twice (``twice`` always empty), ``test_a_pop_that_selects_then_deletes_fails_g2``
fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import itertools
from pathlib import Path
from typing import Any

import pytest

pytest_plugins = ("pytester",)

# Imported once here, before pytester snapshots sys.modules: numpy (under llama-index)
# cannot be imported twice in one process, and an in-process run would import it anew.
for _library in ("numpy", "llama_index.core", "agents"):
    with contextlib.suppress(ImportError):
        importlib.import_module(_library)

ONLY = ("-k", "stored_batch")


class _Session:
    """An Agents SDK ``Session``: items with a stamp and an insertion id."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.rows: list[tuple[int, int, Any]] = []  # (stamp, id, item)
        self.ids = itertools.count()
        self.calls = itertools.count()

    def ordered(self) -> list[tuple[int, int, Any]]:
        return sorted(self.rows, key=lambda r: (r[0], r[1]))

    async def add_items(self, items: list[Any]) -> None:
        stamp = next(self.calls)  # one call, one transaction: one now()
        self.rows += [(stamp, next(self.ids), dict(item)) for item in items]

    async def get_items(self, limit: int | None = None) -> list[Any]:
        rows = self.ordered()
        return [r[2] for r in (rows[-limit:] if limit else rows)]

    async def pop_item(self) -> Any:
        rows = self.ordered()
        if not rows:
            return None
        self.rows.remove(rows[-1])
        return rows[-1][2]

    async def clear_session(self) -> None:
        self.rows.clear()


class OrderedSession(_Session):
    """Ties broken by insertion id (PR #1917's fix)."""


class RacyPopSession(_Session):
    """``pop_item`` reads the newest row, awaits (the DELETE's round trip), then deletes
    whatever is still there and returns what it read."""

    async def pop_item(self) -> Any:
        rows = self.ordered()
        if not rows:
            return None
        await asyncio.sleep(0)
        if rows[-1] in self.rows:
            self.rows.remove(rows[-1])
        return rows[-1][2]


class TiedSession(_Session):
    """Ordered by the stamp alone; ties come back newest first."""

    def ordered(self) -> list[tuple[int, int, Any]]:
        return sorted(self.rows, key=lambda r: (r[0], -r[1]))


class _ChatStore:
    """A llama-index ``BaseChatStore``: messages with a stamp and an id, read by (stamp, id)."""

    NOW = 1_700_000_000  # a frozen clock: every call falls within the same second

    def __init__(self) -> None:
        self.rows: dict[str, list[tuple[int, int, Any]]] = {}
        self.ids = itertools.count()

    def stamps(self, n: int) -> list[int]:
        return [self.NOW] * n

    async def async_add_message(self, key: str, message: Any) -> None:
        self.rows.setdefault(key, []).append((self.NOW, next(self.ids), message))

    async def aset_messages(self, key: str, messages: list[Any]) -> None:
        self.rows[key] = [(stamp, next(self.ids), m)
                          for stamp, m in zip(self.stamps(len(messages)), messages, strict=True)]

    async def aget_messages(self, key: str) -> list[Any]:
        return [m for _, _, m in sorted(self.rows.get(key, []), key=lambda r: (r[0], r[1]))]

    async def adelete_messages(self, key: str) -> None:
        self.rows.pop(key, None)


class ClockChatStore(_ChatStore):
    """A replace stamped with the clock, like an append (PR #19432's fix, in effect)."""


class AheadChatStore(_ChatStore):
    """A replace stamped ``t, t+1, ..., t+n-1`` (0.12.49's ``set_messages``)."""

    def stamps(self, n: int) -> list[int]:
        return [self.NOW + i for i in range(n)]


def _run(pytester: pytest.Pytester, suite_args: tuple[str, ...], option: str, factory: str,
         only: tuple[str, ...] = ONLY) -> tuple[int, list[str]]:
    """The stored-batch test (or ``only``'s): (passed, failure texts)."""
    pytester.syspathinsert(str(Path(__file__).resolve().parent))
    reprec = pytester.inline_run(*suite_args, *only, option, f"test_stored_batch:{factory}")
    passed, skipped, failed = reprec.listoutcomes()
    assert not skipped, [r.longrepr for r in skipped]
    return len(passed), [r.longreprtext for r in failed]


def test_a_batch_sharing_one_stamp_read_out_of_order_fails_g5(
        pytester: pytest.Pytester, suite_args: tuple[str, ...]) -> None:
    pytest.importorskip("agents")
    _, failures = _run(pytester, suite_args, "--openai-session", "TiedSession")
    assert len(failures) == 1, failures
    (text,) = failures
    assert text.startswith("G5 order: after TiedSession.add_items([12 items]), the history "
                           "reads out of order (first at position 3: "), text[:600]
    assert "expected: (14) [user: " in text, text[:1500]


def test_a_batch_with_a_tie_breaker_passes(pytester: pytest.Pytester,
                                           suite_args: tuple[str, ...]) -> None:
    pytest.importorskip("agents")
    assert _run(pytester, suite_args, "--openai-session", "OrderedSession") == (1, [])


def test_an_append_sorted_before_a_replaced_chat_fails_g5(
        pytester: pytest.Pytester, suite_args: tuple[str, ...]) -> None:
    pytest.importorskip("llama_index.core")
    _, failures = _run(pytester, suite_args, "--llama-chat-store", "AheadChatStore")
    assert len(failures) == 1, failures
    (text,) = failures
    assert text.startswith("G5 order: after AheadChatStore.aset_messages(key, [12 messages]) "
                           "and one append, the history reads out of order (first at "
                           "position 2: "), text[:600]


def test_a_replace_stamped_with_the_clock_passes(pytester: pytest.Pytester,
                                                 suite_args: tuple[str, ...]) -> None:
    pytest.importorskip("llama_index.core")
    assert _run(pytester, suite_args, "--llama-chat-store", "ClockChatStore") == (1, [])


POPS = ("-k", "concurrent_pops")


def test_a_pop_that_selects_then_deletes_fails_g2(pytester: pytest.Pytester,
                                                  suite_args: tuple[str, ...]) -> None:
    pytest.importorskip("agents")
    _, failures = _run(pytester, suite_args, "--openai-session", "RacyPopSession", POPS)
    assert len(failures) == 1, failures
    (text,) = failures
    assert text.startswith("G2 exactly once: 6 concurrent pop_item() calls returned "), text[:600]
    assert "more than once (each item is popped once)" in text, text[:600]


def test_a_pop_that_claims_its_item_passes(pytester: pytest.Pytester,
                                           suite_args: tuple[str, ...]) -> None:
    pytest.importorskip("agents")
    assert _run(pytester, suite_args, "--openai-session", "OrderedSession", POPS) == (1, [])
