"""The nemesis run: a store under load while clients crash, engines stop and the network lies.

One worker process at a time runs the seeded workload against a store opened
by name on shared engines, in a fixed namespace, through a proxy per engine.
Between bursts of load the runner injects one fault, seeded:

- ``crash``: SIGKILL the worker; a fresh one reopens the namespace (``recover()``).
- ``pause``: SIGSTOP an engine's process group, hold, SIGCONT.
- ``kill``: SIGKILL an engine, restart it on the same port and data dir.
- ``net``: the proxy adds latency, resets, black-holes or drops replies, then heals.
- ``failover``: the provider fails a replicated engine over (``postgres-ha``: kill the
  primary, promote the standby, rejoin the old primary as standby), in a thread while
  the load goes on; the same URL reaches the new primary. See ``failover.py``.
- ``link``: on a replicated engine whose members talk through proxies, delay every
  replication link (50 ms to 1 s) or cut the primary off from its replicas and
  Sentinels until they promote another, then heal (``EmbeddedProvider.lag_links``,
  ``cut_primary``, ``heal_links``; docs/topologies.md).

Every kind applies to a stack only where it has something to hit: ``pause``, ``kill``
and ``net`` need a networked engine behind a proxy, ``failover`` a replicated engine,
``link`` one whose links the provider can delay or cut.
The default (every kind, ``--kinds all``) is every kind that applies; a kind named
explicitly that does not apply is an error.

Then it waits for the store to answer again (the first acknowledged call
invoked after the fault ended). At the end a last worker recovers, reads
everything and asks ``consistent_state``; the merged history goes to the
checker.

With ``replicas=1`` (the default) load workers run one at a time, as one app
process restarted after each crash. With ``replicas=N`` N workers share the
namespace at once, as N app processes would, each store opened with
``shared=True``; a crash kills one of them at random and a fresh one takes its
place while the others go on.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nomnesia.adapters import ADAPTERS
from nomnesia.adapters.engines import EmbeddedProvider, EngineControl, get_provider, launcher
from nomnesia.adapters.engines.proxied import PROXIED_ENGINES, ProxiedProvider
from nomnesia.adapters.stacks import drop_kept_namespace

from ..core.workload import Mix
from . import user_store
from .commands import CommandControl, CommandFaults
from .config import NemesisConfig
from .failover import (
    failover_engines,
    fault_schedule,
    map_engines,
)
from .judge import judge
from .packages import (
    KINDS,
    NET_FAULTS,
    PACKAGES,
    Package,
    durable_kills,
    kinds_of,
    link_engines,
    process_kinds,
    stack_kinds,
)
from .report import FaultRecord, NemesisReport
from .user_store import describe
from .worker import Tail, WorkerConfig

__all__ = ["KINDS", "NET_FAULTS", "NemesisConfig", "kinds_of", "run_nemesis", "stack_kinds"]

ANSWER_BOUND = 30.0
"""Seconds the runner waits for the store to answer after a fault before giving up on it."""


@dataclass
class _Worker:
    generation: int
    history: str
    proc: asyncio.subprocess.Process
    tail: Tail
    killed_ns: int | None = None


class _Run:
    def __init__(self, cfg: NemesisConfig, provider: Any,
                 engines: Sequence[str] | None = None) -> None:
        self.cfg = cfg
        self.provider = provider
        self.workdir = Path()
        self.rng = random.Random(cfg.seed)
        self.namespace = f"nm_nemesis_{secrets.token_hex(6)}"
        self.proxied = ProxiedProvider(provider)
        self.control: Any = None
        self.workers: list[_Worker] = []
        self.live: list[_Worker] = []  # load workers running now (``replicas`` of them)
        self.standby: _Worker | None = None
        self.packages: dict[str, Package] = {}
        self.generations = 0
        self.t0 = time.monotonic()

        if engines is None:
            engines = tuple(ADAPTERS[cfg.adapter].engines) if cfg.adapter in ADAPTERS else (
                "postgres", "redis")
        self.engines = map_engines(tuple(engines), cfg.engine_map)
        self.targets = [e for e in self.engines if e in PROXIED_ENGINES]
        self.replicated = list(failover_engines(provider, self.engines))
        self.linked = link_engines(provider, self.engines)
        self.cascade = list(self.replicated) if cfg.cascade else []  # whatever the targets
        self.kinds = stack_kinds(cfg.kinds, networked=bool(self.targets),
                                 replicated=bool(self.replicated), linked=bool(self.linked))
        self.kinds = process_kinds(self.kinds, cfg.kinds, provider, cfg.commands)
        wanted_kills = cfg.targets.get("kill")
        self.kill_targets: list[str] | None = list(wanted_kills) if wanted_kills else None
        if cfg.user and "kill" in self.kinds and "kill" not in cfg.commands:
            self.kinds, self.kill_targets = durable_kills(
                self.kinds, cfg.kinds, self.targets, self.kill_targets, cfg.durable_postgres,
                self.engines)
        if "failover" in self.kinds and (wanted := cfg.targets.get("failover")) is not None:
            self.replicated = [e for e in self.replicated if e in wanted]
            if not self.replicated:
                raise ValueError(f"failover targets {list(wanted)} name no replicated engine "
                                 f"of {cfg.adapter} ({', '.join(self.engines)})")
        if (cfg.lag or cfg.cascade) and "failover" not in self.kinds:
            raise ValueError("lag and cascade change failovers: they need the failover kind")
        options: dict[str, Any] = {}
        if cfg.mix:
            try:  # here, not in every worker's log
                Mix(**cfg.mix)
            except TypeError as exc:
                raise ValueError(f"mix {cfg.mix}: {exc}") from exc
            options["mix"] = dict(cfg.mix)
        if cfg.engine_map:
            options["engine_map"] = dict(cfg.engine_map)
        if "failover" in self.kinds:
            options.update(failover_share=round(cfg.failover_share, 4), lag=cfg.lag,
                           cascade=cfg.cascade, failover_targets=list(self.replicated))
        name = describe(cfg.store, cfg.interface) if cfg.user else cfg.adapter
        self.report = NemesisReport(name, cfg.seed, list(self.kinds),
                                    replicas=cfg.replicas, options=options)
        self.urls: dict[str, str] = {}
        self.real: dict[str, str] = {}
        self.load_end_ns: int | None = None

    def _label(self) -> str:
        """The run's name in file names: the adapter, or the user's factory."""
        name = self.cfg.adapter or self.cfg.store or self.cfg.interface
        return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)

    # -- workers ------------------------------------------------------------------------

    def _config(self, generation: int) -> WorkerConfig:
        options = dict(self.cfg.store_options)
        if self.cfg.replicas > 1:
            options.setdefault("shared", True)
        if self.cfg.engine_map:
            options.setdefault("engine_map", dict(self.cfg.engine_map))
        return WorkerConfig(
            adapter=self.cfg.adapter, urls=self.urls, namespace=self.namespace,
            history=str(self.workdir / f"history-{generation:04d}.jsonl"), generation=generation,
            seed=self.cfg.seed, timeout=self.cfg.timeout, clients=self.cfg.clients,
            standby=True, result=str(self.workdir / "final.json"), pace=self.cfg.pace,
            options=options, factory=self.cfg.store_factory, mix=dict(self.cfg.mix),
            store=self.cfg.store, interface=self.cfg.interface)

    async def spawn(self, command: str = "load") -> _Worker:
        """Activate the warm standby with ``command`` (the next one starts after recovery,
        so that its imports do not compete with the store's recovery for the CPU)."""
        if self.standby is None:
            self.standby = await self._start_standby()
        worker, self.standby = self.standby, None
        assert worker.proc.stdin is not None
        worker.proc.stdin.write(f"{command}\n".encode())
        await worker.proc.stdin.drain()
        self.workers.append(worker)
        self.live.append(worker)
        return worker

    async def standby_ready(self) -> None:
        """Wait (bounded, the load goes on) until the standby has imported everything."""
        await self.ensure_standby()
        assert self.standby is not None
        ready = Path(self.standby.history + ".ready")
        deadline = time.monotonic() + ANSWER_BOUND
        while not await asyncio.to_thread(ready.exists) and time.monotonic() < deadline:
            if self.standby.proc.returncode is not None:
                break
            await asyncio.sleep(0.01)  # bounded poll for the standby's ready file

    async def ensure_standby(self) -> None:
        if self.standby is None:
            self.standby = await self._start_standby()

    async def _start_standby(self) -> _Worker:
        self.generations += 1
        generation = self.generations
        config = self._config(generation)
        log = (self.workdir / f"worker-{generation:04d}.log").open("wb")
        try:
            # Behind the launcher, not a preexec_fn: see nomnesia.adapters.engines._launch.
            argv = launcher([sys.executable, "-m", "nomnesia.suite.nemesis.worker",
                             config.dumps()], parent=os.getpid())
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT)
        finally:
            log.close()
        return _Worker(generation, config.history, proc, Tail(config.history))

    async def kill_worker(self, worker: _Worker | None = None) -> int:
        """SIGKILL ``worker``, by default a live load worker chosen by the seeded rng."""
        if worker is None:  # one worker draws nothing: a seed replays as it did before replicas
            worker = self.live[0] if len(self.live) == 1 else self.rng.choice(self.live)
        if worker in self.live:
            self.live.remove(worker)
        with contextlib.suppress(ProcessLookupError):
            worker.proc.send_signal(signal.SIGKILL)
        worker.killed_ns = time.monotonic_ns()
        await worker.proc.wait()
        return worker.killed_ns

    def _worker_log(self, worker: _Worker, lines: int = 8) -> str:
        path = self.workdir / f"worker-{worker.generation:04d}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    async def _dump_and_kill(self, worker: _Worker) -> None:
        """A hung worker: ask for its stacks (faulthandler on SIGUSR1), then kill it."""
        with contextlib.suppress(ProcessLookupError):
            worker.proc.send_signal(signal.SIGUSR1)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(worker.proc.wait(), 1.0)  # time to write the dump
        await self.kill_worker(worker)

    async def wait_answer(self, since_ns: int, count: int) -> float | None:
        """Seconds from ``since_ns`` to the ``count``-th ok call invoked after it (bounded)."""
        deadline = time.monotonic() + ANSWER_BOUND
        pause = 0.002
        while time.monotonic() < deadline:
            after: list[int] = []
            for worker in list(self.live):
                worker.tail.poll()
                after += [ok for inv, ok in worker.tail.oks if inv >= since_ns]
                if worker.proc.returncode is not None:
                    self.live.remove(worker)
                    self.report.errors.append(
                        f"worker {worker.generation} exited with {worker.proc.returncode}:\n"
                        f"{self._worker_log(worker)}")
                    await self.spawn()
            if len(after) >= count:
                return (sorted(after)[count - 1] - since_ns) / 1e9
            await asyncio.sleep(pause)  # bounded poll of the worker's history file
            pause = min(pause * 2, 0.05)
        return None

    # -- faults -------------------------------------------------------------------------

    def _since(self) -> float:
        return round(time.monotonic() - self.t0, 3)

    def _mark(self) -> tuple[float, int, float]:
        """Now, three ways: seconds since the run started (the report's), monotonic ns (the
        histories' clock, where the fault's window starts) and monotonic seconds."""
        now_ns = time.monotonic_ns()
        return round(now_ns / 1e9 - self.t0, 3), now_ns, now_ns / 1e9

    async def fault(self, kind: str) -> FaultRecord:
        """One fault of ``kind``: drawn, started, held while it lasts, healed, recorded."""
        hold = self.rng.uniform(*self.cfg.hold)
        package = self.packages[kind]
        f, target = package.draw(self.rng)
        await package.prepare()
        started, started_ns, begin = self._mark()
        try:
            done = await package.part.start(f, target, self.rng)
            if done.held:
                await asyncio.sleep(hold)  # the fault's duration, not a wait for the store
        finally:
            await package.part.heal(target)
        return FaultRecord(kind, target, done.detail, started, time.monotonic() - begin,
                           note=done.note, started_ns=started_ns, figures=done.figures)

    # -- the run ------------------------------------------------------------------------

    async def run(self) -> NemesisReport:
        real = await asyncio.to_thread(self.provider.urls, *self.engines)
        # Inside the provider's private dir when there is one: its watchdog removes it
        # even if this process is killed.
        self.workdir = Path(tempfile.mkdtemp(prefix="nomnesia-nemesis-",
                                             dir=getattr(self.provider, "directory", None)))
        try:
            return await self._run(real)
        finally:
            if keep := os.environ.get("NOMNESIA_NEMESIS_KEEP"):  # worker logs and histories
                shutil.copytree(self.workdir, Path(keep) / f"{self._label()}-workdir",
                                dirs_exist_ok=True)
            shutil.rmtree(self.workdir, ignore_errors=True)

    async def _run(self, real: dict[str, str]) -> NemesisReport:
        cfg = self.cfg
        self.real = real
        if cfg.durable_postgres and "postgres" in real and cfg.backends == "embedded":
            await asyncio.to_thread(_synchronous_commit, real["postgres"])
        self.urls = await asyncio.to_thread(self.proxied.urls, *self.engines)
        if {"pause", "kill"} & set(self.kinds):
            if cfg.commands.keys() & {"pause", "kill"}:

                self.control = CommandControl(self.provider)
            else:
                self.control = EngineControl(self.provider)
        self.packages = {kind: PACKAGES[kind](self) for kind in self.kinds}
        try:
            for _ in range(cfg.replicas):
                await self.spawn()
            await self.ensure_standby()
            schedule = fault_schedule(self.kinds, cfg.faults, self.rng, cfg.failover_share)
            for i in range(cfg.faults):
                if await self.wait_answer(time.monotonic_ns(), cfg.load_between) is None:
                    self.report.errors.append(f"no load before fault {i}: the store stopped "
                                              "answering")
                    break
                kind = schedule[i] if schedule is not None else self.rng.choice(self.kinds)
                try:
                    record = await self.fault(kind)
                except Exception as exc:  # the nemesis itself failed (e.g. an engine restart)
                    self.report.errors.append(f"fault {i} ({kind}) could not be injected or "
                                              f"healed: {type(exc).__name__}: {exc}")
                    break
                record.recovered_after = await self.wait_answer(time.monotonic_ns(), 1)
                self.report.faults.append(record)
                await self.ensure_standby()
                if (i + 1) % 25 == 0:
                    cfg.log(f"  {i + 1}/{cfg.faults} faults, {self._since():.0f} s")
            if self.report.faults:  # the last fault's window gets its load too, as the others
                await self.wait_answer(time.monotonic_ns(), cfg.load_between)
            self.load_end_ns = time.monotonic_ns()  # the last fault's window ends here
            await asyncio.gather(*(self._stop(worker) for worker in list(self.live)))
            final = await self.spawn("final")
            await self._await_exit(final, 300, "the final worker did not finish within 300 s")
            if final.proc.returncode:
                self.report.errors.append(f"final worker exited with {final.proc.returncode}:\n"
                                          f"{self._worker_log(final)}")
        finally:
            for worker in [*self.workers, *([self.standby] if self.standby else [])]:
                if worker.proc.returncode is None:
                    with contextlib.suppress(ProcessLookupError):
                        worker.proc.kill()
                    worker.killed_ns = worker.killed_ns or time.monotonic_ns()
                    await worker.proc.wait()
            if self.control is not None:
                self.control.close()
            self.proxied.close()
            if not cfg.user:  # a user's store drops its own data when the final reader closes
                with contextlib.suppress(Exception):  # best effort: a fault may have broken one
                    await drop_kept_namespace(real, self.namespace, timeout=10)
        self._judge()
        return self.report

    async def _stop(self, worker: _Worker) -> None:
        """SIGTERM a load worker at the end: its clients are cancelled and the store closed."""
        self.live.remove(worker)
        if worker.proc.returncode is None:
            worker.proc.send_signal(signal.SIGTERM)
            await self._await_exit(worker, 30, "a load worker ignored SIGTERM for 30 s")

    async def _await_exit(self, worker: _Worker, seconds: float, failure: str) -> None:
        """Wait for ``worker`` to exit; past ``seconds``, dump its stacks, kill it, report."""
        try:
            await asyncio.wait_for(worker.proc.wait(), seconds)
        except asyncio.TimeoutError:
            await self._dump_and_kill(worker)
            self.report.errors.append(f"{failure}:\n{self._worker_log(worker, 60)}")

    def _judge(self) -> None:
        keep = os.environ.get("NOMNESIA_NEMESIS_KEEP")
        judge(self.report, [(w.history, w.killed_ns) for w in self.workers],
              load_end_ns=self.load_end_ns or time.monotonic_ns(), t0=self.t0,
              result_path=self.workdir / "final.json",
              keep=Path(keep) / f"{self._label()}-history.json" if keep else None,
              history_file=Path(self.cfg.history) if self.cfg.history else None)


def _synchronous_commit(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
        dbname = conn.info.dbname
        conn.execute(f'ALTER DATABASE "{dbname}" SET synchronous_commit = on')


async def run_nemesis(cfg: NemesisConfig, provider: Any = None) -> NemesisReport:
    """Run the nemesis on ``cfg.adapter``; with no provider, on embedded engines of its own."""
    unknown = set(cfg.kinds) - set(KINDS)
    if unknown or not cfg.kinds:
        raise ValueError(f"unknown fault kinds {sorted(unknown)}; known: {', '.join(KINDS)}")
    own = provider is None
    if own:
        provider = EmbeddedProvider() if cfg.backends == "embedded" else \
            get_provider(cfg.backends)
    elif {"pause", "kill"} & set(cfg.kinds) - set(cfg.commands) and not isinstance(
            provider, EmbeddedProvider):
        raise ValueError("engine faults (pause, kill) need an EmbeddedProvider or the "
                         "user's commands for them (--fault-command)")
    closing = provider
    if cfg.commands:
        provider = CommandFaults(provider, cfg.commands)
    try:
        engines = await asyncio.to_thread(_user_engines, cfg, provider) if cfg.user else None
        return await _Run(cfg, provider, engines).run()
    finally:
        if own:
            await asyncio.to_thread(closing.close)


def _user_engines(cfg: NemesisConfig, provider: Any) -> list[str]:
    """The engines a user's store asks for, learned by opening it once (``user_store.py``)."""

    factory = user_store.suite_factory(cfg.store, cfg.interface)
    asked = user_store.probe_engines(factory, provider)
    name = user_store.describe(cfg.store, cfg.interface)
    if not asked:
        raise ValueError(f"{name} asked the suite for no engine (engine_url): its data lives "
                         "in the process the nemesis kills, so there is nothing to judge "
                         "across crashes. Give it engines from "
                         "nomnesia.suite.engines.engine_url (docs/faults.md)")
    kept, named = user_store.keeps_data(factory, provider.urls(*asked),
                                        f"nm_probe_{secrets.token_hex(6)}")
    if not kept and not named:
        raise ValueError(f"{name} keeps no data beyond its store object (an append was gone "
                         "when the factory opened a second one), so the nemesis cannot judge "
                         "it: its workers and its final reader each open their own. Give the "
                         "factory its namespace from nomnesia.suite.engines.store_namespace() "
                         "and drop the data on close only when keep_data() is false, as the "
                         "README shows (docs/faults.md)")
    if not kept:
        cfg.log(f"  {name}: an append was gone when the factory reopened the same namespace "
                "(store_namespace() was asked for): the run goes on, and what a crash loses "
                "is reported as lost (G1)")
    return asked
