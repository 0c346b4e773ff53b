"""PostgreSQL primary + streaming standby: a topology composed of two ``PostgresPart`` members.

Two engine kinds: ``postgres-ha`` (synchronous: a COMMIT returns once the standby
has flushed it, ``synchronous_standby_names='*'`` with ``synchronous_commit=on``)
and ``postgres-ha-async`` (a COMMIT returns once the primary has it; the standby
follows). Clients get one multi-host URL with ``target_session_attrs=read-write``,
so libpq finds whichever member is the primary, before and after a failover,
without reconfiguration.

The provider plays the failover manager (as Patroni would): :meth:`PostgresPair.failover`
kills the primary (SIGKILL of its process group), promotes the standby, then
rewinds the old primary (``pg_rewind``) and starts it again, on its old port, as the
new primary's standby. In the synchronous mode every member after the first runs
with ``synchronous_standby_names='*'`` from its command line, so a promoted standby
is synchronous at once: its COMMITs wait until the old primary has rejoined (strict,
like Patroni's ``synchronous_mode_strict``): writes are unavailable for that time,
and nothing they acknowledged exists on one member only. The asynchronous mode
acknowledges what the standby may not have, and a failover loses it; that is the
positive control of ``tests/test_topologies.py``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from tenacity import (
    Retrying,
    retry_if_exception_type,
    retry_if_result,
    stop_after_delay,
    wait_exponential,
)

from nomnesia.suite.contract.errors import BackendUnavailable

from .part import READY_TIMEOUT, EngineHost, EnginePart, Running, _tail
from .part import freeze as _freeze
from .part import thaw as _thaw
from .postgres_part import (
    PG_DATABASE,
    PG_USER,
    POSTGRES_WHEEL,
    PostgresPart,
    postgres_bin_dir,
    psql_argv,
    run_tool,
)

__all__ = ["TOPOLOGIES", "Member", "PostgresPair"]

SYNC_SETTING = ("-c", "synchronous_standby_names=*")
SPLIT_BRAIN_S = 1.0
"""How long a frozen, then thawed, old primary runs beside the promoted standby before
the manager fences it (``failover(freeze=True)``)."""
WAL_KEEP = "128MB"

TOPOLOGIES: dict[str, bool] = {"postgres-ha": True, "postgres-ha-async": False}
"""The PostgreSQL topologies by engine kind: whether the standby is synchronous."""


@dataclass
class Member:
    """One PostgreSQL of the pair: its data directory, log and port (kept across restarts)."""

    name: str
    data: Path
    log: Path
    port: int
    running: Running


class PostgresPair(EnginePart):
    """A primary and a streaming standby; its URL names both (``target_session_attrs``)."""

    wheel = POSTGRES_WHEEL

    def __init__(self, engine: str, *, synchronous: bool,
                 bin_dir: Callable[[], Path] = postgres_bin_dir) -> None:
        self.engine = engine
        self.synchronous = synchronous
        self._part = PostgresPart(bin_dir, data=f"{engine}-a", log=f"{engine}-a.log")
        self._part.engine = engine  # its processes are named (and explained) as the pair's
        self._members: list[Member] = []  # [primary, standby]
        self._bin: Path | None = None
        self._lock = threading.Lock()
        self.failovers = 0
        self.rewinds_failed = 0
        """Rejoins that needed a base backup because ``pg_rewind`` failed."""

    # -- start -------------------------------------------------------------------

    def start(self, host: EngineHost) -> str:
        first = self._part.start(host)  # initdb, start, self-check: the primary
        bin_dir = self._bin = self._part._postgres_bin(host)
        workdir = host.workdir()
        primary_port = urlsplit(first).port
        assert primary_port is not None and self._part.running is not None
        primary = Member("a", workdir / f"{self.engine}-a", workdir / f"{self.engine}-a.log",
                         primary_port, self._part.running)
        # pg_rewind reads the old primary's WAL back to the last common checkpoint, and
        # the crash recovery it runs first recycled exactly that segment ("could not
        # find previous WAL record"). Before the base backup, so both members keep it.
        self._sql(host, primary, f"ALTER SYSTEM SET wal_keep_size = '{WAL_KEEP}'")
        self._sql(host, primary, "SELECT pg_reload_conf()")
        data, log = workdir / f"{self.engine}-b", workdir / f"{self.engine}-b.log"
        self._tool(host, log, "pg_basebackup", "-h", "127.0.0.1", "-p", str(primary_port),
                   "-U", PG_USER, "-D", str(data), "-R", "-X", "stream", "--checkpoint=fast",
                   "--no-sync", "-d", f"application_name={self.engine}-b")
        launched: list[Running] = []
        start, shm = self._part.launcher(host, bin_dir, data, log, launched, *self._settings())
        port = host.on_free_port(self.engine, start)
        if shm[0] is not None:
            host.watch_shm(shm[0])
        standby = Member("b", data, log, port, launched[-1])
        self._members = [primary, standby]
        if self.synchronous:  # only now: the primary's self-check wrote with no standby
            self._sql(host, primary, "ALTER SYSTEM SET synchronous_standby_names = '*'")
            self._sql(host, primary, "SELECT pg_reload_conf()")
        self._await_streaming(host)
        return self.url()

    def url(self) -> str:
        """Both members, the primary first; libpq skips the one that is not read-write."""
        hosts = ",".join(f"127.0.0.1:{m.port}" for m in self._members)
        return (f"postgresql://{PG_USER}@{hosts}/{PG_DATABASE}"
                "?target_session_attrs=read-write&connect_timeout=2")

    @property
    def members(self) -> list[Member]:
        """[primary, standby], as the pair's manager last arranged them."""
        return list(self._members)

    def _settings(self) -> tuple[str, ...]:
        return SYNC_SETTING if self.synchronous else ()

    # -- failover ----------------------------------------------------------------

    def failover(self, host: EngineHost, *, freeze: bool = False) -> dict[str, float | int]:
        """Kill the primary, promote the standby, rejoin the old primary as its standby.

        With ``freeze``, the primary is frozen (SIGSTOP, as a VM pause or a long stall)
        instead, the standby promoted, and the old primary thawed for ``SPLIT_BRAIN_S``
        while it still takes itself for the primary: clients whose multi-host URL names
        it first reach it. Then the manager fences it (SIGKILL) and rejoins it. In the
        synchronous mode its COMMITs wait for a standby it no longer has: nothing is
        acknowledged there. In the asynchronous mode they are, and the rewind drops them.
        """
        with self._lock:
            began = time.monotonic()
            if freeze:
                frozen = _freeze(self._members[0].running.proc.pid)
                promoted = self.promote(host)
                _thaw(frozen)
                time.sleep(SPLIT_BRAIN_S)  # the fault: two primaries, for this long
                self.kill_primary(host)
            else:
                self.kill_primary(host)
                promoted = self.promote(host)
            self.rejoin(host)
            self.failovers += 1
            return {"promoted_s": round(promoted - began, 3),
                    "rejoined_s": round(time.monotonic() - began, 3),
                    "failovers": self.failovers, "rewinds_failed": self.rewinds_failed}

    def kill_primary(self, host: EngineHost) -> None:
        """SIGKILL the primary's process group: it acknowledged what it acknowledged."""
        host.discard(self._members[0].running)

    def promote(self, host: EngineHost) -> float:
        """Promote the standby (waiting until it accepts writes); when it did."""
        standby = self._members[1]
        self._sql(host, standby, "SELECT pg_promote(true, 30);")
        return time.monotonic()

    def rejoin(self, host: EngineHost) -> None:
        """Rewind the old primary to the new one's history and start it as its standby.

        When ``pg_rewind`` cannot (it reads the old primary's WAL back to the last
        checkpoint before the histories diverged, and a member that was primary for
        long without a checkpoint may have recycled it), the old primary is made anew
        from a base backup of the new one, as Patroni's
        ``remove_data_directory_on_rewind_failure`` does."""
        old, new = self._members
        assert self._bin is not None
        source = f"host=127.0.0.1 port={new.port} user={PG_USER} dbname={PG_DATABASE}"
        try:
            self._tool(host, old.log, "pg_rewind", "-D", str(old.data), "--source-server",
                       source)
        except BackendUnavailable:
            self.rewinds_failed += 1
            shutil.rmtree(old.data)
            self._tool(host, old.log, "pg_basebackup", "-h", "127.0.0.1", "-p", str(new.port),
                       "-U", PG_USER, "-D", str(old.data), "-R", "-X", "stream",
                       "--checkpoint=fast", "--no-sync",
                       "-d", f"application_name={self.engine}-{old.name}")
        else:
            signal_file = old.data / "standby.signal"
            signal_file.touch()
            with open(old.data / "postgresql.auto.conf", "a", encoding="utf-8") as conf:
                conf.write(f"primary_conninfo = 'host=127.0.0.1 port={new.port} "
                           f"user={PG_USER} application_name={self.engine}-{old.name}'\n")
            if host.as_user is not None:
                os.chown(signal_file, *host.as_user)
        launched: list[Running] = []
        start, shm = self._part.launcher(host, self._bin, old.data, old.log, launched,
                                         *self._settings())
        host.on_port(self.engine, old.port, start)
        if shm[0] is not None:
            host.watch_shm(shm[0])
        old.running = launched[-1]
        self._members = [new, old]
        self._await_streaming(host)

    # -- link faults -------------------------------------------------------------

    link_faults: tuple[str, ...] = ("lag",)
    """What ``EmbeddedProvider.lag_links`` can do to the pair (a cut is ``detach_standby``)."""

    def lag_links(self, host: EngineHost, ms: float) -> str:
        """Make the standby apply what it receives ``ms`` late
        (``recovery_min_apply_delay``): a reader of the standby sees the past, while a
        synchronous COMMIT still returns once the standby has *flushed* it, so writers
        wait no longer. What was done."""
        standby = self._members[1]
        self._sql(host, standby, f"ALTER SYSTEM SET recovery_min_apply_delay = '{ms:g}ms'")
        self._sql(host, standby, "SELECT pg_reload_conf()")
        return f"{self.engine} standby :{standby.port} applies WAL {ms:g} ms late"

    def heal_links(self, host: EngineHost) -> None:
        """Both members apply at once again (the setting is reset on each)."""
        for member in self._members:
            self._sql(host, member, "ALTER SYSTEM RESET recovery_min_apply_delay")
            self._sql(host, member, "SELECT pg_reload_conf()")

    # -- helpers -----------------------------------------------------------------

    def _await_streaming(self, host: EngineHost) -> None:
        """Wait (bounded) until the primary streams to the standby, as ``sync`` if it should,
        and the standby takes read-only connections (hot standby): a store that reads the
        standby (``target_session_attrs=standby``) must find it from the first call."""
        want = "sync" if self.synchronous else "async"
        query = "SELECT sync_state FROM pg_stat_replication WHERE state = 'streaming';"

        def states() -> list[str]:
            found = self._sql(host, self._members[0], query).split()
            if want in found and "t" not in self._sql(
                    host, self._members[1], "SELECT pg_is_in_recovery();").split():
                return []
            return found

        retrying = Retrying(stop=stop_after_delay(READY_TIMEOUT * host.slowdown),
                            wait=wait_exponential(multiplier=0.01, max=0.2),
                            retry=retry_if_result(lambda states: want not in states)
                            | retry_if_exception_type(BackendUnavailable))
        try:
            retrying(states)
        except Exception as exc:
            raise BackendUnavailable(
                self.engine, f"the standby did not stream ({want}) within "
                f"{READY_TIMEOUT * host.slowdown:g}s:\n{_tail(self._members[1].log)}") from exc

    def _sql(self, host: EngineHost, member: Member, sql: str) -> str:
        """Run ``sql`` on ``member`` with the build's psql; its output."""
        assert self._bin is not None
        try:
            done = subprocess.run([*psql_argv(self._bin, member.port), "-c", sql],
                                  capture_output=True, timeout=READY_TIMEOUT * host.slowdown,
                                  check=False)
        except subprocess.TimeoutExpired as exc:
            raise BackendUnavailable(self.engine, f"{sql!r} on {member.name} timed out") from exc
        if done.returncode != 0:
            raise BackendUnavailable(self.engine, f"{sql!r} on {member.name}: "
                                     f"{done.stderr.decode(errors='replace').strip()}")
        return done.stdout.decode(errors="replace")

    def _tool(self, host: EngineHost, log: Path, tool: str, *args: str) -> None:
        """Run one of the build's tools as the engines' user, to completion (bounded)."""
        bin_dir = self._bin or self._part._postgres_bin(host)
        run_tool(host, self.engine, [*host.emulator(self.engine), str(bin_dir / tool), *args],
                 log, program=tool)

    def self_check(self, host: EngineHost, url: str) -> str:
        primary, standby = self._members
        version = self._sql(host, primary, "SHOW server_version;").strip()
        mode = "a synchronous" if self.synchronous else "an asynchronous"
        return (f"PostgreSQL {version}, primary :{primary.port} streaming to {mode} "
                f"standby :{standby.port}")
