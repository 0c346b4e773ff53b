"""Engine faults for the nemesis: pause, resume, kill and restart an embedded engine.

A store must survive its engines misbehaving, not only its own process: a
PostgreSQL frozen by the scheduler (SIGSTOP), a Redis that crashes and comes
back empty, a PostgreSQL that crashes and replays its WAL. This module does
those things to the engines of an :class:`EmbeddedProvider`, on the same port
and data directory, so clients reconnect to the same URL.

The provider exposes only ``process_groups()`` and ``directory``; each
engine's command line, environment, user and log are read from ``/proc``
(Linux only), and a restarted engine is spawned here like the provider spawns
its own (process group, PDEATHSIG) and stopped by :meth:`EngineControl.close`.
The command line is the provider's own, flags and all (``--loadmodule``,
``--maxmemory``): the provider starts Redis and Valkey with
``--set-proc-title no``, so they leave it in ``/proc`` as it was. On an emulated
CPU (``EmbeddedProvider(emulate_cpu=...)``) it starts with ``qemu-x86_64 -cpu
NAME``: the engine is found past that prefix and restarted with it, so it stays
emulated; qemu-user is the engine's one process, so its pid, group and signals
are the engine's. The Milvus
server gets its ports and etcd settings from its environment, which is why that
is read too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from nomnesia.suite.contract.errors import BackendUnavailable

from ._proc import kill_group, spawn
from .embedded import EmbeddedProvider
from .milvus_part import _milvus_healthy
from .part import children_of as _children
from .part import engine_program
from .part import proc_state as _state

__all__ = ["EngineControl", "continue_stopped"]

_BINARIES = {"postgres": "postgres", "redis": "redis-server", "valkey": "valkey-server",
             "redis-search": "redis-server", "milvus-server": "milvus"}
READY_TIMEOUT = 30.0
_BY_PORT_ONLY = ("milvus-server",)
"""Engines whose port is in their configuration, not their command line: there is one
per provider, so the binary alone finds it."""


@dataclass
class _Engine:
    name: str
    port: int
    argv: list[str]
    uid: int
    gid: int
    cwd: str
    log: str
    pid: int  # process group leader of the running instance
    env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None  # set once we restarted it
    stopped: bool = False
    paused: list[int] = field(default_factory=list)


def _proc_info(pid: int) -> tuple[list[str], int, int, str, str, dict[str, str]]:
    raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    argv = [a.decode() for a in raw.split(b"\0")[:-1 if raw.endswith(b"\0") else None]]
    uid = gid = -1
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            uid = int(line.split()[1])
        elif line.startswith("Gid:"):
            gid = int(line.split()[1])
    cwd = os.readlink(f"/proc/{pid}/cwd")
    log = os.readlink(f"/proc/{pid}/fd/1")
    env = dict(item.decode(errors="surrogateescape").partition("=")[::2]
               for item in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") if item)
    return argv, uid, gid, cwd, log, env


def _port_of(argv: list[str]) -> int | None:
    for flag in ("--port", "-p"):
        if flag in argv:
            with contextlib.suppress(IndexError, ValueError):
                return int(argv[argv.index(flag) + 1])
    return None


def _answers(engine: str, port: int, env: dict[str, str] | None = None) -> bool:
    if engine == "milvus-server":  # every component up, not only the proxy's port
        return _milvus_healthy(int((env or {}).get("METRICS_PORT", "9091")))
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
            if engine == "postgres":
                # SSLRequest: any server that is accepting connections answers 'N' or 'S'.
                sock.sendall(b"\x00\x00\x00\x08\x04\xd2\x16\x2f")
                return sock.recv(1) in (b"N", b"S")
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def _postgres_ready(port: int) -> bool:
    """Accepting queries, not only connections (crash recovery answers 'the database system
    is starting up' until the WAL is replayed)."""
    try:
        import psycopg
    except ImportError:  # pragma: no cover - embedded postgres implies psycopg
        return _answers("postgres", port)
    try:
        with psycopg.connect(host="127.0.0.1", port=port, user="postgres", dbname="postgres",
                             connect_timeout=1) as conn:
            conn.execute("SELECT 1")
        return True
    except psycopg.Error:
        return False


def _wait_gone(pids: list[int], within: float = 10.0) -> None:
    """Until every pid has exited (a zombie has: its memory and shm are released)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        alive = [p for p in pids if (s := _state(p)) is not None and s[0] != "Z"]
        if not alive:
            return
        time.sleep(0.005)  # bounded poll: SIGKILLed processes take a moment to exit
    raise BackendUnavailable("engine", f"processes {pids} survived SIGKILL for {within:g}s")


def _tail(path: str, lines: int = 12) -> str:
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class EngineControl:
    """Pause/resume/kill/restart the PostgreSQL, Redis (plain or with RediSearch), Valkey and
    Milvus server of an EmbeddedProvider."""

    def __init__(self, provider: EmbeddedProvider) -> None:
        self.provider = provider
        self._engines: dict[str, _Engine] = {}

    def _find(self, engine: str) -> _Engine:
        known = self._engines.get(engine)
        if known is not None:
            return known
        if engine not in _BINARIES:
            raise ValueError(f"no fault control for engine {engine!r}; "
                             f"known: {', '.join(_BINARIES)}")
        url = self.provider.url(engine)  # starts it if needed
        port = urlsplit(url).port
        for pid in self.provider.process_groups():
            try:
                argv, uid, gid, cwd, log, env = _proc_info(pid)
            except OSError:
                continue
            if Path(engine_program(argv)).name != _BINARIES[engine]:
                continue
            if engine in _BY_PORT_ONLY or _port_of(argv) == port:
                assert port is not None
                found = _Engine(engine, port, argv, uid, gid, cwd, log, pid, env)
                self._engines[engine] = found
                return found
        raise BackendUnavailable(engine, f"no running embedded process found on port {port} "
                                 "(with its command line intact in /proc)")

    def pid(self, engine: str) -> int:
        return self._find(engine).pid

    def pause(self, engine: str) -> None:
        """SIGSTOP the engine and every process it forked (PostgreSQL backends included:
        each runs in a session of its own, so the postmaster's group is not enough)."""
        e = self._find(engine)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(e.pid, signal.SIGSTOP)
        e.paused = [e.pid, *_children(e.pid)]
        for pid in e.paused:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        e.stopped = True

    def resume(self, engine: str) -> None:
        e = self._find(engine)
        self._resume(e)

    @staticmethod
    def _resume(e: _Engine) -> None:
        for pid in [*e.paused, *_children(e.pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(e.pid, signal.SIGCONT)
        e.paused = []
        e.stopped = False

    def kill(self, engine: str) -> None:
        """SIGKILL the engine and every process it forked; the port and data dir stay as is.

        PostgreSQL puts each backend in a session of its own (setsid), so the group
        of the postmaster is not enough: its children are found by parent pid.
        """
        e = self._find(engine)
        victims = [e.pid, *_children(e.pid)]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(e.pid, signal.SIGKILL)
        for pid in victims:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if e.proc is not None:
            e.proc.wait(10)
        else:
            # The provider's Popen owns the child; reap it here so that PostgreSQL does not
            # mistake a zombie for a live postmaster (Popen.poll copes with ECHILD later).
            with contextlib.suppress(ChildProcessError):
                os.waitpid(e.pid, 0)
        _wait_gone(victims)
        e.stopped = False

    def start(self, engine: str) -> None:
        """Start the engine again with the same command line (port, data dir) and user."""
        e = self._find(engine)
        as_root = os.geteuid() == 0
        with open(e.log, "ab") as log:
            proc = spawn(e.argv, log=log, cwd=e.cwd, env=e.env or None,
                         user=e.uid if as_root and e.uid != 0 else None,
                         group=e.gid if as_root and e.uid != 0 else None)
        e.proc, e.pid = proc, proc.pid
        if engine == "milvus-server":  # a new pid: a new /tmp/milvus/server_id_<pid>
            self.provider.block_milvus_server_id(proc.pid)
        deadline = time.monotonic() + READY_TIMEOUT
        def ready() -> bool:
            if engine == "postgres":
                return _postgres_ready(e.port)
            return _answers(engine, e.port, e.env)

        while not ready():
            if proc.poll() is not None:
                raise BackendUnavailable(engine, f"restart exited with {proc.returncode}:\n"
                                         f"{_tail(e.log)}")
            if time.monotonic() > deadline:
                raise BackendUnavailable(engine, f"not ready {READY_TIMEOUT:g}s after restart")
            time.sleep(0.01)  # bounded poll until the engine answers

    def restart(self, engine: str) -> float:
        """Kill then start; returns the seconds until it answered again."""
        self.kill(engine)
        started = time.monotonic()
        self.start(engine)
        return time.monotonic() - started

    def close(self) -> None:
        """Resume what is paused and stop what we restarted (the provider stops the rest)."""
        for e in self._engines.values():
            if e.stopped:
                self._resume(e)
            if e.proc is not None:
                kill_group(e.proc, signal.SIGQUIT if e.name == "postgres" else signal.SIGKILL,
                           timeout=5.0)
                e.proc = None
        self._engines.clear()


def continue_stopped(provider: object) -> list[int]:
    """SIGCONT every stopped process of the engines ``provider`` started; the pids it woke.

    The last line of "faults always heal": whatever a test paused (or a frozen failover
    left) is running again before the next test, even if the test's own heal never ran
    (its event loop blocked, its timeout fired). A provider that started no process (an
    external or docker one) has nothing to continue.
    """
    groups = getattr(provider, "process_groups", None)
    if not callable(groups):
        return []
    woke = []
    for leader in groups():
        for pid in [leader, *_children(leader)]:
            state = _state(pid)
            if state is not None and state[0] in ("T", "t"):
                woke.append(pid)
            with contextlib.suppress(ProcessLookupError):  # harmless to a running process,
                os.kill(pid, signal.SIGCONT)               # and ends a stop still pending
    return woke
