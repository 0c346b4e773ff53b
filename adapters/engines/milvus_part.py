"""Milvus as parts: the milvus wheel's Milvus 2.3 standalone server, and Milvus Lite.

The server is launched like every other engine, private to its provider (its own
ports, etcd and directory); Milvus Lite runs in the caller's process, on a ``.db``
path in the provider's directory.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path

from nomnesia.suite.contract.errors import BackendUnavailable

from ._proc import free_port
from ._unpack import milvus_binaries
from .in_process_part import InProcessPart
from .part import (
    READY_TIMEOUT,
    SELF_CHECK_DIM,
    SELF_CHECK_NEAREST,
    EngineHost,
    EnginePart,
    PortTaken,
    Ready,
    Running,
    _listens,
    _missing,
    _package_dir,
    _self_check_key,
    self_check_vectors,
)

__all__ = ["MILVUS_SERVER_ID_DIR", "MILVUS_SERVER_PORTS", "MILVUS_SERVER_SETTINGS",
           "MilvusLitePart", "MilvusServerPart", "block_milvus_server_id", "milvus_wheel_dir"]

MILVUS_SERVER_PORTS: tuple[str, ...] = (
    "etcd_port", "root_coord_port", "proxy_port", "proxy_internal_port", "query_coord_port",
    "query_node_port", "index_coord_port", "index_node_port", "data_coord_port",
    "data_node_port")
"""The ``*_port`` settings of the milvus wheel's ``config.yaml.template``: every one is
given a free port, so that each provider (each xdist worker) runs a server of its own.
The embedded etcd's own listeners and the health port are set apart (see
:func:`_start_milvus_server`)."""


MILVUS_SERVER_ID_DIR = Path("/tmp/milvus")
"""Where Milvus 2.3 writes ``server_id_<pid>``, whatever its configuration or $TMPDIR
(``GetServerInfoFilePath`` in its sessionutil). See ``block_milvus_server_id``."""

MILVUS_SERVER_SETTINGS: dict[str, str] = {
    "PROXY_TIMETICKINTERVAL": "10",
    "COMMON_SESSION_TTL": "5",
    "QUERYCOORD_CHECKINTERVAL": "100",
    "QUERYCOORD_DISTPULLINTERVAL": "100",
    "QUERYCOORD_CHECKCHANNELINTERVAL": "100",
    "QUERYCOORD_CHECKSEGMENTINTERVAL": "100",
    "LOG_LEVEL": "warn",
}
"""Milvus settings as environment variables (Milvus reads ``A_B`` as ``a.b``, over its
YAML file). A Strong-consistency read waits for the next time tick: at the default
200 ms a search, ``ids`` or filtered delete took 200 ms, and the suite's interruption
sweeps (thousands of calls) ran past their timeout; at 20 ms they take about 30 ms,
for 11 % of a core while idle, at 10 ms about 20 ms for 23 %. 10 ms it is: a
``milvus-server`` suite run is mostly waiting for ticks, and ran in 159 s wall and 116 s
CPU at 10 ms against 194 s and 131 s at 20 ms (the server's own CPU, most of it
ticking, goes with the run's length). A test run creates and
loads a collection per store; with the query
coordinator's defaults (1 s checks, 0.5 s pulls) a load took about 2.7 s, with these
about 2.0 s (its collection observer's 1 s tick is most of the rest). A killed
server's sessions stay in etcd until their lease (``common.session.ttl``, 30 s)
expires, and until then its collections do not load on the restarted one: a
restart (the nemesis' kill) answered searches 25 s after it was healthy, with 5 s
leases 1.3 s after. ``warn`` keeps the log, which is in the provider's directory, to
a few hundred lines per run."""


def milvus_wheel_dir() -> Path:
    """The ``milvus`` wheel (Milvus 2.3 standalone, Linux x86-64): its binaries are
    lzma-packed in ``data/bin``, its configuration template is ``data/config.yaml.template``."""
    package = _package_dir("milvus", "milvus-server", "the milvus wheel (Milvus 2.3 standalone)")
    if not (package / "data" / "bin" / "milvus.lzma").exists():
        raise _missing("milvus-server", f"the Milvus server binary, not found in {package}")
    return package


def _milvus_healthy(port: int) -> bool:
    """Milvus' health endpoint says OK (every component registered and serving)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1.0) as resp:
            return b"OK" in resp.read()
    except (OSError, ValueError):
        return False


def block_milvus_server_id(host: EngineHost, pid: int) -> None:
    """Keep the Milvus server with ``pid`` from leaving ``/tmp/milvus/server_id_<pid>``.

    Milvus 2.3 writes that file (a hard-coded path) and removes it only on a
    graceful stop; a killed server leaves it forever. A directory of that name,
    made as soon as the pid is known (long before Milvus gets there), makes
    Milvus' open() fail, which it logs as a warning and ignores; the directory
    is claimed, so it goes with the provider, SIGKILL included.
    """
    path = MILVUS_SERVER_ID_DIR / f"server_id_{pid}"
    with contextlib.suppress(OSError):
        path.mkdir(parents=True, exist_ok=True)
    host.claim_path(path)


class MilvusServerPart(EnginePart):
    """The milvus wheel's Milvus 2.3 standalone server in ``<host dir>/<home>``."""

    engine = "milvus-server"
    wheel = "milvus"

    def __init__(self, wheel_dir: Callable[[], Path] = milvus_wheel_dir, *,
                 home: str = "milvus-server") -> None:
        self.wheel_dir = wheel_dir
        self.home = home

    def start(self, host: EngineHost) -> str:
        return _start_milvus_server(host, self.wheel_dir(), self.home)

    def self_check(self, host: EngineHost, url: str) -> str:
        return _check_milvus_server(host, url)


def _start_milvus_server(host: EngineHost, wheel: Path, home_name: str = "milvus-server") -> str:
    """The milvus wheel's Milvus 2.3 standalone server, private to this provider.

    The wheel's ``MilvusServer`` would start it with a plain ``Popen``, outside the
    watchdog and with the wheel's fixed ports; so only its template rendering
    (``MilvusServerConfig``) and its unpacking of the binaries are used, and the
    server is launched like every other engine (process group, PDEATHSIG, watchdog).
    Everything it writes is under ``<provider dir>/milvus-server``:

    * every port setting of the template (``MILVUS_SERVER_PORTS``) is a free port;
    * the embedded etcd listens where ``ETCD_CONFIG_PATH`` says (it ignores the
      template's port and would take 2379/2380, shared by every instance);
    * ``-alias`` names the pid file: Milvus joins it to its fixed ``/run/milvus``
      (``/tmp/milvus`` when that is not writable) with ``filepath.Join``, which
      cleans ``..`` lexically, so ``x/../../..<dir>/milvus`` puts the pid file (and
      its lock, which would stop a second instance) in our directory.
    """
    home = host.workdir() / home_name
    home.mkdir(exist_ok=True)
    try:
        import milvus as milvus_wheel
    except ImportError:  # pragma: no cover - milvus_wheel_dir found it
        raise _missing("milvus-server", "the milvus wheel") from None
    binary = milvus_binaries(milvus_wheel, home) / "milvus"  # once per wheel version
    if not binary.exists():
        raise _missing("milvus-server", f"the Milvus binary, not unpacked from {wheel}")
    log = home / "milvus.log"

    def start(port: int) -> tuple[Running, Ready]:
        shutil.rmtree(home / "data", ignore_errors=True)  # a retry starts afresh
        ports = {key: free_port() for key in MILVUS_SERVER_PORTS}
        ports["proxy_port"] = port
        config = milvus_wheel.MilvusServerConfig(data_dir=str(home), **ports)
        try:
            config.resolve()  # checks the ports bind, writes configs/milvus.yaml
        except RuntimeError as exc:
            if "bind failed" in str(exc):  # one of its ports was taken since free_port()
                raise PortTaken(str(exc)) from exc
            raise BackendUnavailable("milvus-server", f"bad configuration: {exc}") from exc
        etcd_client, etcd_peer, health = free_port(), free_port(), free_port()
        etcd_config = home / "configs" / "etcd.yaml"
        etcd_config.write_text(
            "name: default\n"
            f"listen-client-urls: http://127.0.0.1:{etcd_client}\n"
            f"advertise-client-urls: http://127.0.0.1:{etcd_client}\n"
            f"listen-peer-urls: http://127.0.0.1:{etcd_peer}\n"
            f"initial-advertise-peer-urls: http://127.0.0.1:{etcd_peer}\n"
            f"initial-cluster: default=http://127.0.0.1:{etcd_peer}\n")
        scratch = home / "tmp"
        scratch.mkdir(exist_ok=True)
        env = {**os.environ, **MILVUS_SERVER_SETTINGS, "DEPLOY_MODE": "STANDALONE",
               "METRICS_PORT": str(health), "TMPDIR": str(scratch),
               "ETCD_CONFIG_PATH": str(etcd_config),
               "LD_LIBRARY_PATH": os.pathsep.join(
                   p for p in (str(binary.parent), os.environ.get("LD_LIBRARY_PATH")) if p)}
        if host.emulated_cpu:
            # Go preempts goroutines with SIGURG at any instruction; qemu-user does
            # not survive that for long (the emulated server died of SIGSEGV after
            # a few minutes of the suite). Cooperative preemption only: the Go
            # scheduler's choice, not the CPU's, so the check means the same.
            env["GODEBUG"] = ",".join(
                p for p in (env.get("GODEBUG"), "asyncpreemptoff=1") if p)
        argv = [*host.emulator("milvus-server"), str(binary), "run", "standalone",
                "-alias", f"x/../../..{home}/milvus"]
        running = host.launch("milvus-server", argv, log, env=env, cwd=home)
        block_milvus_server_id(host, running.proc.pid)

        def ready() -> bool:
            return _milvus_healthy(health) and _listens(port)

        return running, ready

    return f"http://127.0.0.1:{host.on_free_port('milvus-server', start)}"


def _check_milvus_server(host: EngineHost, url: str) -> str:
    """A collection with an index, the self-check rows, one Strong search; the version.

    Raises BackendUnavailable naming ``milvus-server`` if a call fails or the search
    answers wrong.
    """
    try:
        from pymilvus import DataType, MilvusClient
    except ImportError:
        raise _missing("milvus-server", "pymilvus", "pip install 'nomnesia[milvus]'") from None
    timeout = READY_TIMEOUT * host.slowdown
    name = _self_check_key().replace("-", "_")  # Milvus allows no "-"
    rows = self_check_vectors()
    step = "connect"
    try:
        client = MilvusClient(uri=url, timeout=timeout)
        try:
            step = "get_server_version"
            version = client.get_server_version()
            step = "create_collection"
            schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
            schema.add_field("pk", DataType.INT64, is_primary=True)
            schema.add_field("vec", DataType.FLOAT_VECTOR, dim=SELF_CHECK_DIM)
            params = client.prepare_index_params()
            params.add_index("vec", index_type="AUTOINDEX", metric_type="COSINE")
            client.create_collection(name, schema=schema, index_params=params,
                                     consistency_level="Strong")
            try:
                step = "insert"
                client.insert(name, [{"pk": i, "vec": row} for i, row in enumerate(rows, 1)])
                step = "search"
                hits = client.search(name, [rows[SELF_CHECK_NEAREST - 1]], limit=1,
                                     consistency_level="Strong")
            finally:
                client.drop_collection(name)
        finally:
            client.close()
    except Exception as exc:
        raise BackendUnavailable("milvus-server", f"self-check {step} failed: {exc}") from exc
    found = [hit.get("id") for hit in hits[0]] if hits else []
    if found != [SELF_CHECK_NEAREST]:
        raise BackendUnavailable("milvus-server", f"a search over {len(rows)} vectors "
                                 f"returned ids {found}, expected [{SELF_CHECK_NEAREST}]")
    return f"Milvus {version} (create, insert, search checked)"


class MilvusLitePart(InProcessPart):
    """Milvus Lite: a ``.db`` path in the host's directory, served from the caller's process."""

    engine = "milvus"
    wheel = "milvus-lite"
    module = "milvus_lite"
    needs = "Milvus Lite"
    hint = "pip install 'nomnesia[milvus,embedded]'"

    def __init__(self, path: str = "milvus.db") -> None:
        self.path = path

    def location(self, host: EngineHost) -> str:
        return str(host.workdir() / self.path)

    def release(self, directory: Path) -> None:
        _release_milvus_lite(directory / self.path)


def _release_milvus_lite(path: Path) -> None:
    """Stop Milvus Lite's in-process server for our .db path, if a client started one.

    Milvus Lite keeps a server per path until interpreter exit; left running, it
    would write into (and recreate) the directory we are about to remove.
    """
    manager = sys.modules.get("milvus_lite.server_manager")
    instance = getattr(manager, "server_manager_instance", None)
    release = getattr(instance, "release_server", None)
    if callable(release):
        with contextlib.suppress(Exception):
            release(str(path))
