"""A LangGraph checkpointer's own promises, each judged under the guarantee of SPEC.md it
keeps: what the history profile cannot see through ``get_history`` alone.

Each check writes threads of its own (``token`` makes them new), through the graph where an
application would (a run per message) and through the saver's own methods where LangGraph
itself calls them (``aput_writes`` of a task, ``alist`` with ``before`` and ``limit``), and
deletes them at the end. It returns the problems it found, each with its guarantee; none is
a pass. The promises are LangGraph's: ``BaseCheckpointSaver``'s docstrings and its
conformance suite (``langgraph-checkpoint-conformance``: ``test_put_writes_idempotent``,
``test_list_ordering``, ``test_list_limit_plus_before``, ``test_delete_thread_*``).

- G6 (``writes_once``): ``aput_writes`` with a task id and write index it already holds
  stores nothing new (LangGraph retries a task's writes with the same ids), and a special
  channel (``__error__``) is kept once per task; another task's writes are all kept (G1).
- G5 (``newest_first``): ``alist`` returns a thread's checkpoints newest first (each one's
  parent is the next), its first is ``aget_tuple``'s latest, and pages of ``limit`` after
  ``before`` cover the list with no gap and no repeat; every earlier state from
  ``aget_state_history`` holds a prefix of the later one's messages.
- G9 (``threads_apart``): threads whose ids share a prefix, differ by case or by padding,
  or hold a wildcard of SQL (``%``, ``_``) or Redis (``*``), never see each other's
  messages or checkpoints, and deleting one leaves the others whole.
- G8 (``delete_leaves_nothing``): after ``adelete_thread`` no read finds the thread's
  checkpoints, in any namespace, and a checkpoint put again under a deleted id brings back
  none of its writes or channel values (what a delete that leaves rows behind shows).
- G10 (``interrupted_runs``): a run cancelled while its node runs, a run whose node fails,
  and runs cancelled after 0, 1, 2, 4 ... event-loop steps leave the thread at its last
  complete checkpoint: its messages are those before the run, or those and the run's
  message once; every listed checkpoint can be read; the next run answers and appends, and
  keeps the interrupted run's message if a read after the interruption returned it (G1).
  A sync saver (whose runs are in worker threads, which cannot be cancelled) is judged on
  the failed run only.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any

from ..contract import G1, G5, G6, G8, G9, G10, Guarantee
from ..core.loop import within_op_timeout
from ..core.settings import settings
from ._checkpointer_graph import PlannedFailure, Saver, message, thread

__all__ = ["PROMISES", "Check", "Note", "Problem"]

Problem = tuple[Guarantee, str]
Note = Callable[[str], None]
Check = Callable[[Saver, str, Note], Awaitable[list[Problem]]]

CHILD_NS = "nomnesia_child:1"
"""A subgraph's namespace, as LangGraph names them (``node:task``)."""
STEPS = (0, 1, 2, 4, 8, 16, 32, 64, 128, 256)
"""Event-loop steps after which a run is cancelled, until one finishes first."""


def _few(items: Sequence[Any], n: int = 6) -> str:
    """At most ``n`` items of a list, and how many more: failures stay readable."""
    shown = ", ".join(repr(i) for i in items[:n])
    return f"[{shown}" + (f", ... {len(items) - n} more]" if len(items) > n else "]")


def _ids(messages: Sequence[Any]) -> list[str]:
    return [str(getattr(m, "id", None)) for m in messages]


def _cid(found: Any) -> str:
    """The checkpoint id of a ``CheckpointTuple`` (or a config), ``None`` as ``'None'``."""
    config = getattr(found, "config", found)
    return str((config or {}).get("configurable", {}).get("checkpoint_id"))


def _parent(found: Any) -> str:
    return _cid(found.parent_config) if found.parent_config else "None"


def _values(found: Any) -> list[str]:
    return _ids((found.checkpoint.get("channel_values") or {}).get("messages") or [])


async def _append(saver: Saver, thread_id: str, token: str, name: str) -> str:
    """One run with one new user message; its id."""
    message_id = f"{token}-{name}"
    await saver.invoke(thread_id, [message("user", f"{token} {name}", message_id)])
    return message_id


# --------------------------------------------------------------------------- G6


async def writes_once(saver: Saver, token: str, note: Note) -> list[Problem]:
    """``aput_writes`` again with the same task id and indexes stores nothing new."""
    from langgraph.checkpoint.serde.types import ERROR

    thread_id = f"{token}:writes"
    await _append(saver, thread_id, token, "w0")
    head = await saver.get_tuple(thread(thread_id))
    config, task, other = head.config, f"{token}-task", f"{token}-other-task"
    first = [("nomnesia_a", "first a"), ("nomnesia_b", "first b")]
    calls = [(first, task), (first, task),
             ([("nomnesia_a", "retried a"), ("nomnesia_b", "retried b")], task),
             ([(ERROR, "first error")], task), ([(ERROR, "first error")], task),
             ([("nomnesia_a", "the other task's a")], other)]
    for writes, task_id in calls:
        await saver.put_writes(config, writes, task_id)
        note(f"aput_writes(checkpoint {_cid(config)}, {writes!r}, task_id={task_id!r})")
    stored = list((await saver.get_tuple(config)).pending_writes or [])
    note(f"aget_tuple(checkpoint {_cid(config)}).pending_writes: {_few(stored, 12)}")
    counts = Counter((str(w[0]), str(w[1])) for w in stored)
    problems: list[Problem] = []
    for channel, values in (("nomnesia_a", ("first a", "retried a")),
                            ("nomnesia_b", ("first b", "retried b")), (ERROR, ("first error",))):
        n = counts[(task, channel)]
        if n > 1:
            problems.append((G6, f"aput_writes of task {task!r} to channel {channel!r} at one "
                                 f"index, retried, is stored {n} times (a retried write must "
                                 f"be stored once): pending_writes {_few(stored)}"))
        elif n == 0:
            problems.append((G1, f"the acknowledged aput_writes of task {task!r} to channel "
                                 f"{channel!r} is not among the pending writes: {_few(stored)}"))
        else:
            value = next(w[2] for w in stored if (w[0], w[1]) == (task, channel))
            if value not in values:
                problems.append((G6, f"task {task!r}'s write to {channel!r} reads back as "
                                     f"{value!r}, which no call wrote (one of {values!r})"))
    if counts[(other, "nomnesia_a")] != 1:
        problems.append((G1, f"task {other!r}'s one write is stored "
                             f"{counts[(other, 'nomnesia_a')]} times, not once (another task's "
                             f"write to the same channel and index is another write): "
                             f"{_few(stored)}"))
    await saver.delete_thread(thread_id)
    return problems


# --------------------------------------------------------------------------- G5


async def _pages(saver: Saver, thread_id: str, size: int, bound: int) -> list[Any]:
    """Every checkpoint of the thread, ``size`` at a time, each page after the last one's
    ``before``; stops at a short page (or after ``bound`` pages, a saver that never ends)."""
    found: list[Any] = []
    before: dict[str, Any] | None = None
    for _ in range(bound):
        page = await saver.list(thread(thread_id), before=before, limit=size)
        found.extend(page[:size + 1])
        if len(page) < size or not page:
            break
        before = page[-1].config
    return found


async def newest_first(saver: Saver, token: str, note: Note) -> list[Problem]:
    """``alist`` is newest first, its pages have no gap, earlier states are prefixes."""
    thread_id = f"{token}:order"
    written = [await _append(saver, thread_id, token, f"o{i}") for i in range(4)]
    listed = await saver.list(thread(thread_id))
    chain = [f"{_cid(t)} (parent {_parent(t)})" for t in listed]
    note(f"alist(thread): {len(listed)} checkpoints, in the order returned: {chain}")
    problems: list[Problem] = []
    for i, (newer, older) in enumerate(itertools.pairwise(listed)):
        if _parent(newer) != _cid(older):
            problems.append((G5, f"alist is not newest first: checkpoint #{i + 1} "
                                 f"({_cid(newer)}) has parent {_parent(newer)}, but #{i + 2} is "
                                 f"{_cid(older)}; the order returned: {_few(chain, 4)}"))
            break
    head = await saver.get_tuple(thread(thread_id))
    if listed and (head is None or _cid(head) != _cid(listed[0])):
        problems.append((G5, f"alist's first checkpoint {_cid(listed[0])} is not aget_tuple's "
                             f"latest ({_cid(head) if head else None})"))
    everything = [_cid(t) for t in listed]
    for size in (1, 2, 3, 5):
        paged = await _pages(saver, thread_id, size, len(listed) + 2)
        got = [_cid(t) for t in paged]
        if got != everything:
            missing = [c for c in everything if c not in got]
            twice = [c for c, n in Counter(got).items() if n > 1]
            problems.append((G5, f"alist pages of limit={size}, each before the last one's "
                                 f"checkpoint, do not add up to alist's {len(everything)}: "
                                 f"{len(got)} checkpoints, {len(missing)} missing "
                                 f"{_few(missing, 3)}, {len(twice)} repeated {_few(twice, 3)}"
                                 + ("" if missing or twice else ", in another order")))
    states = await saver.states(thread_id)
    seen = [_ids(s.values.get("messages", [])) for s in states]
    if problems:  # the states come from alist: its order is already judged
        await saver.delete_thread(thread_id)
        return problems
    if not seen or seen[0] != written:
        problems.append((G1, f"the latest state holds {seen[0] if seen else None}, not the "
                             f"four messages appended, in order: {written}"))
    for newer, older in itertools.pairwise(seen):
        if newer[:len(older)] != older:
            problems.append((G5, f"aget_state_history: an earlier state holds {older}, which "
                                 f"is not where the later state {newer} starts"))
            break
    await saver.delete_thread(thread_id)
    return problems


# --------------------------------------------------------------------------- G9


def _neighbours(base: str) -> list[str]:
    """Thread ids a careless key or query mixes up with ``base`` (and ``base`` first)."""
    ids = [base, base + "0", base[:-1], base.upper(), base.lower(), f" {base}", f"{base} ",
           base + "*", base[:-1] + "_", base + "%"]
    return list(dict.fromkeys(ids))


async def threads_apart(saver: Saver, token: str, note: Note) -> list[Problem]:
    """Neighbouring thread ids never see each other; deleting one leaves the others."""
    ids = _neighbours(f"{token}:Thread")
    own = {t: await _append(saver, t, token, f"iso{i}") for i, t in enumerate(ids)}
    note(f"one run on each of the threads {ids!r}")
    problems: list[Problem] = []

    async def judge(thread_id: str, expected: list[str], when: str) -> None:
        got = _ids(await saver.messages(thread_id))
        strangers = [t for t, m in own.items() if m in got and t != thread_id]
        if strangers:
            problems.append((G9, f"{when}thread {thread_id!r} holds the messages of "
                                 f"{strangers!r}: {got}"))
        elif got != expected:
            guarantee = G8 if not expected else G9
            problems.append((guarantee, f"{when}thread {thread_id!r} holds {got}, not "
                                        f"{expected}"))
        for found in await saver.list(thread(thread_id)):
            other = found.config["configurable"].get("thread_id")
            if other != thread_id:
                problems.append((G9, f"{when}alist(thread {thread_id!r}) returns a checkpoint "
                                     f"of thread {other!r}"))
                break
            foreign = [t for t, m in own.items() if m in _values(found) and t != thread_id]
            if foreign:
                problems.append((G9, f"{when}alist(thread {thread_id!r}) returns a checkpoint "
                                     f"holding the messages of {foreign!r}"))
                break

    for t in ids:
        await judge(t, [own[t]], "")
    await saver.delete_thread(ids[0])
    note(f"adelete_thread({ids[0]!r})")
    for t in ids:
        await judge(t, [] if t == ids[0] else [own[t]], f"after adelete_thread({ids[0]!r}), ")
    for t in ids[1:]:
        await saver.delete_thread(t)
    return problems


# --------------------------------------------------------------------------- G8


async def delete_leaves_nothing(saver: Saver, token: str, note: Note) -> list[Problem]:
    """After ``adelete_thread`` nothing of the thread is read back, by any method."""
    from langgraph.checkpoint.base.id import uuid6

    thread_id = f"{token}:gone"
    for i in range(3):
        await _append(saver, thread_id, token, f"g{i}")
    saver.failing.add(thread_id)  # a failed run leaves pending writes on the latest checkpoint
    try:
        await _append(saver, thread_id, token, "g-failed")
    except PlannedFailure:
        pass
    finally:
        saver.failing.discard(thread_id)
    head = await saver.get_tuple(thread(thread_id))
    child = {**head.checkpoint, "id": str(uuid6(clock_seq=-1))}
    child_config = await saver.put(thread(thread_id, checkpoint_ns=CHILD_NS), child,
                                   {"source": "loop", "step": 0, "parents": {}},
                                   dict(head.checkpoint["channel_versions"]))
    await saver.put_writes(child_config, [("nomnesia_child", "a write")], f"{token}-child")
    kept = [(_cid(t), "") for t in await saver.list(thread(thread_id))] + [
        (_cid(t), CHILD_NS) for t in await saver.list(thread(thread_id, checkpoint_ns=CHILD_NS))]
    note(f"thread {thread_id!r}: {len(kept)} checkpoints (namespaces '' and {CHILD_NS!r}), the "
         f"latest with {len(head.pending_writes or [])} pending writes; then adelete_thread")
    await saver.delete_thread(thread_id)
    problems: list[Problem] = []
    left = _ids(await saver.messages(thread_id))
    if left:
        problems.append((G8, f"after adelete_thread, aget_state still holds {left}"))
    for namespace in ("", CHILD_NS):
        found = await saver.get_tuple(thread(thread_id, checkpoint_ns=namespace))
        if found is not None:
            problems.append((G8, f"after adelete_thread, aget_tuple(namespace {namespace!r}) "
                                 f"returns checkpoint {_cid(found)}"))
        listed = await saver.list(thread(thread_id, checkpoint_ns=namespace))
        if listed:
            problems.append((G8, f"after adelete_thread, alist(namespace {namespace!r}) "
                                 f"returns {len(listed)} checkpoints"))
    for checkpoint_id, namespace in kept:
        found = await saver.get_tuple(thread(thread_id, checkpoint_ns=namespace,
                                             checkpoint_id=checkpoint_id))
        if found is not None:
            problems.append((G8, f"after adelete_thread, checkpoint {checkpoint_id} "
                                 f"(namespace {namespace!r}) is still read by its id"))
            break
    # The same checkpoint put again with no values of its own (new_versions empty): what a
    # delete left behind (writes, channel blobs keyed by thread and version) is read with it.
    again = {**head.checkpoint, "channel_values": {}}
    await saver.put(thread(thread_id), again, {"source": "loop", "step": 0, "parents": {}}, {})
    back = await saver.get_tuple(thread(thread_id, checkpoint_id=again["id"]))
    note(f"the latest checkpoint ({again['id']}) put again, with no channel values or writes")
    if back is not None and back.pending_writes:
        problems.append((G8, f"a checkpoint put again under the id of a deleted one reads "
                             f"back the deleted one's writes: {list(back.pending_writes)!r}"))
    if back is not None and _values(back):
        problems.append((G8, f"a checkpoint put again under the id of a deleted one reads "
                             f"back its messages (channel values the delete left behind): "
                             f"{_values(back)}"))
    await saver.delete_thread(thread_id)
    return problems


# --------------------------------------------------------------------------- G10


async def interrupted_runs(saver: Saver, token: str, note: Note) -> list[Problem]:
    """An interrupted run leaves the thread at its last complete checkpoint."""
    thread_id = f"{token}:cut"
    before = [await _append(saver, thread_id, token, f"c{i}") for i in range(2)]
    problems: list[Problem] = []
    counter = iter(range(10_000))
    wedged = False

    async def judged(how: str, interrupt: Callable[[str], Awaitable[bool]]) -> bool:
        """Interrupt one run as ``how`` says, judge the thread after it; whether the run was
        interrupted (False: it finished first)."""
        nonlocal before, wedged
        n = next(counter)
        new = f"{token}-cut{n}"
        if not await interrupt(new):
            before = [*before, new]
            return False
        kind, got = await within_op_timeout(saver.messages(thread_id))
        if kind != "ok":
            problems.append((G10, f"after a run {how}, aget_state "
                                  + ("did not answer" if kind == "hung" else f"raised {got!r}")))
            wedged = kind == "hung"
            return True
        state = _ids(got)
        allowed = (before, [*before, new])
        note(f"after a run {how}: the thread holds {state}")
        if state not in allowed:
            problems.append((G10, f"after a run {how}, the thread holds {state}: neither the "
                                  f"messages before it {before} nor those and its message "
                                  f"{new!r} once (a partial or doubled effect)"))
        for found in await saver.list(thread(thread_id)):
            if await saver.get_tuple(found.config) is None:
                problems.append((G10, f"after a run {how}, alist returns checkpoint "
                                      f"{_cid(found)}, which aget_tuple cannot read (a torn "
                                      f"checkpoint)"))
                break
        following = f"{token}-after{n}"
        kind, got = await within_op_timeout(saver.invoke(
            thread_id, [message("user", f"{token} after {n}", following)]))
        if kind != "ok":
            problems.append((G10, f"after a run {how}, the next run "
                                  + ("did not answer" if kind == "hung" else f"raised {got!r}")
                                  + " (an interrupted run must not wedge the thread)"))
            wedged = kind == "hung"
            return True
        after = _ids(await saver.messages(thread_id))
        if after not in [[*a, following] for a in allowed]:
            problems.append((G10, f"after a run {how} and the next run, the thread holds "
                                  f"{after}: not the messages before {before}, its message "
                                  f"{new!r} at most once, then the next run's {following!r}"))
        elif new in state and new not in after:
            problems.append((G1, f"after a run {how}, aget_state returned its message {new!r}, "
                                 f"and after the next run the thread holds {after} without it "
                                 f"(a message a read returned is never lost)"))
        before = after
        return True

    async def failed(new: str) -> bool:
        saver.failing.add(thread_id)
        try:
            kind, got = await within_op_timeout(saver.invoke(
                thread_id, [message("user", f"{token} {new}", new)]))
        finally:
            saver.failing.discard(thread_id)
        if kind == "hung":
            problems.append((G10, "a run whose node failed did not answer"))
        elif kind == "ok" or not isinstance(got, PlannedFailure):
            note(f"a run whose node failed: {got!r}")
        return True

    async def cancelled(new: str, steps: int | None) -> bool:
        entered = asyncio.Event()
        hold = asyncio.Event()
        if steps is None:
            saver.holds[thread_id] = hold
            saver.entered[thread_id] = entered
        run = asyncio.ensure_future(saver.invoke(
            thread_id, [message("user", f"{token} {new}", new)]))
        try:
            if steps is None:
                waiting = asyncio.ensure_future(entered.wait())
                await asyncio.wait({run, waiting}, timeout=settings.op_timeout,
                                   return_when=asyncio.FIRST_COMPLETED)
                waiting.cancel()
            else:
                for _ in range(steps):  # event-loop steps, not a wait for time
                    if run.done():
                        break
                    await asyncio.sleep(0)
            if run.done():
                return False
            run.cancel()
            await within_op_timeout(asyncio.wait({run}))
            return True
        finally:
            saver.holds.pop(thread_id, None)
            saver.entered.pop(thread_id, None)

    await judged("whose node failed", failed)
    if not saver.synchronous and not wedged:
        await judged("cancelled while its node ran", partial(cancelled, steps=None))
        for steps in STEPS:
            if wedged or not await judged(f"cancelled after {steps} event-loop steps",
                                          partial(cancelled, steps=steps)):
                break  # a wedged thread: one wait is proof enough, and each costs the bound
    await within_op_timeout(saver.delete_thread(thread_id))
    return problems


PROMISES: dict[Guarantee, Check] = {G5: newest_first, G6: writes_once, G8: delete_leaves_nothing,
                                    G9: threads_apart, G10: interrupted_runs}
"""Guarantee -> the check of the checkpointer's promise under it."""
