"""The launcher every engine and nemesis worker starts behind (``engines/_launch.py``).

CI once lost a nemesis worker to SIGABRT: the runner had started it with a
``preexec_fn``, so ``fork()`` ran gRPC's at-fork handlers in the child. These tests stand
in for gRPC with a Python at-fork handler that kills any forked child, and check what
the launcher must still do without a ``preexec_fn``: arm PDEATHSIG, and refuse to run
when its parent is already gone.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import psutil

from nomnesia.adapters.engines._proc import launcher

_HOSTILE = textwrap.dedent("""
    import asyncio, os, subprocess, sys
    from nomnesia.adapters.engines._proc import launcher, spawn

    # What gRPC's handlers amount to in a forked child: it does not live to exec.
    os.register_at_fork(after_in_child=lambda: os._exit(86))

    async def worker():
        proc = await asyncio.create_subprocess_exec(
            *launcher([sys.executable, "-c", "print('worker ran')"], parent=os.getpid()),
            stdout=subprocess.PIPE)
        out, _ = await proc.communicate()
        return proc.returncode, out.decode().strip()

    engine = spawn([sys.executable, "-c", "print('engine ran')"], log=subprocess.PIPE)
    print(engine.wait(30), engine.stdout.read().decode().strip())
    print(*asyncio.run(worker()))
""")


def _gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def test_children_start_even_when_an_at_fork_handler_kills_forks() -> None:
    result = subprocess.run([sys.executable, "-c", _HOSTILE], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["0 engine ran", "0 worker ran"], result.stdout


def test_a_launched_command_dies_with_its_parent() -> None:
    """No watchdog and no cleanup here: only the kernel's PDEATHSIG can stop the sleeper."""
    parent = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent("""
            import os, subprocess, sys
            from nomnesia.adapters.engines._proc import launcher
            child = subprocess.Popen(launcher(["sleep", "60"], parent=os.getpid()))
            print(child.pid, flush=True)
            sys.stdin.read()
            os._exit(0)
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None and parent.stdin is not None
    sleeper = int(parent.stdout.readline())
    try:
        # The launcher has exec'd into sleep once its name says so.
        deadline = time.monotonic() + 10
        while psutil.Process(sleeper).name() != "sleep" and time.monotonic() < deadline:
            time.sleep(0.02)
        assert psutil.Process(sleeper).name() == "sleep"
        parent.stdin.close()
        parent.wait(10)
        assert _gone(sleeper, 5), "the launched command outlived its parent"
    finally:
        parent.kill()
        parent.wait()
        if not _gone(sleeper, 0):
            psutil.Process(sleeper).kill()


def test_a_launcher_whose_parent_is_already_gone_does_not_run() -> None:
    wrong_parent = 1  # never our pid: as if the real parent died and init adopted us
    result = subprocess.run(launcher(["echo", "ran"], parent=wrong_parent),
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == -9 and result.stdout == ""


def test_the_launcher_leaves_arguments_alone() -> None:
    argv = ["printf", "%s|", "--", "-", "a b", "'\"*"]
    result = subprocess.run(launcher(argv, parent=os.getpid()), capture_output=True, text=True)
    assert result.stdout == "--|-|a b|'\"*|"
