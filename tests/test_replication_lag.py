"""Replication lag: the suite catches a store that reads a replica, and only that store.

The controls (``replica_stores.py``) write a user's history to the primary and read it
from the primary or from a replica, on the suite's ``redis-sentinel`` and
``postgres-ha``, run through ``--store`` as a user would. The proxy's modes per peer,
which the lag rides on, are tested without engines.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

# Imported here, before pytester's inline runs: a run that imports psycopg first drops it
# from sys.modules when it ends, while psycopg's compiled part keeps raising the first
# import's exception classes, which the next run's psycopg then fails to catch.
import psutil
import psycopg  # noqa: F401
import pytest

from nomnesia.adapters.engines.proxy import Proxy
from nomnesia.adapters.engines.toxics import make

pytest_plugins = ("pytester",)

ROOT = Path(__file__).resolve().parent.parent


def _run(pytester: pytest.Pytester, suite_args: tuple[str, ...], factory: str
         ) -> tuple[int, dict[str, str], int]:
    """The replication-lag test on ``factory``: (passed, failures by node id, skipped)."""
    pytester.syspathinsert(str(ROOT))
    reprec = pytester.inline_run(*suite_args, "-k", "replication_lag",
                                 "--store", f"tests.replica_stores:{factory}",
                                 "--nomnesia-seed", "20261207")
    passed, skipped, failed = reprec.listoutcomes()
    return len(passed), {r.nodeid: r.longreprtext for r in failed}, len(skipped)


@pytest.mark.slow
@pytest.mark.parametrize("factory", ["sentinel_replica", "postgres_standby"])
def test_a_store_that_reads_a_replica_is_caught_under_g3(
        pytester: pytest.Pytester, suite_args: tuple[str, ...], factory: str) -> None:
    _, failures, _ = _run(pytester, suite_args, factory)
    assert len(failures) == 1, failures
    (text,) = failures.values()
    assert re.search(r"^G3 read your writes: read \d+ .* misses .* reappears", text,
                     re.MULTILINE), text[:2000]
    assert "delayed by 300 ms" in text or "applies WAL 300 ms late" in text, text[:2000]
    assert "--nomnesia-seed 20261207" in text


@pytest.mark.slow
@pytest.mark.parametrize("factory", ["sentinel_primary", "postgres_primary"])
def test_the_same_store_reading_the_primary_passes(
        pytester: pytest.Pytester, suite_args: tuple[str, ...], factory: str) -> None:
    passed, failures, skipped = _run(pytester, suite_args, factory)
    assert (passed, failures, skipped) == (1, {}, 0)


async def _echo_through(proxy_for: list[Proxy], source: str) -> tuple[float, int]:
    """Seconds one echo takes through a fresh proxy whose peer ``127.0.0.9`` has a latency of
    its own, the client bound to ``source``, and how often that latency delayed a chunk."""
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(await reader.read(100))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    proxy = await Proxy.start("127.0.0.1", port)
    proxy_for.append(proxy)
    latency = make("latency", ms=300)
    proxy.set_peers({"127.0.0.9"}, latency)
    loop = asyncio.get_running_loop()
    began = loop.time()
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port,
                                                   local_addr=(source, 0))
    writer.write(b"ping")
    await writer.drain()
    assert await asyncio.wait_for(reader.read(100), 5) == b"ping"
    writer.close()
    await proxy.aclose()
    server.close()
    return loop.time() - began, latency.hits


async def test_a_peer_mode_delays_that_peer_only() -> None:
    """The peer's echo is delayed both ways; another source's never (by the toxic's own
    count, not a wall-clock bound a loaded machine could break)."""
    proxies: list[Proxy] = []
    took, hits = await _echo_through(proxies, "127.0.0.9")
    assert took >= 0.6 and hits >= 2, (took, hits)  # 300 ms each way
    took, hits = await _echo_through(proxies, "127.0.0.1")
    assert hits == 0, (took, hits)


async def test_a_peer_refused_is_reset_and_the_others_pass() -> None:
    """Any toxic can be a peer's own: the proxy calls the same hooks for a peer as for all."""

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(await reader.read(100))
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    proxy = await Proxy.start("127.0.0.1", server.sockets[0].getsockname()[1])
    refused = make("refuse")
    proxy.set_peers({"127.0.0.9"}, refused)
    try:
        answers = {}
        for source in ("127.0.0.9", "127.0.0.1"):
            reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port,
                                                           local_addr=(source, 0))
            writer.write(b"ping")
            try:
                answers[source] = await asyncio.wait_for(reader.read(100), 5)
            except ConnectionResetError:
                answers[source] = b""
            writer.close()
        assert answers == {"127.0.0.9": b"", "127.0.0.1": b"ping"}
        assert refused.hits == 1
    finally:
        await proxy.aclose()
        server.close()


_PARTITIONED = textwrap.dedent("""
    import json, sys, time
    from nomnesia.adapters.engines import EmbeddedProvider
    provider = EmbeddedProvider()
    provider.url("postgres-ha")
    provider.lag_links("postgres-ha", 1000)
    provider.lag_links("redis-sentinel", 1000)
    provider.cut_primary("redis-sentinel")  # returns once the Sentinels promoted another
    print(json.dumps({"dir": str(provider.directory), "watchdog": provider._watchdog.pid}),
          flush=True)
    time.sleep(120)
""")


@pytest.mark.slow
def test_a_partitioned_run_killed_leaves_nothing_behind() -> None:
    """SIGKILL of a run mid-partition: within 10 s no engine process, proxy or directory is
    left (the proxies are threads of the run; the watchdog takes the engines)."""
    child = subprocess.Popen([sys.executable, "-c", _PARTITIONED], stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout is not None
        info = json.loads(child.stdout.readline())
        processes = [p for p in psutil.Process(child.pid).children(recursive=True)
                     if p.pid != info["watchdog"]]
        ports = {c.laddr.port for c in psutil.Process(child.pid).net_connections("tcp")
                 if c.status == psutil.CONN_LISTEN}
        directory = Path(info["dir"])
        assert directory.is_dir() and len(processes) >= 8 and ports  # 2 postgres, 6 redis
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()

    def left() -> list[str]:
        alive = [f"pid {p.pid}" for p in processes if _running(p)]
        listening = {c.laddr.port for c in psutil.net_connections("tcp")
                     if c.status == psutil.CONN_LISTEN} & ports
        return alive + [f"port {port}" for port in sorted(listening)] + (
            [str(directory)] if directory.exists() else [])

    deadline = time.monotonic() + 10
    while left() and time.monotonic() < deadline:
        time.sleep(0.1)  # bounded poll: the watchdog's cleanup
    remaining = left()
    for proc in processes:  # never leave them behind, even when failing
        with contextlib.suppress(psutil.Error):
            proc.kill()
    assert not remaining, f"left behind 10 s after SIGKILL: {remaining}"


def _running(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
