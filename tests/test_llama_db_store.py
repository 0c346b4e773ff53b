"""``--llama-chat-store`` takes llama-index's ``AsyncDBChatStore`` (``SQLAlchemyChatStore``,
the store behind ``Memory``) as well as a ``BaseChatStore``, told apart by its methods.

Mutant check: with ``is_db_store`` returning False, ``test_sqlalchemy_chat_store_maps``
fails with ``InterfaceMismatch`` (no ``async_add_message``), as the option did before.
"""

from __future__ import annotations

import asyncio

import pytest

llama_sql = pytest.importorskip("llama_index.core.storage.chat_store.sql")

from nomnesia.suite.interfaces import llama_index  # noqa: E402


def _store() -> object:
    return llama_sql.SQLAlchemyChatStore(table_name="chat")


def test_sqlalchemy_chat_store_maps() -> None:
    async def body() -> None:
        async with llama_index.open_store(_store) as store:
            await store.append_message("ann", "user", "hello")
            await store.append_message("ann", "tool", "42")
            await store.append_message("bob", "assistant", "hi bob")
            assert store.db
            assert await store.get_history("ann", 1) == [{"role": "tool", "content": "42"}]
            assert len(await store.get_history("ann", 10)) == 2
            await store.forget("ann")
            assert await store.get_history("ann", 10) == []
            assert await store.get_history("bob", 10) == [{"role": "assistant",
                                                           "content": "hi bob"}]

    asyncio.run(body())


def test_both_shapes_fit_the_option() -> None:
    from llama_index.core.storage.chat_store import SimpleChatStore

    assert llama_index.MAPPED.fits(_store()) and llama_index.is_db_store(_store())
    assert llama_index.MAPPED.fits(SimpleChatStore())
    assert not llama_index.is_db_store(SimpleChatStore())
