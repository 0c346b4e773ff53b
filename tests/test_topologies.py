"""PostgreSQL primary + streaming standby (``postgres-ha``, ``postgres-ha-async``), embedded.

What each topology promises a memory store, checked on real processes: the
synchronous pair loses no acknowledged COMMIT across a failover (the primary is
SIGKILLed while its standby is frozen: the COMMIT is never acknowledged), and the
asynchronous pair does lose one (the positive control: acknowledged, then gone).
One multi-host URL reaches whichever member is the primary.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time

import psutil
import psycopg
import pytest

from nomnesia.adapters.engines import EmbeddedProvider
from nomnesia.adapters.engines.postgres_ha import PostgresPair

# Each test fails a pair over (seconds each): nox -s slow runs them, nox -s tests does not.
pytestmark = [pytest.mark.xdist_group("postgres-ha"), pytest.mark.slow]


@pytest.fixture
def pairs(engines: EmbeddedProvider) -> EmbeddedProvider:
    """This worker's shared engines (conftest's ``engines``), under this module's name."""
    return engines


def _pair(provider: EmbeddedProvider, engine: str) -> PostgresPair:
    provider.url(engine)
    part = provider._parts[engine]
    assert isinstance(part, PostgresPair)
    return part


def _member_url(pair: PostgresPair, index: int) -> str:
    return f"postgresql://postgres@127.0.0.1:{pair.members[index].port}/postgres"


def _rows(url: str, table: str) -> list[int]:
    with psycopg.connect(url, autocommit=True) as conn:
        return [r[0] for r in conn.execute(f"SELECT x FROM {table} ORDER BY x").fetchall()]


def _frozen(pair: PostgresPair) -> list[psutil.Process]:
    """SIGSTOP the standby: its postmaster and every process of it (its WAL receiver stops
    acknowledging). Not its process group: each PostgreSQL child calls setsid()."""
    postmaster = psutil.Process(pair.members[1].running.proc.pid)
    frozen = [postmaster, *postmaster.children(recursive=True)]
    for process in frozen:
        process.send_signal(signal.SIGSTOP)
    return frozen


def _thawed(frozen: list[psutil.Process]) -> None:
    for process in frozen:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.send_signal(signal.SIGCONT)


def _detach(pair: PostgresPair) -> None:
    """Stop the standby's WAL receiver (no ``primary_conninfo``): it falls behind, as
    when cut off from the primary, yet it can still be promoted."""
    standby = _member_url(pair, 1)
    with psycopg.connect(standby, autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET primary_conninfo = ''")
        conn.execute("SELECT pg_reload_conf()")
        for _ in range(200):  # bounded: 10 s
            if conn.execute("SELECT count(*) FROM pg_stat_wal_receiver").fetchone() == (0,):
                return
            time.sleep(0.05)
    raise AssertionError("the standby's WAL receiver did not stop within 10 s")


@pytest.mark.parametrize(("engine", "freeze"), [
    ("postgres-ha", False), ("postgres-ha-async", False), ("postgres-ha", True)])
def test_one_url_reaches_the_primary_before_and_after_a_failover(
        pairs: EmbeddedProvider, engine: str, freeze: bool) -> None:
    """Killed, or frozen and thawed beside the promoted standby before it is fenced."""
    url = pairs.url(engine)
    assert "target_session_attrs=read-write" in url and url.count("127.0.0.1:") == 2
    table = engine.replace("-", "_") + ("_freeze" if freeze else "_failover")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (x int)")
        conn.execute(f"INSERT INTO {table} VALUES (1)")
    pair = _pair(pairs, engine)
    before = pair.members[0].port
    figures = pairs.failover(engine, freeze=freeze)
    assert pair.members[0].port != before and pair.members[1].port == before
    assert figures["failovers"] >= 1 and 0 < figures["promoted_s"] <= figures["rejoined_s"]
    with psycopg.connect(url, autocommit=True) as conn:  # the same URL, the new primary
        conn.execute(f"INSERT INTO {table} VALUES (2)")
    assert _rows(url, table) == [1, 2]
    assert "streaming" in pairs.self_check(engine)


def test_a_rejoin_pg_rewind_cannot_do_takes_a_base_backup(pairs: EmbeddedProvider) -> None:
    """pg_rewind reads the old primary's WAL back to its last checkpoint before the
    histories diverged; a member long primary without one may have recycled it (a
    200-fault nemesis run met it). Without its WAL, the old primary is rebuilt from a
    base backup of the new one and streams again."""
    url = pairs.url("postgres-ha")
    pair = _pair(pairs, "postgres-ha")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE rewind_fallback (x int)")
        conn.execute("INSERT INTO rewind_fallback VALUES (1)")
    pair.kill_primary(pairs)
    pair.promote(pairs)
    old = pair.members[0]
    for segment in (old.data / "pg_wal").glob("0*"):
        segment.unlink()  # what recycling leaves pg_rewind: nothing to read back
    before = pair.rewinds_failed
    pair.rejoin(pairs)
    assert pair.rewinds_failed == before + 1
    assert pair.members[1].port == old.port and "streaming" in pairs.self_check("postgres-ha")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("INSERT INTO rewind_fallback VALUES (2)")  # synchronous: the standby acks
    assert _rows(url, "rewind_fallback") == [1, 2]


def test_synchronous_pair_never_acknowledges_what_the_standby_lacks(
        pairs: EmbeddedProvider) -> None:
    """The standby is frozen: a COMMIT on the primary does not return (not acknowledged),
    so the failover that follows loses nothing that a client was told is stored."""
    url = pairs.url("postgres-ha")
    pair = _pair(pairs, "postgres-ha")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE sync_control (x int)")
        conn.execute("INSERT INTO sync_control VALUES (1)")
    pair._await_streaming(pairs)  # the standby is the synchronous one again
    outcome: list[BaseException | None] = []

    primary = _member_url(pair, 0)  # directly: the URL's routing is the first test's

    def insert() -> None:
        try:
            with psycopg.connect(primary, autocommit=True) as conn:
                conn.execute("INSERT INTO sync_control VALUES (2)")
            outcome.append(None)
        except psycopg.Error as exc:
            outcome.append(exc)

    frozen = _frozen(pair)
    writer = threading.Thread(target=insert)
    try:
        writer.start()
        writer.join(1.0)
        assert writer.is_alive(), (
            "the COMMIT returned while the standby could not have it" if outcome == [None]
            else f"the INSERT failed at once: {outcome}")
        pair.kill_primary(pairs)
    finally:
        _thawed(frozen)
    writer.join(10.0)
    assert not writer.is_alive() and isinstance(outcome[0], psycopg.OperationalError)
    pair.promote(pairs)
    pair.rejoin(pairs)
    # Row 2 was never acknowledged: whether it exists is not a loss; row 1 must.
    assert 1 in _rows(url, "sync_control")


def test_asynchronous_pair_loses_an_acknowledged_commit_in_a_failover(
        pairs: EmbeddedProvider) -> None:
    """The positive control: with the standby frozen, the async primary acknowledges
    row 2; the primary dies before the standby has it, the standby is promoted, and
    the acknowledged row is gone. A memory store's archive on this pair loses appends."""
    url = pairs.url("postgres-ha-async")
    pair = _pair(pairs, "postgres-ha-async")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE async_control (x int)")
        conn.execute("INSERT INTO async_control VALUES (1)")
    pair._await_streaming(pairs)
    _detach(pair)  # the standby stops receiving, as if cut off from the primary
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("INSERT INTO async_control VALUES (2)")  # acknowledged
    assert _rows(_member_url(pair, 0), "async_control") == [1, 2]
    pair.kill_primary(pairs)
    pair.promote(pairs)
    assert _rows(_member_url(pair, 1), "async_control") == [1]  # acknowledged, lost
    pair.rejoin(pairs)  # pg_rewind drops the old primary's row 2 as well
    assert _rows(url, "async_control") == [1]


async def test_a_store_keeps_every_acknowledged_append_through_failovers(
        pairs: EmbeddedProvider) -> None:
    """TieredMemoryStore with its archive on the synchronous pair: appends acknowledged
    before, between and after two failovers are all in the archive, read through the
    same multi-host URL (the pool reconnects to whichever member is the primary)."""
    import asyncio

    from nomnesia.adapters.memory_tiers import InMemoryIndex, InMemoryLog
    from nomnesia.adapters.postgres import PostgresArchive, create_pool, drop_schema
    from nomnesia.adapters.tiered import TieredMemoryStore
    from nomnesia.suite.contract.errors import BackendUnavailable

    url = pairs.url("postgres-ha")
    pool = await create_pool(url, max_size=4, timeout=2.0)
    schema = f"nm_ha_{os.getpid()}"
    archive = PostgresArchive(pool, schema)
    await archive.create()
    acknowledged: list[str] = []
    try:
        async with TieredMemoryStore(log=InMemoryLog(), index=InMemoryIndex(), archive=archive,
                                     timeout=2.0) as store:
            for failover in range(3):
                for i in range(5):
                    content = f"f{failover}-m{i}"
                    deadline = time.monotonic() + 30  # bounded: a failover takes seconds
                    while True:
                        try:
                            await store.append_message("ann", "user", content)
                            acknowledged.append(content)
                            break
                        except BackendUnavailable:  # not acknowledged: retried
                            assert time.monotonic() < deadline, "never answered again"
                if failover < 2:
                    await asyncio.to_thread(pairs.failover, "postgres-ha")
            live = [e.content for e in await archive.live("ann")]
        missing = [c for c in acknowledged if c not in live]
        assert not missing, f"G1: acknowledged appends missing after failovers: {missing}"
    finally:
        await drop_schema(pool, schema)
        await pool.close()
