"""LangGraph's ``BaseStore`` as a store of the ``memory`` profile when it has an index,
else of the ``history`` profile.

What maps to what:

- one store for every user; a user's messages are the items of namespace
  ``("nomnesia", user_id)``;
- ``append_message(u, role, content, message_id=None)`` is ``aput(namespace,
  key, {"role": role, "content": content})``: the key is the caller's
  ``message_id``, else a new UUID (``BaseStore`` takes its key from the caller);
  ``aput`` is an upsert, so a retry with the same key overwrites (and
  ``InMemoryStore`` gives the item a new ``created_at``, moving it to the end);
- ``get_history(u, limit)`` reads every item of the namespace (``asearch``
  pages of 100, by offset), orders them by ``created_at``, the only order a
  ``BaseStore`` keeps (ties stay in the order the store returned them), and
  returns the newest ``limit`` (the library never sees it: the mapping checks it,
  as it does SPEC's own vocabulary);
- ``search(u, query, k)`` is ``asearch(namespace, query=query, limit=k)``, best
  match first; only a store with an index (``index_config``) can search, so
  only it reaches the ``memory`` profile;
- ``forget(u)`` deletes every item of the namespace, one ``adelete`` each:
  ``BaseStore`` has no delete for a namespace.

What it cannot see: compaction (LangMem's summaries are a layer above),
``recover``, and a per-user sequence: ``created_at`` is all there is.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from ..contract.validation import validate_limit, validate_message_id
from ._base import Mapped, contract_role
from ._poison import PoisonedCall, Unserializable, describe_batch

__all__ = ["PAGE", "LangGraphStore", "open_store"]

PAGE = 100
"""Items read per ``asearch`` call while reading a whole namespace."""


def _namespace(user_id: str) -> tuple[str, ...]:
    return ("nomnesia", user_id)


def _entry(item: Any) -> dict[str, str]:
    value = item.value if isinstance(item.value, dict) else {}
    return {"role": str(value.get("role")), "content": str(value.get("content"))}


class LangGraphStore(Mapped):
    """The suite's calls on one LangGraph store: a namespace per user."""

    requires = ("aput", "asearch", "adelete")

    async def __aenter__(self) -> Any:
        store = await self._object()  # made now: whether it has an index decides the profile
        self.nomnesia_profile = "memory" if getattr(store, "index_config", None) else "history"
        return self

    async def append_message(self, user_id: str, role: str, content: str, *,
                             message_id: str | None = None) -> None:
        role = contract_role(role)
        message_id = validate_message_id(message_id)
        key = message_id if message_id is not None else uuid.uuid4().hex
        await (await self._object()).aput(_namespace(user_id), key,
                                          {"role": role, "content": content})

    async def _items(self, user_id: str) -> list[Any]:
        store, items, offset = await self._object(), [], 0
        while True:
            page = await store.asearch(_namespace(user_id), limit=PAGE, offset=offset)
            items.extend(page)
            if len(page) < PAGE:
                return sorted(items, key=lambda item: item.created_at)
            offset += PAGE

    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]:
        limit = validate_limit("limit", limit)
        return [_entry(item) for item in (await self._items(user_id))[-limit:]]

    async def search(self, user_id: str, query: str, k: int = 5) -> list[dict[str, str]]:
        hits = await (await self._object()).asearch(_namespace(user_id), query=query, limit=k)
        return [_entry(item) for item in hits]

    async def forget(self, user_id: str) -> None:
        store = await self._object()
        for item in await self._items(user_id):
            await store.adelete(_namespace(user_id), item.key)

    async def poisoned_batch(self, user_id: str, batch: Sequence[tuple[str, str]],
                             poisoned: int) -> PoisonedCall:
        """``abatch`` of one ``PutOp`` per item of ``batch`` (a new key each), the value of
        put ``poisoned`` holding an object no serializer knows: what a store that keeps
        values as JSON must refuse whole, as ``abatch`` is one call."""
        from langgraph.store.base import PutOp

        values: list[dict[str, Any]] = [{"role": contract_role(role), "content": content}
                                        for role, content in batch]
        values[poisoned]["nomnesia_poison"] = Unserializable()
        ops = [PutOp(_namespace(user_id), uuid.uuid4().hex, value) for value in values]
        store = await self._object()

        async def run() -> object:
            return await store.abatch(ops)

        where = describe_batch(len(ops), poisoned, "value")
        return PoisonedCall(f"{type(store).__name__}.abatch([{where} (PutOps)])", run)


@asynccontextmanager
async def open_store(factory: Callable[..., Any]) -> AsyncIterator[LangGraphStore]:
    async with LangGraphStore(factory) as store:
        yield store


MAPPED = LangGraphStore
"""The mapping, whose ``fits`` says whether an object suits this option."""
