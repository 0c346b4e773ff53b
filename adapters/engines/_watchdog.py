"""Watchdog: kills a provider's engines and removes its directory when the provider's process dies.

PR_SET_PDEATHSIG already kills each engine's first process when its parent
dies, but not the children PostgreSQL forks, and nothing removes the data
directory. This script runs detached (its own session, so a signal to the test
run's process group does not take it down too), reads commands on stdin, and
cleans up when stdin reaches EOF without ``done`` or its parent pid changes:
both mean the owner is gone, SIGKILL included. Extra pids on the command line
are watched too: an xdist worker passes its controller, because a worker whose
controller was SIGKILLed keeps running its current test, engines and all,
until it next talks to the dead controller.

It is run by path with ``python -I -S`` and imports only the standard library,
so it starts in a few milliseconds. Commands, one per line:
``pgid N`` (a process group to kill), ``forget N``, ``dir PATH``, ``shm ID`` (a
System V segment PostgreSQL leaves behind when killed), ``done``.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import sys
import time
from collections.abc import Sequence


def _processes() -> list[tuple[int, str, int]]:
    """(pid, state, pgid) of every process (Linux, from /proc)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found.append((int(name), fields[0], int(fields[2])))
    return found


def _cwd_under(pid: int, dirs: Sequence[str]) -> bool:
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return False
    return any(cwd == path or cwd.startswith(path.rstrip("/") + "/") for path in dirs)


def stragglers(groups: set[int], dirs: Sequence[str]) -> list[int]:
    """Live (non-zombie) processes of the engines: in one of the groups, or working inside
    one of the directories. PostgreSQL backends call setsid(), so they leave the
    postmaster's group, but they keep its working directory (the data directory)."""
    if sys.platform.startswith("linux"):
        return [pid for pid, state, pgid in _processes()
                if state != "Z" and pid != os.getpid()
                and (pgid in groups or (dirs and _cwd_under(pid, dirs)))]
    alive = []
    for group in groups:
        try:
            os.killpg(group, 0)
            alive.append(group)
        except OSError:
            pass
    return alive


def kill_all(groups: set[int], dirs: Sequence[str], timeout: float) -> None:
    """SIGKILL the groups and whatever runs inside the directories; wait (bounded) until gone."""
    for group in groups:
        with contextlib.suppress(OSError):
            os.killpg(group, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = stragglers(groups, dirs)
        if not left:
            return
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)


def _remove_shm(segments: Sequence[int]) -> None:
    import ctypes
    import ctypes.util

    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    for shmid in segments:
        libc.shmctl(shmid, 0, None)  # IPC_RMID


def cleanup(groups: set[int], dirs: list[str], segments: Sequence[int] = (),
            timeout: float = 8.0) -> None:
    deadline = time.monotonic() + timeout
    kill_all(groups, dirs, timeout)
    if segments and sys.platform.startswith("linux"):
        _remove_shm(segments)
    for path in dirs:
        while os.path.exists(path) and time.monotonic() < deadline:
            shutil.rmtree(path, ignore_errors=True)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def main(argv: list[str]) -> int:
    parent = int(argv[1])
    also = [int(pid) for pid in argv[2:]]
    groups: set[int] = set()
    dirs: list[str] = []
    segments: list[int] = []
    pending = b""
    while os.getppid() == parent and not any(_gone(pid) for pid in also):
        ready, _, _ = select.select([0], [], [], 0.1)
        if not ready:
            continue
        chunk = os.read(0, 4096)
        if not chunk:
            break
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            command, _, arg = line.decode().partition(" ")
            if command == "pgid":
                groups.add(int(arg))
            elif command == "forget":
                groups.discard(int(arg))
            elif command == "dir":
                dirs.append(arg)
            elif command == "shm":
                segments.append(int(arg))
            elif command == "done":
                return 0
    cleanup(groups, dirs, segments)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
