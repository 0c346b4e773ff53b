"""Choosing a provider, the external provider on servers started here, and the Docker specs."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import redis

import nomnesia.adapters.engines as engines_module
from nomnesia.adapters.engines import (
    ENGINES,
    ENV_VARS,
    TOPOLOGIES,
    DockerProvider,
    EmbeddedProvider,
    ExternalProvider,
    Provider,
    docker_available,
    get_provider,
    resolve_kind,
)
from nomnesia.adapters.engines import docker as docker_module
from nomnesia.adapters.engines.docker import SPECS, ContainerSpec, build_container, container_name
from nomnesia.suite.contract.errors import BackendUnavailable
from tests.conftest import postgres_leftovers, redis_leftovers

# -- selection -----------------------------------------------------------------


@pytest.mark.parametrize(("kind", "cls"), [("embedded", EmbeddedProvider),
                                           ("docker", DockerProvider),
                                           ("external", ExternalProvider)])
def test_get_provider_by_name(kind: str, cls: type[Provider]) -> None:
    with get_provider(kind) as provider:
        assert isinstance(provider, cls) and provider.kind == kind


def test_environment_chooses_when_no_argument(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOMNESIA_BACKENDS", "external")
    assert resolve_kind() == "external"
    assert resolve_kind("embedded") == "embedded"


@pytest.mark.parametrize("answers", [True, False])
def test_auto_prefers_docker_when_it_answers(monkeypatch: pytest.MonkeyPatch,
                                             answers: bool) -> None:
    monkeypatch.delenv("NOMNESIA_BACKENDS", raising=False)
    monkeypatch.setattr(engines_module, "docker_available", lambda: answers)
    assert resolve_kind() == ("docker" if answers else "embedded")
    assert resolve_kind("auto") == ("docker" if answers else "embedded")


def test_unknown_kind_names_the_choices() -> None:
    with pytest.raises(ValueError, match="auto, embedded, docker, external"):
        resolve_kind("kubernetes")


def test_auto_here_is_embedded_because_no_docker_answers() -> None:
    if docker_available():
        pytest.skip("a Docker engine answers here")
    assert resolve_kind("auto") == "embedded"


# -- external ------------------------------------------------------------------


def test_external_names_the_missing_variable() -> None:
    provider = ExternalProvider({})
    for engine in ENGINES:
        with pytest.raises(BackendUnavailable) as caught:
            provider.url(engine)
        assert ENV_VARS[engine] in str(caught.value)
        assert caught.value.backend == engine


def test_external_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOMNESIA_QDRANT_URL", "http://qdrant.example:6333")
    with get_provider("external") as provider:
        assert provider.url("qdrant") == "http://qdrant.example:6333"


def test_external_servers_are_used_and_left_clean(external_engines: Provider) -> None:
    """Servers started outside any store, passed by URL; the fixture checks they end up empty."""
    namespace = f"nomnesia_test_{id(external_engines)}"
    with psycopg.connect(external_engines.url("postgres"), autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{namespace}"')
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(f'CREATE TABLE "{namespace}".items (v vector(2))')
        conn.execute(f'INSERT INTO "{namespace}".items VALUES (\'[1,2]\')')
        conn.execute(f'DROP SCHEMA "{namespace}" CASCADE')
    client = redis.Redis.from_url(external_engines.url("redis"))
    try:
        client.set(f"{namespace}:k", "v")
        assert client.get(f"{namespace}:k") == b"v"
        client.delete(f"{namespace}:k")
    finally:
        client.close()


@pytest.mark.parametrize("stack", ["pgvector", "redis"])
async def test_a_store_on_external_servers_leaves_nothing(external_engines: Provider,
                                                         stack: str) -> None:
    """A real stack through the external provider; its servers are empty once it closes."""
    import asyncio

    from nomnesia.adapters import open_store

    async with open_store(stack, provider=external_engines, keep_last=2) as store:
        for i in range(5):
            await store.append_message("alice", "user", f"message {i} about tea")
        assert await store.search("alice", "tea", k=3)
        await store.compact("alice")
        assert await store.get_history("alice")
    urls = {engine: external_engines.url(engine) for engine in ("postgres", "redis")}
    left = (await asyncio.to_thread(redis_leftovers, urls["redis"])
            + await asyncio.to_thread(postgres_leftovers, urls["postgres"]))
    assert not left, f"{stack} left data on the external servers: {left}"


def test_closing_an_external_provider_leaves_the_servers_running(engines: Provider) -> None:
    url = engines.url("redis")
    ExternalProvider({"NOMNESIA_REDIS_URL": url}).close()
    client = redis.Redis.from_url(url)
    try:
        assert client.ping()
    finally:
        client.close()


# -- docker specs (checked without a Docker engine) ----------------------------


def test_every_engine_has_a_container_spec() -> None:
    # qdrant-edge is a directory for an in-process engine, not a server; the
    # topologies run embedded or external (the docker provider refuses them by name).
    assert set(SPECS) == set(ENGINES) - {"qdrant-edge"} - set(TOPOLOGIES)
    assert SPECS["postgres"].image.startswith("pgvector/pgvector:pg")
    assert SPECS["redis"].image == "redis:8"
    assert SPECS["redis-search"].image.startswith("redis/redis-stack-server")
    assert SPECS["valkey"].image.startswith("valkey/valkey-bundle")
    assert SPECS["qdrant"].image.startswith("qdrant/qdrant")
    assert SPECS["milvus"].image.startswith("milvusdb/milvus")
    for spec in SPECS.values():
        assert spec.log_ready or spec.http_ready, f"{spec.engine} has no readiness wait"


def test_container_urls() -> None:
    assert SPECS["redis"].url("localhost", 32768) == "redis://localhost:32768/0"
    assert SPECS["qdrant"].url("localhost", 32769) == "http://localhost:32769"
    assert SPECS["milvus"].url("10.0.0.1", 19530) == "http://10.0.0.1:19530"
    assert (SPECS["postgres"].url("localhost", 5433)
            == "postgresql://postgres:nomnesia@localhost:5433/postgres")


def test_container_names_are_per_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw3")
    name = container_name("redis", pid=42)
    assert name == "nomnesia-gw3-42-redis"
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    assert container_name("redis", pid=42) == "nomnesia-main-42-redis"
    assert container_name("redis", worker="gw0") != container_name("redis", worker="gw1")


class _NoDaemon:
    """Stands in for testcontainers' DockerClient: building a container must not need a daemon."""

    def __init__(self, **kwargs: Any) -> None:
        del kwargs


@pytest.fixture
def offline_testcontainers(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    pytest.importorskip("testcontainers")
    import testcontainers.core.container as tc_container

    monkeypatch.setattr(tc_container, "DockerClient", _NoDaemon)
    yield


@pytest.mark.parametrize("engine", sorted(SPECS))
def test_containers_are_built_from_their_specs(engine: str, offline_testcontainers: None) -> None:
    from testcontainers.core.wait_strategies import (
        CompositeWaitStrategy,
        HttpWaitStrategy,
        LogMessageWaitStrategy,
    )

    spec: ContainerSpec = SPECS[engine]
    container = build_container(spec, container_name(engine, worker="gw1", pid=7))
    assert container.image.endswith(spec.image)
    assert container._name == f"nomnesia-gw1-7-{engine}"
    assert set(container.ports) == {str(port) for port in (spec.port, *spec.extra_ports)}
    assert container.env == spec.env
    assert container._command == spec.command
    wait = container._wait_strategy
    expected = (CompositeWaitStrategy if spec.log_ready and spec.http_ready
                else HttpWaitStrategy if spec.http_ready else LogMessageWaitStrategy)
    assert isinstance(wait, expected)
    if isinstance(wait, LogMessageWaitStrategy):
        assert wait._times == spec.log_times


def test_no_testcontainers_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(docker_module, "docker_available", lambda: False)
    monkeypatch.setitem(sys.modules, "testcontainers", None)
    with DockerProvider() as provider, pytest.raises(BackendUnavailable) as caught:
        provider.url("qdrant")
    assert "pip install 'nomnesia[docker]'" in str(caught.value)


def test_no_docker_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("testcontainers")
    monkeypatch.setattr(docker_module, "docker_available", lambda: False)
    with DockerProvider() as provider, pytest.raises(BackendUnavailable) as caught:
        provider.url("redis")
    message = str(caught.value)
    assert "Docker engine" in message and "NOMNESIA_BACKENDS=embedded" in message


def test_docker_ping_is_quick_and_false_here() -> None:
    import time

    if docker_available():
        pytest.skip("a Docker engine answers here")
    started = time.monotonic()
    assert docker_module.docker_available(timeout=0.5) is False
    assert time.monotonic() - started < 3


# Live Docker: tests/test_docker.py (nox -s docker).


def test_docker_provider_keeps_qdrant_edge_shards_in_a_private_directory() -> None:
    """Qdrant Edge has no container: a directory of the provider's, removed on close."""
    pytest.importorskip("qdrant_edge")
    provider = DockerProvider()
    try:
        edge = Path(provider.url("qdrant-edge"))  # needs no Docker engine
        assert edge.is_dir() and edge.parent == provider.directory
    finally:
        provider.close()
    assert not edge.exists() and provider.directory is None


def test_external_qdrant_edge_is_a_directory_from_the_environment(tmp_path: Path) -> None:
    provider = ExternalProvider({"NOMNESIA_QDRANT_EDGE_DIR": str(tmp_path)})
    assert provider.url("qdrant-edge") == str(tmp_path)


def test_the_docker_provider_refuses_a_topology_by_name() -> None:
    from nomnesia.adapters.engines.docker import DockerProvider

    for engine in ("postgres-ha", "redis-sentinel", "redis-cluster"):
        with pytest.raises(BackendUnavailable, match="single engines only"):
            DockerProvider()._start(engine)
