"""A pydantic-ai ``ConversationStore``'s own promises, each judged under the guarantee of
SPEC.md it keeps: what the history profile's one-message turns cannot show.

The promises are pydantic-ai's (``pydantic_ai/conversation_store.py``): a save "is checked
against the conversation's revision", so one from a stale copy raises
``ConversationConflict`` and never writes over a save it did not see; a store keeps "each
message stored once"; a fork "points at an existing entry rather than copying the history
before it" while "the original conversation carries on". Each check writes conversations of
its own (``token`` makes them new), through ``load``, ``save``, ``fork``, ``load_entries``
and ``delete`` as an application calls them, and deletes them at the end. It returns the
problems it found, each with its guarantee; none is a pass.

- G1 (``stale_saves``): of two copies loaded at one revision and saved at once, one save
  raises ``ConversationConflict`` (documented: the correct answer, never a problem) and the
  message of each save that returned stays; a copy loaded before a ``delete`` saved after
  the conversation was made again does not replace the new one's message. Only a lost
  acknowledged message is a problem: a stale save the store accepted without losing
  anything breaks no guarantee.
- G2 (``stored_once``): saving a loaded conversation with nothing new stores nothing, a
  conversation saved again after a save stores only what was added since, and every entry id
  ``load_entries`` returns is distinct; the entries read back in the order they were saved
  (G5).
- G9 (``forks_apart``): a fork and its parent, each saved after the fork, never see each
  other's new messages (and each keeps its own: G1); deleting the parent leaves the fork
  whole (the entries they share are the fork's history too), and deleting a fork leaves
  the conversation it was forked from whole.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from ..contract import G1, G2, G5, G9, Guarantee
from ._conversation_messages import message, role_and_text

__all__ = ["PROMISES", "Check", "Note", "Problem"]

Problem = tuple[Guarantee, str]
Note = Callable[[str], None]
Check = Callable[[Any, str, Note], Awaitable[list[Problem]]]


def _texts(conversation: Any) -> list[str] | None:
    if conversation is None:
        return None
    return [role_and_text(m)["content"] for m in conversation.messages]


async def _start(store: Any, conversation_id: str, *texts: str) -> None:
    from pydantic_ai.conversation import Conversation

    conversation = Conversation(conversation_id=conversation_id)
    conversation.messages.extend(message("user", text) for text in texts)
    await store.save(conversation)


async def _grow_and_save(store: Any, conversation: Any, text: str) -> bool:
    """Save ``conversation`` grown by ``text``; False if the store raised its conflict."""
    from pydantic_ai.conversation_store import ConversationConflict

    conversation.messages.append(message("user", text))
    try:
        await store.save(conversation)
    except ConversationConflict:
        return False
    return True


async def stale_saves(store: Any, token: str, note: Note) -> list[Problem]:
    problems: list[Problem] = []
    cid = f"{token}-stale"
    await _start(store, cid, "first")
    one, two = await store.load(cid), await store.load(cid)
    # At once, as two requests of one conversation are: each save that returns is acknowledged.
    saved = await asyncio.gather(_grow_and_save(store, one, "saved by one"),
                                 _grow_and_save(store, two, "saved by two"))
    found = _texts(await store.load(cid))
    note(f"two copies of {cid!r} loaded at one revision, saved at once: "
         f"{['acknowledged' if s else 'ConversationConflict' for s in saved]}; load: {found}")
    lost = [text for text, ok in zip(("saved by one", "saved by two"), saved, strict=True)
            if ok and (found is None or text not in found)]
    if lost:
        problems.append((G1, f"two saves of {cid!r} from copies loaded at one revision both "
                             f"returned, and {lost} is lost: load returns {found} (the "
                             f"second should have raised ConversationConflict)"))
    stale = await store.load(cid)
    await store.delete(cid)  # then made again: a copy loaded before must not replace it
    await _start(store, cid, "made again")
    accepted = await _grow_and_save(store, stale, "saved from a copy loaded before delete")
    found = _texts(await store.load(cid))
    note(f"a copy of {cid!r} loaded before delete, saved after it was made again: "
         f"{'accepted' if accepted else 'ConversationConflict'}; load: {found}")
    if found is None or "made again" not in found:
        problems.append((G1, f"a save from a copy of {cid!r} loaded before delete replaced "
                             f"the conversation made since: load returns {found}"))
    await store.delete(cid)
    return problems


async def stored_once(store: Any, token: str, note: Note) -> list[Problem]:
    problems: list[Problem] = []
    cid = f"{token}-once"
    await _start(store, cid, "m1", "m2")
    loaded = await store.load(cid)
    await store.save(loaded)  # nothing new
    await _grow_and_save(store, loaded, "m3")
    await _grow_and_save(store, loaded, "m4")  # the same object, saved again
    entries = await store.load_entries(cid) or []
    texts = [role_and_text(e.message)["content"] for e in entries]
    ids = [e.id for e in entries]
    note(f"{cid!r}: saved m1 m2, a loaded copy with nothing new, then m3 and m4 on it; "
         f"load_entries: {texts}")
    if len(set(ids)) != len(ids):
        problems.append((G2, f"load_entries of {cid!r} returns an entry id twice: {ids}"))
    if sorted(texts) != ["m1", "m2", "m3", "m4"]:
        problems.append((G2, f"{cid!r} holds {texts}, not each of m1 m2 m3 m4 once"))
    elif texts != ["m1", "m2", "m3", "m4"]:
        problems.append((G5, f"{cid!r} reads back {texts}, not in the order saved"))
    await store.delete(cid)
    return problems


async def forks_apart(store: Any, token: str, note: Note) -> list[Problem]:
    problems: list[Problem] = []
    parent, child = f"{token}-parent", f"{token}-fork"
    await _start(store, parent, "p1", "p2")
    fork = await store.fork(parent, new_conversation_id=child)
    await _grow_and_save(store, fork, "fork only")
    await _grow_and_save(store, await store.load(parent), "parent only")
    seen = {parent: _texts(await store.load(parent)) or [],
            child: _texts(await store.load(child)) or []}
    note(f"forked {parent!r} as {child!r}, each saved one more: {seen}")
    for one, own, other in ((parent, "parent only", "fork only"),
                            (child, "fork only", "parent only")):
        if other in seen[one]:
            problems.append((G9, f"{one!r} reads {other!r}, saved to the other side of a "
                                 f"fork: {seen[one]}"))
        if own not in seen[one] or "p1" not in seen[one]:
            problems.append((G1, f"after a fork, {one!r} lost an acknowledged message: it "
                                 f"reads {seen[one]}"))
    await store.delete(parent)
    try:
        after = _texts(await store.load(child)) or []
    except LookupError as exc:  # an entry the fork's history points at is gone
        after = [f"load raised {type(exc).__name__}: {exc}"]
    note(f"deleted {parent!r}: the fork reads {after}")
    if after != seen[child]:
        problems.append((G9, f"deleting parent {parent!r} changed fork {child!r}: it read "
                             f"{seen[child]} and now {after}"))
        with contextlib.suppress(Exception):  # what is left of it, as far as it goes
            await store.delete(child)
        return problems
    again = await store.fork(child, at=1, new_conversation_id=f"{child}-2")
    await _grow_and_save(store, again, "second fork only")
    await store.delete(f"{child}-2")
    left = _texts(await store.load(child)) or []
    if left != after:
        problems.append((G9, f"deleting a fork of {child!r} changed it: it read {after} and "
                             f"now {left}"))
    await store.delete(child)
    return problems


PROMISES: dict[Guarantee, Check] = {G1: stale_saves, G2: stored_once, G9: forks_apart}
