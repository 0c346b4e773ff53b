"""Targeted reproductions of single causes, run on the library through its adapter.

Each probe opens a fresh store, does the few calls of its cause's
reproduction and returns the evidence (a sentence) when the defect shows, or
``None`` when it does not. They back findings the suite reaches only in some
runs or only once every adversarial input is tried on its own (mem0's ``'*'``),
and they are what ``report`` prints as the one-line reproduction's proof.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from .causes import causes_for

__all__ = ["HUGE", "PROBES", "run_probes"]

Opener = Callable[[], AbstractAsyncContextManager[Any]]
Probe = Callable[[Opener], Awaitable[str | None]]


def _content(entry: Any) -> Any:
    """An entry's content: an ``Entry``'s attribute, or the key of a dict that an interface
    mapping returns (``--mem0-memory``, ``--agent-framework-history``)."""
    return entry["content"] if isinstance(entry, dict) else entry.content


async def wildcard_forget(open_store: Opener) -> str | None:
    async with open_store() as s:
        await s.append_message("ann", "user", "ann's secret")
        await s.append_message("bob", "user", "bob's secret")
        await s.forget("*")
        left = len(await s.get_history("ann", 100)) + len(await s.get_history("bob", 100))
    return "forget('*') deleted the entries of 'ann' and 'bob'" if left == 0 else None


async def wildcard_read(open_store: Opener) -> str | None:
    async with open_store() as s:
        await s.append_message("ann", "user", "ann's secret")
        await s.append_message("bob", "user", "bob's secret")
        entries = await s.get_history("*", 100)
        # Entries of the full profile carry their user id; an interface's carry only content.
        seen = {e.user_id if hasattr(e, "user_id") else
                {"ann's secret": "ann", "bob's secret": "bob"}.get(_content(e), "?")
                for e in entries}
    if seen & {"ann", "bob"}:
        return f"get_history('*') returned the entries of {sorted(seen)}"
    return None


async def trimmed_user_id(open_store: Opener) -> str | None:
    async with open_store() as s:
        await s.append_message("ann ", "user", "written for 'ann '")
        hits = [_content(e) for e in await s.get_history("ann", 10)]
    return f"get_history('ann') returned {hits!r}" if hits else None


async def _refused(open_store: Opener, user_id: str) -> str | None:
    """The evidence when the library rejects a user id the contract accepts (any non-empty str)."""
    async with open_store() as s:
        try:
            await s.append_message(user_id, "user", "x")
        except ValueError as exc:
            return f"append_message({user_id!r}, ...) raised {type(exc).__name__}: {exc}"
    return None


async def whitespace_user_id(open_store: Opener) -> str | None:
    return await _refused(open_store, 'say "hi"')


async def system_dropped(open_store: Opener) -> str | None:
    async with open_store() as s:
        e = await s.append_message("ann", "system", "be brief")
        live = await s.get_history("ann", 10)
    if e is None:  # an interface mapping: append returns nothing, the content must be live
        if not any(_content(x) == "be brief" for x in live):
            return f"append_message('ann', 'system', ...) returned; get_history: {live!r}"
    elif not any(x.id == e.id for x in live):
        return f"append_message('ann', 'system', ...) returned {e.id!r}; get_history: {live!r}"
    return None


async def history_keeps_forgotten(open_store: Opener) -> str | None:
    async with open_store() as s:
        await s.append_message("ann", "user", "forget me")
        await s.forget("ann")
        report = await s.consistent_state("ann")
    return None if report else str(report).replace("\n", " ")


async def coerced_user_id(open_store: Opener) -> str | None:
    async with open_store() as s:
        try:
            await s.append_message(1, "user", "for the int 1")
        except (TypeError, ValueError):
            return None
        hits = [_content(e) for e in await s.get_history("1", 10)]
    return f"append_message(1, ...) was accepted; get_history('1') returned {hits!r}"


async def dot_in_user_id(open_store: Opener) -> str | None:
    return await _refused(open_store, "a.b")


async def nul_content(open_store: Opener) -> str | None:
    async with open_store() as s:
        try:
            await s.append_message("ann", "user", "a\x00b")
        except Exception as exc:  # the libraries raise driver errors, not ValueError
            return f"append_message('ann', 'user', 'a\\x00b') raised {type(exc).__name__}: {exc}"
    return None


async def nul_poisons(open_store: Opener) -> str | None:
    async with open_store() as s:
        with contextlib.suppress(Exception):  # the refusal itself is nul_content's finding
            await s.append_message("ann", "user", "a\x00b")
        try:
            await s.get_history("bob", 10)
        except Exception as exc:
            return f"after the refused NUL, get_history('bob') raised {type(exc).__name__}"
    return None


async def threads_local_qdrant(open_store: Opener) -> str | None:
    """mem0 without the adapter's lock: concurrent add and get_all on local Qdrant."""
    from .mem0 import factory_unlocked  # function-level: mem0 is an optional extra

    async with factory_unlocked() as s:
        memory = s.memory
        for _ in range(5):
            calls = [memory.add([{"role": "user", "content": f"m{i}"}], user_id="u", infer=False)
                     for i in range(20)]
            calls += [memory.get_all(filters={"user_id": "u"}, top_k=100) for _ in range(20)]
            results = await asyncio.gather(*calls, return_exceptions=True)
            errors = [r for r in results if isinstance(r, BaseException)]
            if errors:
                first = errors[0]
                return (f"{len(errors)} of {len(calls)} concurrent calls raised, first "
                        f"{type(first).__name__}: {first}")
    return None


async def repeated_turn_dropped(open_store: Opener) -> str | None:
    """The same non-user turn twice in a row (a tool answering "OK" twice): both appended?"""
    async with open_store() as s:
        await s.append_message("ann", "user", "run the tests twice")
        for _ in range(2):
            await s.append_message("ann", "tool", "OK")
        kept = [_content(e) for e in await s.get_history("ann", 10)]
    if kept.count("OK") < 2:
        return f"two acknowledged appends of ('tool', 'OK'); get_history: {kept!r}"
    return None


async def foreign_memory_id(open_store: Opener) -> str | None:
    """agno: a write for bob carrying ann's memory id, made on the adapter's own manager.

    The adapter never passes a memory id (SPEC's message ids are per user), so no suite
    call can; the probe makes the one call a caller with a reused id would, through agno's
    public ``add_user_memory``, on the store the suite opened.
    """
    from agno.db.schemas.memory import UserMemory  # function-level: agno is an optional extra

    async with open_store() as s:
        add = s.manager.add_user_memory
        ann_id = await asyncio.to_thread(add, UserMemory(memory="ann's note"), "ann")
        await asyncio.to_thread(add, UserMemory(memory="bob's note", memory_id=ann_id), "bob")
        ann = [_content(e) for e in await s.get_history("ann", 10)]
        bob = [_content(e) for e in await s.get_history("bob", 10)]
    if "ann's note" not in ann:
        return (f"after bob's add_user_memory with ann's memory id, get_history('ann') is "
                f"{ann!r} and get_history('bob') is {bob!r}")
    return None


HUGE = {"2**31": 2**31, "2**63-1": 2**63 - 1, "2**64": 2**64, "10**30": 10**30}
"""The suite's huge ``limit``/``k`` values (``nomnesia.suite.test_limits.HUGE``)."""


def _library_calls(s: Any, user: str, value: int) -> dict[str, Callable[[], Awaitable[Any]]]:
    """The library's own paged reads with ``value`` passed straight through (no clamp)."""
    if hasattr(s, "memory"):  # mem0
        return {"AsyncMemory.search(top_k=)": lambda: s.memory.search(
                    "note", top_k=value, filters={"user_id": user}),
                "AsyncMemory.get_all(top_k=)": lambda: s.memory.get_all(
                    filters={"user_id": user}, top_k=value)}
    if hasattr(s, "vectors"):  # langchain-postgres
        return {"PGVectorStore.asimilarity_search(k=)": lambda: s.vectors.asimilarity_search(
            "note", k=value, filter={"user_id": user})}
    if hasattr(s, "index"):  # llama-index
        return {"VectorIndexRetriever.aretrieve (similarity_top_k=)":
                lambda: s.index.as_retriever(similarity_top_k=value).aretrieve("note")}
    ns = s._ns(user)  # LangGraph
    return {"BaseStore.asearch(query=, limit=)": lambda: s.store.asearch(
                ns, query="note", limit=value),
            "BaseStore.asearch(limit=)": lambda: s.store.asearch(ns, limit=value)}


async def huge_limits(open_store: Opener) -> str | None:
    """The library's search/list called with the suite's huge k/limit, past the adapter's clamp.

    The adapters clamp ``limit`` and ``k`` (SPEC.md: a store clamps them itself),
    so ``test_limits.py`` passes on every audit; this shows what the clamp
    protects against. Each call is bounded (a library that allocates for ``k``
    would show as a timeout, not as a stuck run).
    """
    failed = []
    async with open_store() as s:
        await s.append_message("ann", "user", "a note")
        for name, value in HUGE.items():
            for call, run in _library_calls(s, "ann", value).items():
                try:
                    await asyncio.wait_for(run(), 30)
                except TimeoutError:
                    failed.append(f"{call} with {name} did not return within 30 s")
                except Exception as exc:
                    failed.append(f"{call} with {name} raised {type(exc).__name__}: "
                                  f"{str(exc).splitlines()[0][:120] if str(exc) else ''}")
        try:  # the store still answers afterwards (no poisoned connection)
            await s.get_history("ann", 10)
        except Exception as exc:
            failed.append(f"afterwards get_history('ann') raised {type(exc).__name__}")
    return "; ".join(failed) or None


PROBES: dict[str, Probe] = {p.__name__: p for p in (
    wildcard_forget, wildcard_read, trimmed_user_id, whitespace_user_id, system_dropped,
    history_keeps_forgotten, coerced_user_id, dot_in_user_id, nul_content, nul_poisons,
    threads_local_qdrant, huge_limits, repeated_turn_dropped, foreign_memory_id)}


async def run_probes(audit: str, open_store: Opener) -> dict[str, str | None]:
    """Every probe of ``audit``'s causes: cause key to evidence (None: not reproduced)."""
    out: dict[str, str | None] = {}
    for cause in causes_for(audit):
        if cause.probe is None:
            continue
        try:
            out[cause.key] = await asyncio.wait_for(PROBES[cause.probe](open_store), 120)
        except Exception as exc:  # a probe that crashes says so, it does not hide the rest
            out[cause.key] = None
            print(f"probe {cause.probe} on {audit} raised {type(exc).__name__}: {exc}")
    return out
