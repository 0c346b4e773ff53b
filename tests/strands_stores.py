"""Planted defects behind ``--strands-session`` (issue 46): Strands' ``FileSessionManager``
with one thing broken, so that the option's tests can show the suite catches it.

- :class:`PrefixList`: ``list_messages`` reads every session whose id starts with the one
  asked for (what a key pattern ``session:<id>*`` does on a key-value store): G9;
- :class:`DeleteSessionFileOnly`: ``delete_session`` removes ``session.json`` and leaves the
  agents and their messages (a delete that finds a session's children by a record it
  removes first): G8;
- :class:`OffsetIgnored`: ``list_messages`` ignores ``offset``, so every page starts at the
  first message: G3 (a read of 300 returns the first page over and over, not the 300).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from strands.session import FileSessionManager

OWN = "nomnesia-repository"


class PrefixList(FileSessionManager):
    def list_messages(self, session_id: str, agent_id: str, limit: int | None = None,
                      offset: int = 0, **kwargs: Any) -> list[Any]:
        found: list[Any] = []
        for name in sorted(os.listdir(self.storage_dir)):
            other = name.removeprefix("session_")
            if other.startswith(session_id) and self.read_agent(other, agent_id) is not None:
                found += super().list_messages(other, agent_id)
        found.sort(key=lambda m: (m.message_id, m.created_at))
        return found[offset:] if limit is None else found[offset:offset + limit]


class DeleteSessionFileOnly(FileSessionManager):
    def delete_session(self, session_id: str, **kwargs: Any) -> None:
        os.remove(os.path.join(self._get_session_path(session_id), "session.json"))


class OffsetIgnored(FileSessionManager):
    def list_messages(self, session_id: str, agent_id: str, limit: int | None = None,
                      offset: int = 0, **kwargs: Any) -> list[Any]:
        return super().list_messages(session_id, agent_id, limit=limit)


@contextmanager
def _on_disk(kind: type[FileSessionManager]) -> Iterator[FileSessionManager]:
    where = tempfile.mkdtemp(prefix="nomnesia-strands-planted-")
    try:
        yield kind(session_id=OWN, storage_dir=where)
    finally:
        shutil.rmtree(where, ignore_errors=True)


def prefix_list() -> Any:
    return _on_disk(PrefixList)


def delete_session_file_only() -> Any:
    return _on_disk(DeleteSessionFileOnly)


def offset_ignored() -> Any:
    return _on_disk(OffsetIgnored)
