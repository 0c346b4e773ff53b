"""Engines as containers, through testcontainers.

Container specs are plain data (``SPECS``) so they can be checked without a
Docker engine; ``DockerProvider`` turns a spec into a running container with a
readiness wait. Names carry the xdist worker and pid, so parallel workers and
parallel runs never collide.

Images are settings. By default (``NOMNESIA_DOCKER_IMAGES=auto``) an engine
runs from its official image (``SPECS``, or ``NOMNESIA_DOCKER_IMAGE_<ENGINE>``)
when the Docker engine has it or can pull it, else from an image built here from
the installed wheels (``images.py``, started as ``LOCAL_SPECS`` say);
``official`` or ``local`` force one. Ryuk (testcontainers' reaper) removes the
containers of a SIGKILLed run where its image can be had; where it cannot (no
registry), it is turned off and the provider's own watchdog removes them. The
watchdog watches every container either way, and ``close()`` stops them all.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from nomnesia.suite.contract.errors import BackendUnavailable

from ._base import TOPOLOGIES, Provider
from ._proc import Watchdog, run_owners
from .images import ensure_image
from .resp_part import REDIS_MEMORY_FLAGS

__all__ = ["LOCAL_SPECS", "SPECS", "ContainerSpec", "DockerProvider", "build_container",
           "choose_image", "container_name", "docker_available"]

DOCKER_HINT = "pip install 'nomnesia[docker]'"
READY_TIMEOUT = 180
"""Seconds; Milvus standalone takes a minute on a cold CI runner."""


@dataclass(frozen=True)
class ContainerSpec:
    """One engine's image, port and readiness condition."""

    engine: str
    image: str
    port: int
    scheme: str
    """``redis``, ``postgresql`` or ``http``: how the URL is spelled."""
    log_ready: str | None = None
    """A log line that means ready (regex)."""
    log_times: int = 1
    """How often that line must appear: PostgreSQL's image logs it once for the
    throwaway server that runs init scripts, then for the real one."""
    http_ready: tuple[int, str] | None = None
    """(container port, path) that answers 200 when ready."""
    env: dict[str, str] = field(default_factory=dict)
    command: str | None = None
    extra_ports: tuple[int, ...] = ()
    path: str = ""
    """URL path: ``/0`` for a Redis database, ``/db`` for PostgreSQL."""
    userinfo: str = ""

    def url(self, host: str, port: int) -> str:
        auth = f"{self.userinfo}@" if self.userinfo else ""
        return f"{self.scheme}://{auth}{host}:{port}{self.path}"


_MEMORY = " ".join(REDIS_MEMORY_FLAGS)  # as embedded: bounded, never evicting (G1)

SPECS: dict[str, ContainerSpec] = {
    spec.engine: spec
    for spec in (
        ContainerSpec(
            "postgres", "pgvector/pgvector:pg17", 5432, "postgresql",
            log_ready=r"database system is ready to accept connections", log_times=2,
            env={"POSTGRES_USER": "postgres", "POSTGRES_PASSWORD": "nomnesia",
                 "POSTGRES_DB": "postgres", "POSTGRES_HOST_AUTH_METHOD": "trust"},
            command="postgres -c fsync=off -c synchronous_commit=on -c full_page_writes=on",
            path="/postgres", userinfo="postgres:nomnesia",
        ),
        ContainerSpec("redis", "redis:8", 6379, "redis", log_ready=r"Ready to accept connections",
                      command="redis-server --save '' --appendonly no " + _MEMORY, path="/0"),
        ContainerSpec("redis-search", "redis/redis-stack-server:latest", 6379, "redis",
                      log_ready=r"Ready to accept connections", env={"REDIS_ARGS": _MEMORY},
                      path="/0"),
        ContainerSpec("valkey", "valkey/valkey-bundle:latest", 6379, "redis",
                      log_ready=r"Ready to accept connections", path="/0"),
        ContainerSpec("qdrant", "qdrant/qdrant:latest", 6333, "http",
                      http_ready=(6333, "/readyz"), extra_ports=(6334,)),
        *(ContainerSpec(
            engine, "milvusdb/milvus:v2.6.6", 19530, "http",
            log_ready=r"Welcome to use Milvus!", http_ready=(9091, "/healthz"),
            env={"ETCD_USE_EMBED": "true", "ETCD_DATA_DIR": "/var/lib/milvus/etcd",
                 "COMMON_STORAGETYPE": "local", "DEPLOY_MODE": "STANDALONE"},
            command="milvus run standalone", extra_ports=(9091,),
        ) for engine in ("milvus", "milvus-server")),
    )
}
"""PostgreSQL is pinned to pg17 because pgvector publishes images per major
version and pg17 is the newest with a stable tag everywhere; the embedded
engine covers PostgreSQL 18. Its flags are the embedded ones (see
``postgres_part.DURABLE_ON_PROCESS_KILL``): a killed container keeps acknowledged commits.
``qdrant-edge`` has no container: it is a directory (see ``DockerProvider``).
``milvus`` and ``milvus-server`` are the same standalone image: under Docker there is
no Milvus Lite, and a stack that asks for both gets two containers, never a shared one."""


LOCAL_SPECS: dict[str, ContainerSpec] = {
    spec.engine: spec
    for spec in (
        ContainerSpec("postgres", "nomnesia-local/postgres:18-pgvector", 5432, "postgresql",
                      log_ready=r"database system is ready to accept connections",
                      command="-c fsync=off -c synchronous_commit=on -c full_page_writes=on",
                      path="/postgres", userinfo="postgres"),
        *(ContainerSpec(engine, f"nomnesia-local/{engine}:{version}", 6379, "redis",
                        log_ready=r"Ready to accept connections", path="/0",
                        command=f"--save '' --appendonly no --protected-mode no {_MEMORY}{extra}")
          for engine, version, extra in (
              ("redis", "8.2", ""), ("valkey", "9.1", ""),
              ("redis-search", "8.2", " --loadmodule /opt/modules/redisearch.so "
                                      "--loadmodule /opt/modules/rejson.so"))),
    )
}
"""The engines an image can be built for here (``images.LOCAL_IMAGES``), started alike:
the same durability and memory flags as the official images get above."""


def choose_image(engine: str, client: Any, *, build_dir: Path | None = None) -> ContainerSpec:
    """The spec to start ``engine`` with, by ``NOMNESIA_DOCKER_IMAGES`` (see the module)."""
    import docker.errors

    mode = os.environ.get("NOMNESIA_DOCKER_IMAGES", "auto").strip() or "auto"
    if mode not in ("auto", "official", "local"):
        raise BackendUnavailable(engine, f"NOMNESIA_DOCKER_IMAGES must be auto, official or "
                                 f"local, not {mode!r}")
    official = SPECS[engine]
    image = os.environ.get(f"NOMNESIA_DOCKER_IMAGE_{engine.upper().replace('-', '_')}")
    if image:
        official = replace(official, image=image)
    if mode != "local":
        try:
            client.images.get(official.image)
            return official
        except docker.errors.ImageNotFound:
            pass
        try:
            client.images.pull(official.image)
            return official
        except docker.errors.APIError as exc:
            if mode == "official" or engine not in LOCAL_SPECS:
                raise BackendUnavailable(engine, f"image {official.image} is not on the Docker "
                                         f"engine and cannot be pulled ({exc})") from exc
    ensure_image(client, engine, build_dir=build_dir)
    return LOCAL_SPECS[engine]


def _ryuk_available(client: Any) -> bool:
    """Whether testcontainers' reaper can run: its image is there or can be pulled."""
    import docker.errors
    from testcontainers.core.config import testcontainers_config

    try:
        client.images.get(testcontainers_config.ryuk_image)
        return True
    except docker.errors.ImageNotFound:
        pass
    try:
        client.images.pull(testcontainers_config.ryuk_image)
        return True
    except docker.errors.APIError:
        return False


def container_name(engine: str, *, worker: str | None = None, pid: int | None = None) -> str:
    """``nomnesia-<worker>-<pid>-<engine>``: unique per xdist worker and per run."""
    worker = worker or os.environ.get("PYTEST_XDIST_WORKER", "main")
    pid = os.getpid() if pid is None else pid
    return f"nomnesia-{worker}-{pid}-{engine}"


def _unix_socket() -> str | None:
    """The Docker engine's unix socket, for the watchdog (None: it is reached otherwise)."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    return host.removeprefix("unix://") if host.startswith("unix://") else None


_docker_answer: dict[tuple[float, str | None], bool] = {}


def docker_available(timeout: float = 1.0) -> bool:
    """Whether a Docker engine answers a ping within ``timeout`` (cached per ``DOCKER_HOST``)."""
    key = (timeout, os.environ.get("DOCKER_HOST"))
    if key in _docker_answer:
        return _docker_answer[key]
    try:
        import docker
    except ImportError:
        return False
    try:
        client = docker.from_env(timeout=max(1, round(timeout)))
        try:
            answer = bool(client.ping())
        finally:
            client.close()
    except Exception:
        answer = False
    _docker_answer[key] = answer
    return answer


def build_container(spec: ContainerSpec, name: str) -> Any:
    """The testcontainers container for ``spec``, not started (building one contacts Docker)."""
    try:
        from testcontainers.core.container import DockerContainer
        from testcontainers.core.wait_strategies import (
            CompositeWaitStrategy,
            HttpWaitStrategy,
            LogMessageWaitStrategy,
        )
    except ImportError as exc:
        raise BackendUnavailable(spec.engine, "the docker provider needs testcontainers",
                                 install_hint=DOCKER_HINT) from exc
    container = DockerContainer(spec.image).with_name(name)
    container.with_exposed_ports(spec.port, *spec.extra_ports)
    for key, value in spec.env.items():
        container.with_env(key, value)
    if spec.command:
        container.with_command(spec.command)
    strategies: list[Any] = []
    if spec.log_ready:
        strategies.append(LogMessageWaitStrategy(spec.log_ready, times=spec.log_times))
    if spec.http_ready:
        strategies.append(HttpWaitStrategy(*spec.http_ready))
    for strategy in strategies:
        strategy.with_startup_timeout(READY_TIMEOUT)
    if len(strategies) == 1:
        container.waiting_for(strategies[0])
    elif strategies:
        container.waiting_for(CompositeWaitStrategy(*strategies))
    return container


class DockerProvider(Provider):
    """One container per engine, started on first use, stopped by ``close()``."""

    kind = "docker"

    def __init__(self) -> None:
        super().__init__()
        self._containers: list[Any] = []
        self._containers_lock = threading.Lock()
        self._dir: Path | None = None
        self._watchdog: Any = None

    @property
    def directory(self) -> Path | None:
        """The private directory for in-process engines (Qdrant Edge), once one needed it."""
        return self._dir

    def _private_dir(self) -> Path:
        """This provider's directory (Qdrant Edge's shards, image builds), made on first use,
        with the watchdog that removes it, and our containers, if this process dies."""
        with self._containers_lock:
            if self._dir is None:
                watchdog = Watchdog(run_owners())  # first: nothing may exist that no one removes
                try:
                    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
                    path = Path(tempfile.mkdtemp(prefix=f"nomnesia-docker-{worker}-"))
                    watchdog.watch_dir(path)
                except BaseException:
                    watchdog.close(cleanup=True)
                    raise
                self._watchdog, self._dir = watchdog, path
            return self._dir

    def _edge_dir(self) -> str:
        """Qdrant Edge runs in the caller's process: its shards go in the private directory."""
        if importlib.util.find_spec("qdrant_edge") is None:
            raise BackendUnavailable("qdrant-edge", "the Qdrant Edge engine is not installed",
                                     install_hint="pip install qdrant-edge-py")
        edge = self._private_dir() / "qdrant-edge"
        edge.mkdir(exist_ok=True)
        return str(edge)

    def _start(self, engine: str) -> str:
        if engine == "qdrant-edge":
            return self._edge_dir()
        if engine in TOPOLOGIES:
            raise BackendUnavailable(
                engine, "the docker provider runs single engines only; a replicated "
                "topology runs embedded, or give its URL with --backends external "
                "(docs/topologies.md)")
        if not docker_available():
            try:
                import testcontainers  # noqa: F401
            except ImportError as exc:
                raise BackendUnavailable(engine, "the docker provider needs testcontainers",
                                         install_hint=DOCKER_HINT) from exc
            raise BackendUnavailable(
                engine, "the docker provider found no Docker engine that answers (is the daemon "
                "running? DOCKER_HOST set?); use NOMNESIA_BACKENDS=embedded or external instead")
        import docker

        client = docker.from_env()
        try:
            spec = choose_image(engine, client, build_dir=self._private_dir())
            if not _ryuk_available(client):
                from testcontainers.core.config import testcontainers_config

                testcontainers_config.ryuk_disabled = True  # the watchdog removes them instead
        finally:
            client.close()
        container = build_container(spec, container_name(engine))
        try:
            container.start()
        except Exception as exc:
            raise BackendUnavailable(engine,
                                     f"container {spec.image} did not start: {exc}") from exc
        with self._containers_lock:
            self._containers.append(container)
        socket_path = _unix_socket()
        wrapped = getattr(container, "get_wrapped_container", lambda: None)()
        if socket_path and wrapped is not None and self._watchdog is not None:
            self._watchdog.watch_container(socket_path, wrapped.id)
        # A local engine's ports are published on 127.0.0.1 (the private daemon publishes on
        # nothing else); testcontainers would guess a bridge gateway when it thinks it is
        # itself in a container.
        host = "127.0.0.1" if socket_path else container.get_container_host_ip()
        return spec.url(host, int(container.get_exposed_port(spec.port)))

    def _stop(self) -> None:
        with self._containers_lock:
            containers, self._containers = self._containers, []
        for container in containers:
            # Already gone (ryuk, a user): nothing left to release.
            with contextlib.suppress(Exception):
                container.stop()
        with self._containers_lock:
            directory, self._dir = self._dir, None
            watchdog, self._watchdog = self._watchdog, None
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)
        if watchdog is not None:
            watchdog.close(cleanup=directory is not None and directory.exists())
