"""The engine helper: a ``--store`` factory gets PostgreSQL and Redis URLs from the suite.

A tiny third-party store (the oracle, plus a PostgreSQL and a Redis connection
that it opens from the helper's URLs) runs through the suite in a pytester
session. Every store of the session must get the same URLs (one engine each,
started once), the engines must answer while the session runs, and be gone
when it ends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
import pytest
import redis

from nomnesia.adapters.engines.session import current_session
from nomnesia.adapters.memory import InMemoryStore
from nomnesia.suite import engine_session, engine_url

pytest_plugins = ("pytester",)

SEEN: list[tuple[str, str]] = []


@asynccontextmanager
async def my_store() -> AsyncIterator[InMemoryStore]:
    """What a third party writes: no globals, no atexit, just ask for the URLs."""
    dsn, url = engine_url("postgres"), engine_url("redis")
    SEEN.append((dsn, url))
    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        await conn.execute("SELECT 1")
        client = redis.asyncio.Redis.from_url(url)
        try:
            assert await client.ping()
            async with InMemoryStore() as store:
                yield store
        finally:
            await client.aclose()


def _answers(dsn: str, url: str) -> tuple[bool, bool]:
    try:
        with psycopg.connect(dsn, connect_timeout=2):
            pg = True
    except psycopg.OperationalError:
        pg = False
    try:
        rd = bool(redis.Redis.from_url(url, socket_connect_timeout=2).ping())
    except redis.exceptions.ConnectionError:
        rd = False
    return pg, rd


def test_a_store_factory_gets_one_engine_per_session(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    SEEN.clear()
    reprec = pytester.inline_run(
        "--pyargs", "nomnesia.suite", "-p", "no:cacheprovider", "-p", "no:randomly",
        "--backends", "embedded", "--store", f"{__name__}:my_store",
        "-k", "test_append_returns or test_forget_removes or test_users_are_isolated")
    reprec.assertoutcome(passed=3)
    # One store per test, and one opened first to read the store's profile.
    assert len(SEEN) == 4 and len(set(SEEN)) == 1, SEEN  # one engine each, shared
    dsn, url = SEEN[0]
    assert dsn.startswith("postgresql://") and url.startswith("redis://")
    assert _answers(dsn, url) == (False, False), "the engines outlived the session"


def test_the_fixture_is_the_same_session(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        from nomnesia.suite import engine_url

        def test_it(nomnesia_engines):
            assert nomnesia_engines.url("redis") == engine_url("redis")
    """)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.inline_run("-p", "no:cacheprovider", "--backends", "embedded").assertoutcome(
        passed=1)


def test_a_session_that_asks_for_nothing_starts_nothing(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    reprec = pytester.inline_run(
        "--pyargs", "nomnesia.suite", "-p", "no:cacheprovider", "-p", "no:randomly",
        "--store", "nomnesia.adapters.memory:InMemoryStore", "-k", "test_append_returns")
    reprec.assertoutcome(passed=1)
    config: Any = reprec.getcall("pytest_unconfigure").config
    from nomnesia.suite.plugin import _ENGINES

    assert not config.stash[_ENGINES].started


def test_outside_pytest_open_a_session_yourself() -> None:
    with engine_session("embedded") as engines:
        url = engines.url("redis")
        assert engine_url("redis") == url
        assert redis.Redis.from_url(url).ping()
    assert current_session() is not engines  # the outer (this run's) session is back
    with pytest.raises(RuntimeError, match="closed"):
        engines.url("redis")


def test_each_xdist_worker_gets_its_own_engine(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    out = pytester.path / "urls"
    out.mkdir()
    pytester.makepyfile(f"""
        import os
        import pathlib
        import pytest
        from nomnesia.suite import engine_url

        @pytest.mark.parametrize("i", range(4))
        def test_url(i):
            worker = os.environ["PYTEST_XDIST_WORKER"]
            path = pathlib.Path({str(out)!r}) / f"{{worker}}-{{i}}.url"
            path.write_text(engine_url("redis"))
    """)
    # --dist each: every worker runs every test, so both workers surely start an engine.
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2",
                                           "--dist", "each", "--backends", "embedded")
    result.assert_outcomes(passed=8)
    urls: dict[str, set[str]] = {}
    for path in out.glob("gw*-*.url"):
        urls.setdefault(path.name.split("-")[0], set()).add(path.read_text())
    assert len(urls) == 2, urls
    assert all(len(seen) == 1 for seen in urls.values()), urls  # one engine per worker
    assert len(set().union(*urls.values())) == len(urls), urls  # not shared between workers
