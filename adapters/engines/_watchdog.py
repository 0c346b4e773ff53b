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
System V segment PostgreSQL leaves behind when killed), ``container SOCKET ID`` (a
container to remove through a Docker engine's unix socket), ``daemon PATH`` (a
private Docker engine whose files are all under PATH: every process that names
PATH and all their descendants, containers included, are killed, and every mount
under PATH is detached before PATH is removed), ``bridge NAME`` (a network link
that engine created, deleted last), ``done``.
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


def _remove_container(socket_path: str, container: str) -> None:
    """``DELETE /containers/ID?force=1`` on a Docker engine's unix socket (stdlib only)."""
    import socket

    with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(10)
        sock.connect(socket_path)
        sock.sendall(f"DELETE /containers/{container}?force=1&v=1 HTTP/1.0\r\n"
                     "Host: docker\r\n\r\n".encode())
        sock.recv(4096)


def daemon_processes(path: str) -> list[int]:
    """Every process whose command line names ``path`` (dockerd, containerd, the shims),
    and all their descendants (the containers' processes)."""
    roots: set[int] = set()
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                cmdline = handle.read()
            with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as handle:
                ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if path.encode() in cmdline and int(name) != os.getpid():
            roots.add(int(name))
        children.setdefault(ppid, []).append(int(name))
    found, todo = set(roots), list(roots)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return sorted(found)


def _detach_mounts(path: str) -> None:
    """Lazily unmount everything mounted under ``path``, deepest first (overlay layers)."""
    import ctypes
    import ctypes.util

    mounts = []
    with contextlib.suppress(OSError), open("/proc/self/mountinfo", encoding="utf-8") as handle:
        for line in handle:
            point = line.split()[4].encode().decode("unicode_escape")
            if point == path or point.startswith(path.rstrip("/") + "/"):
                mounts.append(point)
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    for point in sorted(mounts, key=len, reverse=True):
        libc.umount2(point.encode(), 2)  # MNT_DETACH


def reap_daemon(path: str, bridges: Sequence[str] = (), timeout: float = 10.0) -> None:
    """Kill a private Docker engine and all it runs, detach its mounts, delete its links."""
    import subprocess

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = daemon_processes(path)
        if not left:
            break
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
    _detach_mounts(path)
    for bridge in bridges:
        with contextlib.suppress(OSError):
            subprocess.run(["ip", "link", "delete", bridge], capture_output=True, timeout=10,
                           check=False)


def cleanup(groups: set[int], dirs: list[str], segments: Sequence[int] = (),
            timeout: float = 8.0, *, containers: Sequence[tuple[str, str]] = (),
            daemons: Sequence[str] = (), bridges: Sequence[str] = ()) -> None:
    deadline = time.monotonic() + timeout
    for socket_path, container in containers:
        _remove_container(socket_path, container)
    for daemon in daemons:
        reap_daemon(daemon, bridges)
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
    containers: list[tuple[str, str]] = []
    daemons: list[str] = []
    bridges: list[str] = []
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
            elif command == "container":
                socket_path, _, container = arg.rpartition(" ")
                containers.append((socket_path, container))
            elif command == "daemon":
                daemons.append(arg)
                dirs.append(arg)
            elif command == "bridge":
                bridges.append(arg)
            elif command == "done":
                return 0
    cleanup(groups, dirs, segments, containers=containers, daemons=daemons, bridges=bridges)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
