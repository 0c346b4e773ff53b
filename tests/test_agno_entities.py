"""``--agno-entities`` (issue 46 item 3): agno's per-user entity memory judged with no
interface error on the installed release (3.1.x), and agno #9319 (rows keyed without the
user, as before 3.0.0) planted on it fails under G9.

Mutant checks (each done by hand, each made the named test fail):

- ``UserlessEntities`` removed (the plain ``EntityMemoryStore`` in its place):
  ``test_entity_rows_keyed_without_the_user_fail_g9`` fails (nothing to find);
- ``AgnoEntities.forget`` passing no ``user_id`` on 3.x: ``test_forget_...`` fails (agno 3
  refuses a delete in the ``"user"`` namespace without one, so the history stays);
- ``AgnoEntities.forget`` always passing ``user_id``: ``test_forget_speaks_a_release
  _whose_delete_takes_no_user`` fails (``InterfaceMismatch``).
"""

from __future__ import annotations

import asyncio
import importlib
import re
from functools import partial
from typing import Any

import pytest
from interface_runs import SUITE, findings_only, quiet_ini  # tests/ is on sys.path

pytest.importorskip("agno.learn")
pytest.importorskip("google.adk.memory")  # memory_protocol_stores imports it
# Imported once here, before pytester snapshots sys.modules: SQLAlchemy imported anew by an
# in-process run breaks its own caches ("'InternalTraversal' object is not callable").
for _library in ("sqlalchemy", "sqlalchemy.pool", "agno.db.sqlite", "agno.learn"):
    importlib.import_module(_library)

pytest_plugins = ("pytester",)

_findings_only = partial(findings_only, also=("NotRecorded", "Misconfigured"))
"""This file's runs: findings only (and never `NotRecorded`, `Misconfigured`)."""

SUBSET = ("test_contract or test_forget or test_users_are_isolated or "
          "test_search_returns_at_most_k or test_unknown_user_is_empty or "
          "test_search_finds_exact_content")


@pytest.fixture(autouse=True)
def _quiet_ini(pytester: pytest.Pytester) -> None:
    quiet_ini(pytester)


def test_agno_entities_is_judged_with_no_interface_error(pytester: pytest.Pytester) -> None:
    """The memory profile on agno 3's ``EntityMemoryStore`` (SQLite in memory): contract,
    forget, isolation and search pass."""
    result = pytester.inline_run(*SUITE, "--agno-entities",
                                 "nomnesia.suite.examples:agno_entities", "-k", SUBSET)
    assert not _findings_only(result)
    passed, _, _ = result.listoutcomes()
    assert len(passed) >= 8, [r.nodeid for r in passed]


def test_agno_entities_profile_line(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*SUITE, "--agno-entities",
                                "nomnesia.suite.examples:agno_entities", "-k",
                                "test_unknown_user_is_empty")
    result.stdout.fnmatch_lines(["*nomnesia profile memory (declared)*"])
    result.assert_outcomes(passed=1)


def test_entity_rows_keyed_without_the_user_fail_g9(pytester: pytest.Pytester) -> None:
    """agno #9319's mechanism, planted on 3.x: the isolation test finds it under G9, with
    nothing about agno special-cased in the suite."""
    result = pytester.inline_run(*SUITE, "--agno-entities",
                                 "memory_protocol_stores:userless_entities", "-k",
                                 "test_users_are_isolated")
    failures = _findings_only(result)
    assert len(failures) == 1, failures
    assert re.search(r"^G9 isolation", next(iter(failures.values())).lstrip(), re.M), failures


def _history_after_forget(factory: Any) -> tuple[Any, ...]:
    from nomnesia.suite.interfaces import agno_entities

    async def body() -> tuple[Any, ...]:
        async with agno_entities.open_store(factory) as store:
            for user in ("ann", "bob"):
                for i in range(3):
                    await store.append_message(user, "assistant" if i % 2 else "user",
                                               f"{user} said {i}")
            before = await store.get_history("ann", 2)
            found = await store.search("ann", "ann said 1", k=5)
            await store.forget("ann")
            return before, found, await store.get_history("ann"), await store.get_history("bob")

    return asyncio.run(body())


def test_forget_deletes_one_users_entity_and_reads_keep_agnos_order() -> None:
    from nomnesia.suite.examples import agno_entities

    before, found, after, bob = _history_after_forget(agno_entities)
    assert before == [{"role": "assistant", "content": "ann said 1"},
                      {"role": "user", "content": "ann said 2"}]
    assert found == [{"role": "assistant", "content": "ann said 1"}]
    assert after == []
    assert [m["content"] for m in bob] == ["bob said 0", "bob said 1", "bob said 2"]


def test_forget_speaks_a_release_whose_delete_takes_no_user() -> None:
    """agno 2.x's ``adelete(entity_id, entity_type, namespace)`` takes no ``user_id``
    (3.0.0 added it, keyword-only): the mapping reads the signature, as it must to run the
    known-bugs row on 2.9.0."""
    from agno.learn import EntityMemoryStore

    from nomnesia.suite.examples import agno_entities

    calls: list[tuple[Any, ...]] = []

    class TwoX(EntityMemoryStore):
        async def adelete(self, entity_id: str, entity_type: str,  # type: ignore[override]
                          namespace: str | None = None) -> bool:
            calls.append((entity_id, entity_type, namespace))
            return True

    _history_after_forget(lambda: TwoX(config=agno_entities().config))
    assert calls == [("nomnesia", "conversation", "user")]


def test_a_store_with_a_model_is_a_usage_stop() -> None:
    from nomnesia.suite.examples import agno_entities as factory
    from nomnesia.suite.interfaces import agno_entities

    def with_model() -> Any:
        store = factory()
        store.config.model = object()  # never called: the mapping stops first
        return store

    async def body() -> None:
        async with agno_entities.open_store(with_model) as store:
            await store.append_message("ann", "user", "x")

    with pytest.raises(agno_entities.Misconfigured, match="supersession judge"):
        asyncio.run(body())
