"""A nemesis load worker leaves on SIGTERM even when a client's cancel is lost.

The runner stops a load worker with SIGTERM; the worker cancels its clients and closes
the store. A Redis user store's worker sometimes ran on for ever: Python < 3.12's
``asyncio.wait_for`` returns its inner task's result when that task finished in the same
loop turn as the cancel (CPython gh-86296), and redis-py sends every command through it
(``redis.asyncio.connection.AbstractConnection.send_packed_command``, under its default
5 s ``socket_timeout``). The cancelled client saw its call succeed and went on with its
workload, which has no end of its own. ``py-spy dump`` of such a worker shows only an idle
event loop (the client waits between calls); its tasks show a client ``cancelling`` and
still calling the store.

The store here waits the way redis-py does: each call goes through ``asyncio.wait_for``
on a step that finishes in the loop turn the client is cancelled in, so on 3.11 every
cancel is lost, deterministically. The worker must leave anyway: its clients stop at their
next turn once SIGTERM has set the worker's stop event.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

from nomnesia.suite.nemesis.worker import RECOVER_PID, WorkerConfig

ROOT = Path(__file__).resolve().parent.parent
CLIENTS = 3
STARTUP = 60.0
"""Seconds for the worker to import and make its first calls (a loaded CI machine)."""
EXIT = 30.0
"""Seconds it gets to leave after SIGTERM: the runner's own bound for a load worker."""


class CancelLosingStore:
    """Four methods in memory; each call first "sends" through ``asyncio.wait_for`` as
    redis-py does, the send finishing as soon as the calling client has been cancelled."""

    def __init__(self) -> None:
        self.items: dict[str, list[dict[str, str]]] = {}

    async def _send(self) -> None:
        client: asyncio.Task[object] | None = asyncio.current_task()
        assert client is not None

        async def sent() -> None:
            # Before 3.12 this runs in wait_for's own task, polled each loop turn (a yield, not
            # a wait for time): it ends in the turn the client's cancel lands in, which is
            # the turn where that wait_for drops the cancel. On 3.12+ it runs in the
            # client's task and the cancel is raised here, as it should be.
            while not _cancelled(client):  # noqa: ASYNC110 (a turn per pass is the point)
                await asyncio.sleep(0)

        await asyncio.wait_for(sent(), 5.0)

    async def append_message(self, user_id: str, role: str, content: str) -> None:
        await self._send()
        self.items.setdefault(user_id, []).append({"role": role, "content": content})

    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]:
        await self._send()
        return self.items.get(user_id, [])[-limit:]

    async def compact(self, user_id: str) -> None:
        await self._send()

    async def consistent_state(self, user_id: str) -> bool:
        return True


def _cancelled(task: asyncio.Task[object]) -> bool:
    """Whether ``task`` was asked to cancel (3.10 has no ``cancelling()``: there, the future
    the task waits on, wait_for's own, is cancelled the moment it is)."""
    if sys.version_info >= (3, 11):
        return task.cancelling() > 0
    waiter = getattr(task, "_fut_waiter", None)
    return waiter is not None and bool(waiter.cancelled())


@asynccontextmanager
async def _opened() -> AsyncIterator[CancelLosingStore]:
    yield CancelLosingStore()


def loses_cancels() -> AbstractAsyncContextManager[CancelLosingStore]:
    """The ``--store`` factory the worker opens."""
    return _opened()


def _ops(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.endswith("}")]


def _started(path: Path) -> bool:
    """Every client has a call in flight (each first call lasts until SIGTERM)."""
    invoked = {op["process"] for op in _ops(path) if op["type"] == "invoke"}
    return len(invoked & {100 + i for i in range(CLIENTS)}) == CLIENTS


def test_a_load_worker_whose_clients_lose_their_cancel_leaves_on_sigterm(
        tmp_path: Path) -> None:
    history = tmp_path / "history-0001.jsonl"
    config = WorkerConfig(adapter="", urls={}, namespace="nm_worker_shutdown",
                          history=str(history), generation=1, seed=1, clients=CLIENTS,
                          store="tests.test_worker_shutdown:loses_cancels", pace=0.001)
    log = (tmp_path / "worker.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "nomnesia.suite.nemesis.worker", config.dumps()],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    log.close()
    try:
        started = _poll(lambda: _started(history) or proc.poll() is not None, STARTUP)
        assert started and proc.poll() is None, (
            f"the worker did not start its {CLIENTS} clients within {STARTUP:g} s:\n"
            + (tmp_path / "worker.log").read_text(errors="replace")[-3000:])
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(EXIT)
        except subprocess.TimeoutExpired:
            code = None
        ops = _ops(history)
        calls = [op for op in ops
                 if op["type"] == "invoke" and op["process"] != 100 + RECOVER_PID]
        assert code == 0, (
            f"the worker did not leave within {EXIT:g} s of SIGTERM (exit code {code}); its "
            f"clients made {len(calls)} calls, {len(calls) - CLIENTS} of them after their "
            "cancel:\n" + (tmp_path / "worker.log").read_text(errors="replace")[-3000:])
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # Each client made the one call SIGTERM found it in, and no other.
    assert len(calls) == CLIENTS, (
        f"{len(calls) - CLIENTS} calls after SIGTERM: a client whose cancel was lost went on "
        f"with its workload (first calls: {[(op['process'], op['f']) for op in calls[:8]]})")
    ends = {op["process"]: op for op in ops
            if op["type"] != "invoke" and op["process"] != 100 + RECOVER_PID}
    assert sorted(ends) == [100 + i for i in range(CLIENTS)], ends
    if sys.version_info < (3, 12):
        # The situation the test is about: on 3.11 the cancel was lost inside wait_for, so
        # the call in flight returned ("ok") instead of ending cancelled ("info").
        assert {op["type"] for op in ends.values()} == {"ok"}, ends


def _poll(ready: Callable[[], bool], seconds: float) -> bool:
    """Poll ``ready()`` until true or ``seconds`` pass (bounded)."""
    deadline = time.monotonic() + seconds
    pause = 0.01
    while time.monotonic() < deadline:
        if ready():
            return True
        time.sleep(pause)  # bounded poll of the worker's history file
        pause = min(pause * 2, 0.2)
    return ready()

