"""Data survives a reopen: what one store object acknowledged, the next one reads (G1).

An application's store outlives no process: after a restart (or in a second worker) a new
store object opens the same data. A store that tags what it writes with an id of its own
object, or keeps it under a prefix made up per object, reads nothing of it back; no test
that opens one store per test could see that (issue 48: AutoGen's ``RedisMemory``).

A store reaches the same data twice only through the namespace the suite hands it
(``nomnesia.suite.engines.store_namespace()``) and keeps it on close only when
``keep_data()`` says so, as the README shows. So this test opens the store, appends, closes
it with ``keep_data()`` true, opens a second store from the factory in the same namespace,
and reads: every acknowledged append must be there (G1). A factory that never asks for the
namespace is *not applicable*: the suite cannot name its data again (it is exactly the
store the nemesis refuses with its usage sentence).
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator

import pytest

from nomnesia.adapters.engines.session import (
    KEEP_ENV,
    NAMESPACE_ENV,
    namespaces_given,
)

from .base import StoreTests
from .contract import G1
from .core.fresh import Namespace
from .core.loop import suite_test
from .core.profiles import NOT_APPLICABLE
from .core.recorder import LoggedStore, StoreFactory, opened
from .core.violations import expect

__all__ = ["TestReopen"]


@contextlib.contextmanager
def _as_a_worker(namespace: str, *, keep: bool) -> Iterator[None]:
    """The environment a nemesis worker runs in: this namespace, keep the data or not."""
    saved = {name: os.environ.get(name) for name in (NAMESPACE_ENV, KEEP_ENV)}
    os.environ[NAMESPACE_ENV], os.environ[KEEP_ENV] = namespace, "1" if keep else "0"
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class TestReopen(StoreTests):
    """A second store object from the factory reads what the first acknowledged."""

    @pytest.mark.guarantee(G1)
    @suite_test
    async def test_what_one_store_acknowledged_the_next_one_reads(
            self, store: StoreFactory) -> None:
        """Append through one store object, close it keeping its data, read through another.

        Troubleshooting: give every store the namespace from ``store_namespace()`` (its key
        prefix, schema or collection), derive every key from it and the user's id alone
        (never from an id of the store object), and drop the data on close only when
        ``keep_data()`` is false.
        """
        namespace = f"nm{secrets.token_hex(6)}"
        ids = Namespace.new()
        given = namespaces_given()
        contents = [f"{ids.token} kept across a reopen {i}" for i in range(3)]
        with _as_a_worker(namespace, keep=True):
            async with opened(store) as first:
                s = LoggedStore(first, ids=ids)
                for content in contents:
                    await s.append_message("ann", "user", content)
        if namespaces_given() == given:
            pytest.skip(f"{NOT_APPLICABLE}: the store factory never asked for "
                        "nomnesia.suite.engines.store_namespace(), so the suite cannot open "
                        "the same data a second time; it would judge G1 across a reopen")
        with _as_a_worker(namespace, keep=False):
            async with opened(store) as second:
                again = LoggedStore(second, s.log, ids=ids)
                found = await again.get_history("ann", len(contents) + 10)
                if again.can("forget"):
                    await again.forget("ann")
        read = [getattr(entry, "content", None) for entry in found]
        missing = [content for content in contents if content not in read]
        expect(not missing, G1, lambda: (
            f"{len(missing)} of {len(contents)} appends acknowledged by one store object "
            f"were gone when the factory opened a second one in the same namespace "
            f"({namespace!r}, keep_data() true when the first closed): {missing}"),
            s.log, user=ids.user("ann"))
