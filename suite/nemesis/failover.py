"""Failover faults: which engines of a stack can fail over, how often, and a lagging standby.

A replicated engine (``postgres-ha``: a primary and a streaming standby) is
failed over by its provider, as a failover manager would: kill the primary,
promote the standby, rejoin the old primary as the new standby
(``EmbeddedProvider.failover``). The nemesis calls that in a thread while the
workers keep loading the store, then judges what the store acknowledged.

Three things live here rather than in the runner because they are decisions
with reasons of their own:

- :func:`failover_engines`: which engines of the stack the provider can fail
  over, asked without failing anything over.
- :func:`fault_schedule`: a failover takes seconds (a rejoin ~3 s, up to ~8 s),
  so drawing it uniformly among five kinds would give ~40 failovers in 200
  faults. A run with ``failover`` among other kinds gives it a fixed share
  (default 1/3, so 67 of 200), at seeded positions.
- :func:`detach_standby`: an asynchronous standby on loopback keeps up, so a
  failover of ``postgres-ha-async`` rarely loses anything and a positive
  control built on it would pass by luck. Cutting the standby off first (as a
  network partition between the two would) makes the loss certain.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from tenacity import Retrying, retry_if_result, stop_after_delay, wait_exponential

__all__ = ["FAILOVER_SHARE", "FREEZE_SHARE", "detach_standby", "failover_engines", "fault_schedule",
           "map_engines", "parse_assignments"]

FAILOVER_SHARE = 1 / 3
"""The share of a run's faults that are failovers when ``failover`` is drawn among other
kinds: at least 50 of 200 (issue 23), without drowning the others."""
FREEZE_SHARE = 0.5
"""The share of failovers that freeze the primary instead of killing it (a VM pause, a
stall past the failure detection: the old primary comes back beside the new one)."""
DETACH_BOUND = 10.0
"""Seconds to wait for a detached standby's WAL receiver to stop."""


def failover_engines(provider: Any, engines: Sequence[str]) -> tuple[str, ...]:
    """The engines of ``engines`` that ``provider`` can fail over, in order.

    Asked without failing anything over: a provider that can fail engines over says
    which (``can_fail_over(engine) -> bool``, :class:`EmbeddedProvider`'s replicated
    topologies); one with no ``failover`` method (external, docker) has none.
    """
    ask = getattr(provider, "can_fail_over", None)
    if not callable(getattr(provider, "failover", None)) or not callable(ask):
        return ()
    return tuple(engine for engine in engines if ask(engine))


def fault_schedule(kinds: Sequence[str], faults: int, rng: random.Random,
                   share: float = FAILOVER_SHARE) -> list[str] | None:
    """The kinds of a run's faults in order, or None to draw each uniformly as before.

    Only a run with ``failover`` among other kinds gets a schedule: ``ceil(faults *
    share)`` failovers, the rest drawn uniformly from the other kinds, all shuffled by
    the seeded ``rng``. Runs without failover keep drawing one kind per fault, so their
    seeds replay the faults they always did.
    """
    if "failover" not in kinds or len(set(kinds)) == 1:
        return None
    if not 0 <= share <= 1:
        raise ValueError(f"the failover share must be within [0, 1], not {share}")
    others = [k for k in kinds if k != "failover"]
    count = min(faults, math.ceil(faults * share))
    schedule = ["failover"] * count + [rng.choice(others) for _ in range(faults - count)]
    rng.shuffle(schedule)
    return schedule


def parse_assignments(text: str) -> dict[str, str]:
    """``"postgres-ha=postgres-ha-async,redis=valkey"`` -> a dict: the CLI's engine map
    (what replaces what) and workload mix (``forget=0``)."""
    mapping: dict[str, str] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, value = (s.strip() for s in item.partition("="))
        if not sep or not name or not value:
            raise ValueError(f"expected NAME=VALUE items separated by commas, not {item!r}")
        mapping[name] = value
    return mapping


def map_engines(engines: Sequence[str], engine_map: Mapping[str, str]) -> tuple[str, ...]:
    """The stack's engine kinds after ``engine_map`` substituted some (as the stack opener's
    ``engine_map`` keyword does), so the runner asks the provider for what the store uses."""
    return tuple(engine_map.get(engine, engine) for engine in engines)


def detach_standby(url: str, bound: float = DETACH_BOUND) -> str:
    """Cut a PostgreSQL pair's standby off from its primary; return the standby's address.

    ``url`` is the pair's multi-host URL. The standby is the member in recovery; its
    ``primary_conninfo`` is cleared and reloaded, which stops its WAL receiver, and this
    waits (bounded) until it has stopped: from then on the primary acknowledges what the
    standby will never have, and a failover promotes a standby without it (G1 lost).
    A standby cut off this way can still be promoted; a rejoin as standby writes its
    own ``primary_conninfo`` (``postgres_ha.PostgresPair.rejoin``).
    """
    import psycopg

    parts = urlsplit(url)
    if parts.scheme not in ("postgresql", "postgres"):
        raise ValueError(f"only a PostgreSQL pair's standby can be detached, not {url!r}")
    auth, _, hosts = parts.netloc.rpartition("@")
    for host in hosts.split(","):
        member = urlunsplit(parts._replace(netloc=f"{auth}@{host}" if auth else host,
                                           query="connect_timeout=2"))
        with psycopg.connect(member, autocommit=True) as conn:
            row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
            if row and row[0]:
                _stop_receiving(conn, host, bound)
                return host
    raise RuntimeError(f"no member of {url!r} is in recovery: there is no standby to detach")


def _stop_receiving(conn: Any, host: str, bound: float) -> None:
    """Clear the standby's ``primary_conninfo`` and wait (bounded) for its WAL receiver to
    stop: until it has, the standby may still receive what the primary acknowledges."""
    conn.execute("ALTER SYSTEM SET primary_conninfo = ''")
    conn.execute("SELECT pg_reload_conf()")

    def receivers() -> int:
        row = conn.execute("SELECT count(*) FROM pg_stat_wal_receiver").fetchone()
        return int(row[0]) if row else 0

    retrying = Retrying(stop=stop_after_delay(bound),
                        wait=wait_exponential(multiplier=0.01, max=0.2),
                        retry=retry_if_result(lambda n: n != 0),
                        retry_error_callback=lambda state: -1)
    if retrying(receivers) != 0:
        raise RuntimeError(f"the standby {host}'s WAL receiver did not stop within {bound:g} s")
