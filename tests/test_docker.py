"""The docker provider on a real Docker engine: ``nox -s docker`` (``.ci/run`` runs it).

Where a Docker engine answers (``DOCKER_HOST``, a GitHub runner) the tests use it;
where none does but ``dockerd`` is installed and the run is root, they start a
private one (``engines.dockerd``): reachable from this machine only, stopped by
its pid at the end. With no registry, the images are built from the installed
wheels (``engines.images``), so the tests pass against any freshly started
daemon. Where no engine can start, every test here skips with the reason.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
import redis

from nomnesia.adapters.engines import DockerProvider, docker_available
from nomnesia.adapters.engines.dockerd import PrivateDaemon, can_start
from nomnesia.suite.contract.errors import BackendUnavailable

pytestmark = [pytest.mark.docker, pytest.mark.xdist_group("docker")]


@pytest.fixture(scope="module")
def docker_host() -> Iterator[str]:
    """The Docker engine the tests use: the one that answers, else a private one."""
    if docker_available():
        yield os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        return
    why = can_start()
    if why is not None:
        pytest.skip(f"no Docker engine answers, and none can be started here: {why}")
    before = os.environ.get("DOCKER_HOST")
    try:
        daemon = PrivateDaemon()
    except BackendUnavailable as exc:  # e.g. a kernel without overlayfs: say so, skip
        pytest.skip(f"no Docker engine answers, and starting one failed: {exc}")
    with daemon:
        os.environ["DOCKER_HOST"] = daemon.host
        try:
            yield daemon.host
        finally:
            if before is None:
                os.environ.pop("DOCKER_HOST", None)
            else:
                os.environ["DOCKER_HOST"] = before


@pytest.fixture(scope="module")
def docker_engines(docker_host: str) -> Iterator[DockerProvider]:
    with DockerProvider() as provider:
        yield provider


def _containers(docker_host: str, prefix: str) -> list[str]:
    import docker

    client = docker.DockerClient(base_url=docker_host)
    try:
        return [c.name for c in client.containers.list(all=True) if c.name.startswith(prefix)]
    finally:
        client.close()


def _alone(**extra: str) -> dict[str, str]:
    """The environment for a child run of its own (not one of this xdist worker's)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_XDIST_WORKER"}
    return {**env, **extra}


def _poll(condition: Callable[[], bool], within: float) -> bool:
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_postgres_has_pgvector(docker_engines: DockerProvider) -> None:
    with psycopg.connect(docker_engines.url("postgres"), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        assert conn.execute("SELECT '[1,2]'::vector <-> '[1,2]'::vector").fetchone() == (0.0,)


@pytest.mark.parametrize("engine", ["redis", "valkey", "redis-search"])
def test_resp_engines_answer(docker_engines: DockerProvider, engine: str) -> None:
    client = redis.Redis.from_url(docker_engines.url(engine))
    try:
        assert client.ping()
        if engine == "redis-search":
            modules = {m[b"name"] for m in client.module_list()}
            assert {b"search", b"ReJSON"} <= modules, modules
    finally:
        client.close()


@pytest.mark.parametrize("engine", ["qdrant", "milvus"])
def test_engines_without_a_local_image_need_a_registry(docker_engines: DockerProvider,
                                                       engine: str) -> None:
    """No wheel ships a Qdrant server, and Milvus's does not fit an image: official only."""
    try:
        url = docker_engines.url(engine)
    except BackendUnavailable as exc:
        assert "cannot be pulled" in str(exc), exc
        pytest.skip(f"{engine}: {exc}")
    assert url.startswith("http://")


def test_parallel_providers_get_their_own_containers(docker_host: str) -> None:
    """Two providers, as two xdist workers: each its own Redis, named by worker."""
    first, second = DockerProvider(), DockerProvider()
    try:
        os.environ["PYTEST_XDIST_WORKER"] = "gw7"
        a = first.url("redis")
        os.environ["PYTEST_XDIST_WORKER"] = "gw8"
        b = second.url("redis")
    finally:
        os.environ.pop("PYTEST_XDIST_WORKER", None)
        first.close()
        second.close()
    assert a != b
    assert not _containers(docker_host, f"nomnesia-gw7-{os.getpid()}")


@pytest.mark.parametrize("adapter", ["pgvector", "redis"])
def test_the_suite_passes_through_the_docker_provider(docker_host: str, adapter: str,
                                                      tmp_path: Path) -> None:
    """The conformance suite on a stack whose engines are containers, two xdist workers."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--pyargs", "nomnesia.suite", "--adapter", adapter,
         "--backends", "docker", "-n", "2", "-q", "-p", "no:cacheprovider",
         "-p", "no:langsmith_plugin"],
        cwd=tmp_path, env=_alone(DOCKER_HOST=docker_host),
        capture_output=True, text=True, timeout=1200, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout.splitlines()[-1]
    assert not _containers(docker_host, "nomnesia-gw"), "containers outlived the run"


def test_sigkill_of_a_run_leaves_no_container(docker_host: str, tmp_path: Path) -> None:
    """A run killed with its containers up: the provider's watchdog removes them within 10 s."""
    script = tmp_path / "hold.py"
    script.write_text(textwrap.dedent("""
        import sys, time
        from nomnesia.adapters.engines import DockerProvider
        provider = DockerProvider()
        provider.url("redis")
        print(provider.directory, flush=True)
        time.sleep(600)
    """))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                            env=_alone(DOCKER_HOST=docker_host), start_new_session=True)
    assert proc.stdout is not None
    directory = Path(proc.stdout.readline().strip())
    prefix = f"nomnesia-main-{proc.pid}-"
    assert _containers(docker_host, prefix), "the run's container did not start"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert _poll(lambda: not _containers(docker_host, prefix), 10), \
        f"containers left 10 s after SIGKILL: {_containers(docker_host, prefix)}"
    assert _poll(lambda: not directory.exists(), 10), f"{directory} left (image builds)"


@pytest.mark.skipif(can_start() is not None, reason=f"no private daemon here: {can_start()}")
def test_sigkill_of_a_run_that_started_a_daemon_leaves_nothing(tmp_path: Path) -> None:
    """The daemon, its containers, mounts and directory go with the run that started it."""
    script = tmp_path / "daemon.py"
    script.write_text(textwrap.dedent("""
        import time
        import docker
        from nomnesia.adapters.engines.dockerd import PrivateDaemon
        daemon = PrivateDaemon(bridge=False)
        client = docker.DockerClient(base_url=daemon.host)
        from nomnesia.adapters.engines.images import ensure_image
        image = ensure_image(client, "redis")
        client.containers.run(image, command="--save ''", detach=True, network_mode="none")
        print(daemon.dir, flush=True)
        time.sleep(600)
    """))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                            env=_alone(), start_new_session=True)
    assert proc.stdout is not None
    directory = proc.stdout.readline().strip()
    assert directory, "the daemon did not start"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    from nomnesia.adapters.engines._watchdog import daemon_processes

    assert _poll(lambda: not daemon_processes(directory), 10), daemon_processes(directory)
    assert _poll(lambda: not Path(directory).exists(), 10), f"{directory} left behind"
    with open("/proc/self/mountinfo", encoding="utf-8") as mounts:
        assert directory not in mounts.read(), "mounts left behind"
