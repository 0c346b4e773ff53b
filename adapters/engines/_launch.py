"""Exec a command so that it dies with its owner, without running code in a forked child.

A ``preexec_fn`` (or ``user=``/``group=``) makes :mod:`subprocess` use ``fork()``, and
``fork()`` runs every loaded library's at-fork handlers in the child before ``exec``.
gRPC's handlers (loaded by pymilvus and qdrant-client) restart its pollers there, and the
child then aborts when ``close_fds`` closes their descriptors: CI saw a nemesis worker
exit with SIGABRT and ``epoll_wait error: Bad file descriptor``. Without either option
CPython uses ``vfork()``, which runs no handlers; this program, started that way, then does
in a clean interpreter what the ``preexec_fn`` did, and execs the real command.

Usage: ``python -I -S _launch.py PARENT_PID UID GID [AS_BYTES] -- COMMAND...`` (``-`` for no
UID/GID; ``AS_BYTES`` caps the address space of the command and of every process it forks,
so that one runaway allocation fails that process instead of exhausting the machine).
It imports only the standard library, so it runs outside any virtualenv's site-packages.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys

_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """Ask the kernel for SIGKILL when our parent dies; die now if it already has.

    The check after ``prctl`` closes the race where the parent died before the request.
    Credentials must not change after this call: the kernel clears the setting when they do.
    """
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)  # the symbols already loaded: libc's prctl
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)


def main(argv: list[str]) -> None:
    parent, uid, gid, *rest = argv
    limit = rest.pop(0) if rest and rest[0] != "--" else None
    separator, *command = rest or [""]
    if separator != "--" or not command:
        raise SystemExit("usage: _launch.py PARENT_PID UID GID [AS_BYTES] -- COMMAND...")
    if limit is not None:
        resource.setrlimit(resource.RLIMIT_AS, (int(limit), int(limit)))
    if uid != "-":
        os.setgroups([])
    if gid != "-":
        os.setgid(int(gid))
    if uid != "-":
        os.setuid(int(uid))
    die_with_parent(int(parent))
    try:
        os.execvp(command[0], command)
    except OSError as exc:  # one sentence in the engine's log, not a traceback
        who = f"user {os.getuid()}" + (" (after dropping root)" if uid != "-" else "")
        sys.stderr.write(f"cannot execute {command[0]} as {who}: {exc.strerror}. Every "
                         "directory on its path must be open to that user.\n")
        raise SystemExit(126 if isinstance(exc, PermissionError) else 127) from None


if __name__ == "__main__":
    main(sys.argv[1:])
