"""Fixtures shared by the project's own tests: one set of real engines per xdist worker.

``engines`` starts nothing until a test asks for a URL, so tests that need no
engine cost nothing, and the whole set stops (directory included) when the
session ends. Tests share these engines: each must use its own namespace
(schema, key prefix, collection) and clean it up.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from nomnesia.adapters.engines import EmbeddedProvider, ExternalProvider, Provider

# Imported once per process, before any test: ``pytester.inline_run`` drops the modules a
# run imported when it ends, and SQLAlchemy imported again beside its compiled extensions
# (which the interpreter keeps) breaks the next test that uses it ("'InternalTraversal'
# object is not callable"): an order-dependent failure that xdist's scheduling hid.
with contextlib.suppress(ImportError):  # the project's tests without the interfaces extra
    import sqlalchemy  # noqa: F401


@pytest.fixture(scope="session")
def engines() -> Iterator[EmbeddedProvider]:
    """Embedded engines for this worker: ``engines.url("postgres")``, ``"redis"`` ..."""
    provider = EmbeddedProvider()
    try:
        yield provider
    finally:
        provider.close()


def redis_leftovers(url: str) -> list[str]:
    """Keys left in any database of a Redis/Valkey server (for 'leaves nothing behind' checks)."""
    import redis

    client = redis.Redis.from_url(url)
    try:
        found: list[str] = []
        for db, info in client.info("keyspace").items():
            found.append(f"{db}: {info}")
        return found
    finally:
        client.close()


def postgres_leftovers(url: str) -> list[str]:
    """User schemas, and tables in ``public``, left on a PostgreSQL server."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT n.nspname || coalesce('.' || c.relname, '') FROM pg_namespace n "
            "LEFT JOIN pg_class c ON c.relnamespace = n.oid AND n.nspname = 'public' "
            "  AND c.relkind IN ('r', 'p', 'v', 'm', 'S') "
            "WHERE n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema' "
            "  AND (n.nspname <> 'public' OR c.relname IS NOT NULL) ORDER BY 1").fetchall()
    return [row[0] for row in rows]


@pytest.fixture(scope="session")
def external_engines() -> Iterator[Provider]:
    """An external provider over a Redis and a PostgreSQL started here, outside any store.

    At session end the servers must hold nothing: whatever a test wrote through
    the external provider, it had to clean up, as it must on a user's staging server.
    """
    servers = EmbeddedProvider()
    try:
        urls = servers.urls("postgres", "redis")
        provider = ExternalProvider({"NOMNESIA_POSTGRES_URL": urls["postgres"],
                                     "NOMNESIA_REDIS_URL": urls["redis"]})
        try:
            yield provider
        finally:
            provider.close()
        leftovers = redis_leftovers(urls["redis"]) + postgres_leftovers(urls["postgres"])
        assert not leftovers, f"tests left data on the external servers: {leftovers}"
    finally:
        servers.close()


@pytest.fixture
def suite_args(pytester: pytest.Pytester) -> tuple[str, ...]:
    """The arguments of an inner run of the conformance suite (``pytester.inline_run(
    *suite_args, "--store", ...)``), in a pytester whose ini is neutral: the inner run
    must not read this project's ini, and pytest-asyncio warns without a loop scope. No
    cache (the runs are throwaway) and no random order (a failure must replay)."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    return ("--pyargs", "nomnesia.suite", "-p", "no:cacheprovider", "-p", "no:randomly")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Make ``--dist loadgroup`` honour ``xdist_group`` again under pytest 9.2.

    pytest-xdist (3.8) names a test's group by appending ``@group`` to ``item._nodeid``;
    pytest 9.2 keeps the node id in ``item._id``, so the suffix is lost and every grouped
    test goes to any worker: module fixtures meant to run once (test_cli's ``runs``) ran
    once per worker, and tests meant to share one engine started one each. This sets the
    suffix where pytest now reads it, only on an xdist worker of a loadgroup run, and only
    when xdist's own suffix is missing (an older pytest, or a fixed xdist, needs nothing).
    """
    if not getattr(config.option, "loadgroup", False):  # no xdist, or not its worker
        return
    try:
        from _pytest.nodes import coerce_node_id
    except ImportError:  # a pytest before 9.2: xdist's own suffix works
        return
    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        suffix = "@" + "_".join(names)
        if names and not item.nodeid.endswith(suffix):
            item._id = coerce_node_id(item.nodeid + suffix)  # type: ignore[attr-defined]
