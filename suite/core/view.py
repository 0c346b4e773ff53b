"""A store of a smaller profile, seen through the suite's calls: entries known by role and content.

The suite's tests call the protocol of SPEC.md and read entries by their
attributes. A store of the ``seed``, ``history`` or ``memory`` profile has no
entry ids the suite can rely on (the seed's ``get_history`` returns dicts with
``role`` and ``content``), so SPEC.md's "Profiles" section says how to read it,
and this view does exactly that and nothing more:

- the suite writes unique contents, so an entry is known by its content: its
  ``id`` here is derived from the content (readable when short);
- an entry whose content the suite never wrote is a summary (``role`` is
  ``summary``); its covers cannot be seen, so ``covers`` is empty;
- ``seq`` is the entry's position in the read that returned it (the order all
  reads must agree on is the list order itself); an append's returned entry has
  seq ``-1``;
- ``user_id`` is the store's own when its items carry one, else the user asked
  for (a leak then shows as another user's content, which the suite knows);
- ``consistent_state`` may return a plain bool (the seed's); it becomes a
  ``ConsistencyReport``;
- ``recover`` runs only if the store has one: a profile without it must restore
  its guarantees on its own (SPEC G10, "no recover").

It adds no lock, retry or id of its own: whatever the store does, the suite sees.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from ..contract import SUMMARY_ROLE, ConsistencyReport, Difference, Entry
from .profiles import Resolved

__all__ = ["NOMINAL_KEEP_LAST", "KeyedView", "UnreadableResult", "content_key", "view_of"]

NOMINAL_KEEP_LAST = 6
"""How many entries a test writes past before it compacts a store that declares no
``keep_last``: any number is correct; compaction of fewer is allowed to do nothing."""


class UnreadableResult(RuntimeError):
    """A store returned items without ``role`` and ``content``: nothing the suite can judge."""


def content_key(content: str) -> str:
    """An entry's id in the keyed reading: its content when short, else a prefix and a digest."""
    if 0 < len(content) <= 40 and content.isprintable():
        return content
    digest = hashlib.sha1(content.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    head = "".join(c if c.isprintable() else "?" for c in content[:24])
    return f"{head}…#{digest}"


def _field(item: object, name: str) -> Any:
    if isinstance(item, Mapping):
        return item.get(name)
    return getattr(item, name, None)


class KeyedView:
    """The suite's calls on a store of the ``seed``, ``history`` or ``memory`` profile."""

    def __init__(self, inner: Any, resolved: Resolved) -> None:
        self.inner = inner
        self.resolved = resolved
        self.features = resolved.features
        keep = getattr(inner, "keep_last", None)
        self.keep_last = keep if isinstance(keep, int) and keep >= 1 else NOMINAL_KEEP_LAST
        lag = getattr(inner, "search_staleness", 0.0)
        self.search_staleness = float(lag) if isinstance(lag, (int, float)) else 0.0
        self.capabilities = getattr(inner, "capabilities", None)
        self._written: set[str] = set()  # every content the suite asked any user to append

    def _entry(self, item: object, user_id: str, seq: int) -> Entry:
        role, content = _field(item, "role"), _field(item, "content")
        if not isinstance(role, str) or not isinstance(content, str):
            raise UnreadableResult(f"the store returned {item!r:.120}, which has no str role "
                                   "and content (a dict with 'role' and 'content', or an "
                                   "object with those attributes)")
        owner = _field(item, "user_id")
        owner = owner if isinstance(owner, str) else user_id
        if content in self._written:
            return Entry(content_key(content), owner, seq, role, content)
        return Entry(f"summary#{content_key(content)}", owner, seq, SUMMARY_ROLE, content)

    def _entries(self, items: object, user_id: str) -> list[Entry]:
        if not isinstance(items, (list, tuple)):
            raise UnreadableResult(f"the store returned {items!r:.120}, not a list of entries")
        return [self._entry(item, user_id, n) for n, item in enumerate(items)]

    async def append_message(self, user_id: str, role: str, content: str, *,
                             message_id: str | None = None) -> Entry:
        if isinstance(content, str):
            self._written.add(content)  # before the call: an interrupted append may still land
        if message_id is None:
            result = await self.inner.append_message(user_id, role, content)
        elif self.resolved.has("message_id"):
            result = await self.inner.append_message(user_id, role, content,
                                                     message_id=message_id)
        else:  # a suite bug: tests that pass message_id declare needs("message_id")
            raise AssertionError(f"profile {self.resolved.profile.name} has no message_id")
        if result is not None and isinstance(_field(result, "content"), str):
            return self._entry(result, user_id, -1)
        # A store that took a content of another type (None, 1) is judged for accepting it,
        # not made to crash here.
        key = content_key(content if isinstance(content, str) else repr(content))
        return Entry(key, user_id, -1, role, content)

    def wrote(self, contents: Iterable[str]) -> None:
        """Contents the suite wrote around the view (a library's own batch method, as the
        interface-fault test does): read back, they are its messages, not summaries."""
        self._written.update(contents)

    async def get_history(self, user_id: str, limit: int = 10) -> list[Entry]:
        return self._entries(await self.inner.get_history(user_id, limit), user_id)

    async def search(self, user_id: str, query: str, k: int = 5) -> list[Entry]:
        return self._entries(await self.inner.search(user_id, query, k), user_id)

    async def compact(self, user_id: str) -> Entry | None:
        result = await self.inner.compact(user_id)
        if result is None or not isinstance(_field(result, "content"), str):
            return None
        entry = self._entry(result, user_id, -1)
        return Entry(entry.id, entry.user_id, -1, SUMMARY_ROLE, entry.content)

    async def forget(self, user_id: str) -> None:
        await self.inner.forget(user_id)

    async def consistent_state(self, user_id: str) -> ConsistencyReport:
        result = await self.inner.consistent_state(user_id)
        if isinstance(result, ConsistencyReport):
            return result
        if result:
            return ConsistencyReport.of(user_id, ())
        return ConsistencyReport.of(user_id, [Difference(
            "store", "mismatch", detail=f"consistent_state returned {result!r}")])

    async def recover(self) -> None:
        if self.resolved.has("recover"):
            await self.inner.recover()


def view_of(store: Any, resolved: Resolved) -> Any:
    """The store as the suite calls it: itself for the full profile, else a ``KeyedView``."""
    return store if not resolved.keyed else KeyedView(store, resolved)
