"""A client process of the nemesis: opens the store by name and runs the recorded workload.

The runner SIGKILLs it at random moments, so every event is written to its
history file the moment it happens (one unbuffered ``write`` per op): what a
killed worker leaves is exactly what it did, up to the op in flight. A fresh
worker reopens the same namespace, which runs ``recover()``; it records one
more ``recover`` so the checker knows where an interrupted write stops being
an excuse.

    python -m nomnesia.suite.nemesis.worker '<json config>'
"""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import importlib
import itertools
import json
import os
import signal
import sys
import time
from collections.abc import Iterable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from nomnesia.adapters import ADAPTERS, open_store
from nomnesia.adapters.engines import ENV_VARS, ExternalProvider

from ..core.history import History, Op
from ..core.recorder import LoggedStore
from ..core.workload import DEFAULT_USERS, Client, Mix, Workload, for_profile, quiesce
from . import user_store

__all__ = ["StreamedHistory", "Tail", "WorkerConfig", "main"]

RECOVER_PID = 99
"""Process number (within a generation) of the worker's own recover() calls."""
FINAL_LIMIT = 100_000


@dataclass
class WorkerConfig:
    adapter: str
    urls: dict[str, str]
    namespace: str
    history: str
    generation: int
    seed: int
    timeout: float = 2.0
    clients: int = 3
    ops: int | None = None
    """Calls to make before stopping; None: until killed or SIGTERM."""
    final: bool = False
    """Quiescent phase: recover, read everything, consistent_state; writes ``result``."""
    standby: bool = False
    """Import everything, then wait for a line on stdin: ``load``, ``final`` or ``exit``.
    A crashed client is replaced by a warm standby, so the time until the store answers
    again measures the store's recovery, not the interpreter's start."""
    result: str = ""
    users: tuple[str, ...] = DEFAULT_USERS
    pace: float = 0.0
    """Seconds each client pauses between calls (the load, not a wait for the store)."""
    options: dict[str, Any] = field(default_factory=dict)
    """Extra keyword options for the stack factory."""
    factory: str = ""
    """``module:callable`` used instead of ``open_store(adapter)`` (e.g. a deliberately broken
    store); called with the same keyword arguments as a stack factory."""
    mix: dict[str, float] = field(default_factory=dict)
    """Fields of the workload's :class:`Mix` to change (``{"forget": 0.0}``)."""
    store: str = ""
    """A user's ``MODULE:FACTORY`` (zero arguments, as ``--store``), opened through the
    suite's engine seam instead of the registry (``user_store.py``)."""
    interface: str = ""
    """Or an interface option and its factory, ``--openai-session=MODULE:FACTORY``."""

    def dumps(self) -> str:
        data = dict(self.__dict__)
        data["users"] = list(self.users)
        return json.dumps(data)

    @classmethod
    def loads(cls, text: str) -> WorkerConfig:
        data = json.loads(text)
        data["users"] = tuple(data["users"])
        return cls(**data)


class StreamedHistory(History):
    """A History that also appends each op to a file as it happens (SIGKILL-proof)."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def _add(self, op: Op) -> Op:
        super()._add(op)
        os.write(self._fd, (json.dumps(op.to_json(), ensure_ascii=False) + "\n").encode())
        return op

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def read_ops(path: str) -> list[Op]:
    """Every complete line of a history file (a killed writer may leave half a line)."""
    ops: list[Op] = []
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if line.endswith("\n"):
                    ops.append(Op.from_json(json.loads(line)))
    except FileNotFoundError:
        pass
    return ops


def _provider(urls: dict[str, str]) -> Any:

    return ExternalProvider({ENV_VARS[engine]: url for engine, url in urls.items()})


class _Paced(Client):
    """The workload's client, with a pause between calls so a run's history stays checkable."""

    pace = 0.0

    async def one(self) -> None:
        await super().one()
        if self.pace:
            await asyncio.sleep(self.pace)  # pacing the load; nothing waits for the store here


async def _open(config: WorkerConfig, stack: AsyncExitStack) -> Any:
    """Open the store, retrying while engines come back (bounded)."""

    if config.store or config.interface:
        made = user_store.suite_factory(config.store, config.interface)

        def factory(**kw: Any) -> Any:
            return user_store.open_store(made, config.urls, config.namespace,
                                         keep=not config.final)
    elif config.factory:
        module, _, attr = config.factory.partition(":")
        factory = getattr(importlib.import_module(module), attr)
    else:
        def factory(**kw: Any) -> Any:
            return open_store(config.adapter, **kw)
    start = time.monotonic()
    deadline = start + 60
    pause = 0.02
    while True:
        try:
            return await stack.enter_async_context(factory(
                provider=_provider(config.urls), namespace=config.namespace,
                timeout=config.timeout, **config.options))
        except Exception as exc:
            if time.monotonic() > deadline:
                raise
            # The worker log is where a slow recovery is explained: which call failed.
            print(f"open failed after {time.monotonic() - start:.2f} s: "
                  f"{type(exc).__name__}: {str(exc)[:300]}", file=sys.stderr, flush=True)
        await asyncio.sleep(pause)  # bounded retry while an engine restarts
        pause = min(pause * 2, 0.5)


async def _standby(config: WorkerConfig) -> bool:
    """Warm up (imports, the stack's factory), then block until the runner says what to do."""

    if config.adapter in ADAPTERS and not (config.factory or config.store or config.interface):
        ADAPTERS[config.adapter].load()
    for module in ("nomnesia.adapters.postgres", "nomnesia.adapters.redis_log"):
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
    await asyncio.to_thread(Path(config.history + ".ready").touch)
    command = (await asyncio.to_thread(sys.stdin.readline)).strip()
    if command == "final":
        config.final = True
    return command in ("load", "final")


async def run(config: WorkerConfig) -> int:
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    if config.standby and not await _standby(config):
        return 0
    history = StreamedHistory(config.history)
    base = config.generation * 100
    workload = Workload(seed=config.seed * 1000 + config.generation,
                        ops=config.ops if config.ops is not None else sys.maxsize,
                        processes=config.clients, users=config.users, mix=Mix(**config.mix))
    stack = AsyncExitStack()
    try:
        store = await _open(config, stack)
        logged = LoggedStore(store, history)
        # Only the calls the store's profile has (a seed store has no search or forget).
        workload = replace(workload, mix=for_profile(workload.mix, logged.resolved))
        recoverer = Client.for_workload(base + RECOVER_PID, logged, workload, itertools.count())
        # recover() already ran on open; record one so the checker sees where it ended.
        await recoverer.call(recoverer.store.recover)
        if config.final:
            await _final(config, logged, workload, base)
            await stack.aclose()
            history.close()
            return 0
        slots = itertools.count()
        clients = [_Paced.for_workload(base + i, logged, workload, slots)
                   for i in range(config.clients)]
        for c in clients:
            c.pace = config.pace
        # Each client also stops at its next turn once SIGTERM set ``stop``: a cancel alone
        # can be lost. On Python < 3.12, ``asyncio.wait_for`` returns its inner task's result
        # when that task finished in the same loop turn as the cancel (CPython gh-86296), and
        # redis-py sends every command through it (``send_packed_command``, under its
        # default 5 s socket_timeout): such a client ran its workload on, forever.
        tasks = [asyncio.ensure_future(c.loop(stop)) for c in clients]
        waiter = asyncio.ensure_future(stop.wait())
        await asyncio.wait([*tasks, waiter], return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        await stack.aclose()
        history.close()
        raise
    for t in [*tasks, waiter]:
        t.cancel()  # the call in flight ends now; a client whose cancel is lost ends after it
    try:
        await asyncio.gather(*tasks, waiter, return_exceptions=True)
        await stack.aclose()
    finally:
        history.close()
    return 0


async def _final(config: WorkerConfig, store: LoggedStore, workload: Workload,
                 base: int) -> None:
    anomalies = await quiesce(store, replace(workload, processes=base + 98))
    live: dict[str, list[list[Any]]] = {}
    for user in config.users:
        entries = await store.inner.get_history(user, FINAL_LIMIT)
        live[user] = [[e.id, e.seq, e.role, list(e.covers)] for e in entries]
    result = {"g11": [str(a) for a in anomalies], "live": live,
              "keep_last": int(store.keep_last),
              "search_staleness": float(store.search_staleness),
              # A smaller profile is judged the keyed way (entries known by content).
              "keyed": store.keyed, "recover": store.can("recover"),
              "compact": store.can("compact")}
    text = json.dumps(result, ensure_ascii=False)
    await asyncio.to_thread(Path(config.result).write_text, text, encoding="utf-8")


def main(argv: Iterable[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    config = WorkerConfig.loads(args[0])
    faulthandler.register(signal.SIGUSR1)  # the runner asks for stacks before killing a hung worker
    return asyncio.run(run(config))


if __name__ == "__main__":
    sys.exit(main())


class Tail:
    """Incremental reader of a worker's history file: ok completions and their invokes."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._offset = 0
        self._partial = b""
        self.pending: dict[int, Op] = {}
        self.oks: list[tuple[int, int]] = []  # (invoke time, ok time)

    def poll(self) -> None:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self._offset)
                data = handle.read()
        except FileNotFoundError:
            return
        self._offset += len(data)
        data = self._partial + data
        lines = data.split(b"\n")
        self._partial = lines.pop()
        for line in lines:
            op = Op.from_json(json.loads(line))
            if op.type == "invoke":
                self.pending[op.process] = op
            else:
                inv = self.pending.pop(op.process, None)
                if inv is not None and op.type == "ok":
                    self.oks.append((inv.time, op.time))
