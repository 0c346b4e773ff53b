"""Faults on your own deployment that only you can cause: shell commands the nemesis runs.

On engines it started, the nemesis fails topologies over, kills, pauses and restarts
processes itself. On your deployment (``--backends external``: the ``NOMNESIA_*_URL``
servers) it can still break the wire through its proxy, but it cannot reach your
processes or your failover manager. Give it a command per fault instead::

    python -m nomnesia.suite.nemesis --backends external --store app.memory:factory \\
        --fault-command 'failover=patronictl -c /etc/patroni.yml failover --force' \\
        --fault-command 'pause=docker pause {engine}' \\
        --fault-command 'resume=docker unpause {engine}'

Each command is split like a shell line (``shlex``, no shell) and formatted first:
``{engine}`` is the engine kind the store asked for (``redis-sentinel``, ``postgres``),
``{url}`` the engine's own URL (not the proxy's). It must finish within
``COMMAND_TIMEOUT`` seconds and exit 0; what it printed is kept for the report. Kinds:

- ``failover``: fail the engine over (a topology's primary to a replica). With it,
  every engine of the store is a failover target (``--failover-targets`` narrows them).
- ``pause`` and ``resume``: stop and continue the engine (both needed).
- ``kill`` and ``restart``: kill the engine and start it again on its data (both
  needed); your deployment's durability is yours, so a kill is drawn for every engine.

docs/faults.md ("Your store on your own deployment") has a worked example on the
embedded Sentinel group.
"""

from __future__ import annotations

import shlex
import subprocess
import time
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["COMMAND_KINDS", "COMMAND_TIMEOUT", "CommandControl", "CommandFaults",
           "parse_commands"]

COMMAND_KINDS: tuple[str, ...] = ("failover", "pause", "resume", "kill", "restart")
COMMAND_TIMEOUT = 120.0
"""Seconds a command may take (a failover manager's promotion included)."""
_PAIRS = {"pause": "resume", "resume": "pause", "kill": "restart", "restart": "kill"}


def parse_commands(items: Sequence[str]) -> dict[str, str]:
    """``["failover=CMD", ...]`` -> ``{"failover": "CMD"}``; raises ValueError on a kind it
    does not know, a missing command, or half of a pair (pause without resume)."""
    commands: dict[str, str] = {}
    for item in items:
        kind, sep, command = (s.strip() for s in item.partition("="))
        if not sep or not command:
            raise ValueError(f"--fault-command takes KIND=COMMAND, not {item!r}")
        if kind not in COMMAND_KINDS:
            raise ValueError(f"--fault-command {kind}: unknown kind; known: "
                             f"{', '.join(COMMAND_KINDS)}")
        try:
            shlex.split(command)
        except ValueError as exc:
            raise ValueError(f"--fault-command {kind}: {exc}: {command!r}") from None
        commands[kind] = command
    for kind in commands:
        other = _PAIRS.get(kind)
        if other is not None and other not in commands:
            raise ValueError(f"--fault-command {kind} needs {other} too: the nemesis undoes "
                             "every fault it causes")
    return commands


class CommandFaults:
    """A provider whose failover, pause and kill are the user's commands.

    Everything else (``url``, ``close`` ...) is the wrapped provider's. The nemesis asks
    it what :class:`~nomnesia.adapters.engines.EngineControl` and
    ``EmbeddedProvider.failover`` answer for engines the suite started.
    """

    def __init__(self, provider: Any, commands: Mapping[str, str],
                 timeout: float = COMMAND_TIMEOUT) -> None:
        self.inner = provider
        self.commands = dict(commands)
        self.timeout = timeout
        self.ran: list[tuple[str, str, float]] = []
        """(kind, engine, seconds) of every command run, in order."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def can(self, kind: str) -> bool:
        return kind in self.commands

    # -- the provider's failover -------------------------------------------------------

    def can_fail_over(self, engine: str) -> bool:
        return "failover" in self.commands

    def failover(self, engine: str, *, freeze: bool = False) -> dict[str, float]:
        """Run the failover command (``freeze`` has no meaning here: the command decides)."""
        return {"command_s": round(self.run("failover", engine), 3)}

    def run(self, kind: str, engine: str) -> float:
        """Run ``kind``'s command for ``engine``; the seconds it took. Raises RuntimeError
        naming the command when it cannot run, times out or exits non-zero."""
        template = self.commands.get(kind)
        if template is None:
            raise ValueError(f"no --fault-command {kind} was given")
        argv = [part.format(engine=engine, url=self.inner.url(engine))
                for part in shlex.split(template)]
        began = time.monotonic()
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=self.timeout,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise RuntimeError(f"--fault-command {kind} for {engine} ({shlex.join(argv)}) "
                               f"did not run: {exc}") from exc
        took = time.monotonic() - began
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise RuntimeError(f"--fault-command {kind} for {engine} ({shlex.join(argv)}) "
                               f"exited {done.returncode}: {' / '.join(tail)}")
        self.ran.append((kind, engine, took))
        return took


class CommandControl:
    """``EngineControl``'s faults (pause, resume, kill, start) as the user's commands."""

    def __init__(self, faults: CommandFaults) -> None:
        self.faults = faults

    def pause(self, engine: str) -> None:
        self.faults.run("pause", engine)

    def resume(self, engine: str) -> None:
        self.faults.run("resume", engine)

    def kill(self, engine: str) -> None:
        self.faults.run("kill", engine)

    def start(self, engine: str) -> None:
        self.faults.run("restart", engine)

    def close(self) -> None:
        """Nothing to release: each command ran to completion."""
