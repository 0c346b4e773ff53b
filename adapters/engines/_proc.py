"""Child processes that cannot outlive their owner.

Three layers, because each alone has a hole:

* every engine runs in its own process group (``start_new_session``), so one
  ``killpg`` reaches the children PostgreSQL forks;
* every engine gets ``PR_SET_PDEATHSIG = SIGKILL`` (armed by ``_launch.py`` just
  before exec), so the kernel kills it the moment its parent dies, SIGKILL included.
  The signal fires when the *thread* that forked it exits, so all engines are forked
  from one long-lived daemon thread, never from a caller's (possibly short-lived,
  e.g. ``to_thread``) thread;
* a detached watchdog (``_watchdog.py``) kills the groups and removes the
  provider's directory once the owner is gone.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar

__all__ = ["Watchdog", "engine_cpu", "free_port", "kill_group", "launcher", "note_engine_cpu",
           "process_cpu", "run_owners", "spawn"]

T = TypeVar("T")

_WATCHDOG = Path(__file__).with_name("_watchdog.py")
_LAUNCH = Path(__file__).with_name("_launch.py")


def launcher(argv: Sequence[str], *, parent: int, user: int | None = None,
             group: int | None = None, memory_limit: int | None = None) -> list[str]:
    """``argv`` behind ``_launch.py``, which arms PDEATHSIG and switches user before exec.

    Popen then needs neither ``preexec_fn`` nor ``user=``, so CPython starts it with
    ``vfork()`` and no library's at-fork handler runs in the child (see ``_launch.py``).
    """
    ids = ["-" if user is None else str(user), "-" if group is None else str(group)]
    limit = [] if memory_limit is None else [str(memory_limit)]
    return [sys.executable, "-I", "-S", str(_LAUNCH), str(parent), *ids, *limit, "--", *argv]


class _Spawner:
    """One daemon thread that forks every engine, so PDEATHSIG tracks the process, not a thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], concurrent.futures.Future[Any]]]
        self._thread: threading.Thread | None = None
        os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        self._lock = threading.Lock()
        self._thread = None

    def _loop(self) -> None:
        while True:
            job, future = self._jobs.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(job())
            except BaseException as exc:
                future.set_exception(exc)

    def run(self, job: Callable[[], T]) -> T:
        with self._lock:
            if self._thread is None:
                self._jobs = queue.SimpleQueue()
                self._thread = threading.Thread(target=self._loop, name="nomnesia-engine-spawner",
                                                daemon=True)
                self._thread.start()
        if threading.current_thread() is self._thread:
            return job()
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._jobs.put((job, future))
        return future.result()


_SPAWNER = _Spawner()


def spawn(argv: Sequence[str], *, log: IO[bytes] | int = subprocess.DEVNULL,
          stdin: IO[bytes] | int = subprocess.DEVNULL, user: int | None = None,
          group: int | None = None, cwd: str | os.PathLike[str] | None = None,
          env: dict[str, str] | None = None,
          memory_limit: int | None = None) -> subprocess.Popen[bytes]:
    """Start ``argv`` in a new process group, to die with this process.

    ``memory_limit`` (bytes) caps the address space of each of its processes (RLIMIT_AS).
    """
    parent = os.getpid()

    def start() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            launcher(argv, parent=parent, user=user, group=group, memory_limit=memory_limit),
            stdin=stdin, stdout=log,
            stderr=subprocess.STDOUT, cwd=cwd, env=env, start_new_session=True,
        )

    return _SPAWNER.run(start)


def kill_group(proc: subprocess.Popen[bytes], sig: int = signal.SIGKILL,
               timeout: float = 10.0) -> None:
    """Signal the process group of ``proc`` and reap ``proc``."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout)
    # Forks that stayed in the group (not PostgreSQL backends: they call setsid) may linger.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


_ENGINE_CPU: dict[str, float] = {}
_ENGINE_CPU_LOCK = threading.Lock()


def process_cpu(pid: int) -> float:
    """CPU-seconds (user + system) of ``pid`` and of the children it has reaped; 0.0 if gone.

    Read from ``/proc/PID/stat`` (fields 14 to 17 of proc(5)), so it works for a process
    this one did not wait for. A postmaster reaps its backends, so its own line holds
    theirs too.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return 0.0
    fields = stat.rpartition(")")[2].split()  # after the command name, which may hold spaces
    try:
        ticks = sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
    except ValueError:
        return 0.0
    return ticks / os.sysconf("SC_CLK_TCK")


def note_engine_cpu(engine: str, pid: int) -> None:
    """Add what engine process ``pid`` has spent so far to ``engine``'s total (before it stops).

    The report splits a run's CPU into the pytest process and each engine
    (``bench/bench_matrix.py`` prints it): a run's cost is judged against what the
    engines alone spend, which the suite cannot lower.
    """
    spent = process_cpu(pid)
    with _ENGINE_CPU_LOCK:
        _ENGINE_CPU[engine] = _ENGINE_CPU.get(engine, 0.0) + spent


def engine_cpu() -> dict[str, float]:
    """CPU-seconds per engine name of every engine process stopped so far in this process.

    Only engines stopped through their provider count: an engine killed by a fault and
    not restarted takes its CPU with it, and an engine in a container is not a process here.
    """
    with _ENGINE_CPU_LOCK:
        return dict(_ENGINE_CPU)


def free_port() -> int:
    """A loopback port free right now (the caller retries if another process takes it first)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def run_owners() -> list[int]:
    """Processes whose death ends the run besides our own: the xdist controller, in a worker."""
    if os.environ.get("PYTEST_XDIST_WORKER") and os.getppid() > 1:
        return [os.getppid()]
    return []


class Watchdog:
    """A detached process that cleans up after us if we die without ``close()``."""

    def __init__(self, also_watch: Sequence[int] = ()) -> None:
        """``also_watch``: more pids whose death means the run is over (an xdist controller)."""
        read_end, self._write_end = os.pipe()
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-I", "-S", str(_WATCHDOG), str(os.getpid()),
                 *map(str, also_watch)],
                stdin=read_end, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            os.close(read_end)
        self._lock = threading.Lock()

    @property
    def pid(self) -> int:
        return self._proc.pid

    def _send(self, line: str) -> None:
        with self._lock:
            if self._write_end >= 0:
                os.write(self._write_end, (line + "\n").encode())

    def watch_dir(self, path: str | os.PathLike[str]) -> None:
        self._send(f"dir {os.fspath(path)}")

    def watch_group(self, pgid: int) -> None:
        self._send(f"pgid {pgid}")

    def watch_shm(self, shmid: int) -> None:
        self._send(f"shm {shmid}")

    def watch_container(self, socket_path: str, container: str) -> None:
        """A container to remove through the Docker engine at the unix ``socket_path``."""
        self._send(f"container {socket_path} {container}")

    def watch_daemon(self, path: str | os.PathLike[str], bridge: str | None = None) -> None:
        """A private Docker engine living under ``path`` (and the link it made, if any)."""
        self._send(f"daemon {os.fspath(path)}")
        if bridge is not None:
            self._send(f"bridge {bridge}")

    def forget_group(self, pgid: int) -> None:
        self._send(f"forget {pgid}")

    def close(self, *, cleanup: bool = False) -> None:
        """Stop the watchdog; with ``cleanup`` it first does its job (kill groups, remove dirs)."""
        with self._lock:
            if self._write_end < 0:
                return
            if not cleanup:
                os.write(self._write_end, b"done\n")
            os.close(self._write_end)
            self._write_end = -1
        try:
            self._proc.wait(15)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
