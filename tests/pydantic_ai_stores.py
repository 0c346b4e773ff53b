"""Planted defects behind ``--pydantic-ai-conversations`` (issue 46): pydantic-ai's own
``InMemoryConversationStore`` with one thing changed, so that the option's tests can show the
suite catches what the store promises against, and takes its documented conflict for what it is.

- :class:`Yielding`: the real store, whose ``read_record`` gives the event loop a turn (as
  any backend on an engine does), so concurrent saves of one conversation do race: the
  stale one raises ``ConversationConflict``, the documented answer, and no defect;
- :class:`RevisionIgnored`: ``write_record`` that does not check ``expected_revision`` (an
  upsert of the record): a save from a stale conversation moves the head past a message
  another save had stored, and that acknowledged message is lost (G1);
- :class:`WholeHistory`: ``write_record`` that stores the conversation's stored messages
  again before the new ones (a backend that writes the whole history on each save): each
  message is stored more than once (G2);
- :class:`DeleteKeepsRecord`: ``delete_record`` that checks the revision and deletes
  nothing: a deleted conversation still loads (G8);
- :class:`DeleteSharedEntries`: ``delete_record`` that deletes every entry of the deleted
  conversation's history, those a fork shares too: the fork loses its history (G9).
"""

from __future__ import annotations

import types
from collections.abc import Generator, Sequence

from pydantic_ai.conversation_store import (
    ConversationConflict,
    ConversationEntry,
    ConversationRecord,
    InMemoryConversationStore,
)


@types.coroutine
def one_turn() -> Generator[None, None, None]:
    """Give the event loop one turn (what ``asyncio.sleep(0)`` does, with no timer)."""
    yield


class Yielding(InMemoryConversationStore):
    """The real store, a turn of the loop before each record is read."""

    async def read_record(self, conversation_id: str) -> ConversationRecord | None:
        await one_turn()
        return await super().read_record(conversation_id)


class RevisionIgnored(InMemoryConversationStore):
    """A store whose ``write_record`` replaces the record whatever revision it now has, a turn
    of the loop after ``save`` checked the revision it read (a backend's round trip)."""

    async def write_record(self, record: ConversationRecord, *,
                           new_entries: Sequence[ConversationEntry] = (),
                           expected_revision: str | None) -> None:
        await one_turn()  # another save lands here ...
        stored = self._records.get(record.conversation_id)  # ... and is written over
        await super().write_record(record, new_entries=new_entries,
                                   expected_revision=None if stored is None
                                   else stored.revision)

    async def delete_record(self, conversation_id: str, *, expected_revision: str) -> None:
        """Delete the record and keep every entry: a stale save may point past a delete into
        entries the real store would free, and a read of those must not raise (the defect
        planted is the lost message alone, not a ``KeyError`` the suite would read as G12)."""
        stored = self._records.get(conversation_id)
        if stored is None or stored.revision != expected_revision:
            raise ConversationConflict(conversation_id)
        del self._records[conversation_id]


class WholeHistory(InMemoryConversationStore):
    """A store whose ``write_record`` writes the stored history again before new entries."""

    async def write_record(self, record: ConversationRecord, *,
                           new_entries: Sequence[ConversationEntry] = (),
                           expected_revision: str | None) -> None:
        stored = self._records.get(record.conversation_id)
        if stored is None or not new_entries:
            await super().write_record(record, new_entries=new_entries,
                                       expected_revision=expected_revision)
            return
        chain: list[ConversationEntry] = []
        parent = stored.head_id
        for entry in [*await self.read_history(stored.head_id), *new_entries]:
            copy = ConversationEntry(parent_id=parent, message=entry.message)
            chain.append(copy)
            parent = copy.id
        record.head_id = parent
        await super().write_record(record, new_entries=chain,
                                   expected_revision=expected_revision)


class DeleteKeepsRecord(InMemoryConversationStore):
    """A store whose ``delete_record`` checks the revision and keeps everything."""

    async def delete_record(self, conversation_id: str, *, expected_revision: str) -> None:
        stored = self._records.get(conversation_id)
        if stored is None or stored.revision != expected_revision:
            raise ConversationConflict(conversation_id)


def yielding() -> Yielding:
    return Yielding()


def revision_ignored() -> RevisionIgnored:
    return RevisionIgnored()


def whole_history() -> WholeHistory:
    return WholeHistory()


def delete_keeps_record() -> DeleteKeepsRecord:
    return DeleteKeepsRecord()


class DeleteSharedEntries(InMemoryConversationStore):
    """A store whose ``delete_record`` deletes the whole history of the record it deletes."""

    async def delete_record(self, conversation_id: str, *, expected_revision: str) -> None:
        stored = self._records.get(conversation_id)
        if stored is None or stored.revision != expected_revision:
            raise ConversationConflict(conversation_id)
        for entry in await self.read_history(stored.head_id):
            self._entries.pop(entry.id, None)
        del self._records[conversation_id]


def delete_shared_entries() -> DeleteSharedEntries:
    return DeleteSharedEntries()
