"""``--mem0-memory`` and ``--agent-framework-history`` (issue 33): each judges the real
library with no interface error, and passes the project's own correct store behind the
library's interface (``tests/interface_shapes.py``).

Mutant checks: with ``Mem0Memory.get_history`` returning mem0's order instead of sorting by
``created_at``, ``test_a_correct_store_of_each_shape_passes[mem0]`` fails (G3: the shape
returns its memories newest first); with ``AgentFrameworkHistory.forget`` not dropping the
session's state, ``test_the_real_library_is_judged_with_no_interface_error[agent-framework]``
fails (G8 on ``InMemoryHistoryProvider``, which has no ``clear``).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import re
from typing import Any

import pytest

from nomnesia.suite.interfaces import by_option

pytest_plugins = ("pytester",)

# mem0 reads MEM0_TELEMETRY when imported: off before the first import (the machine may be
# offline). Then imported once, before pytester snapshots sys.modules (numpy cannot be
# imported twice).
os.environ.setdefault("MEM0_TELEMETRY", "False")
for _library in ("numpy", "mem0", "agent_framework"):
    with contextlib.suppress(ImportError):
        importlib.import_module(_library)

SUITE = ("--pyargs", "nomnesia.suite", "-p", "no:cacheprovider", "-p", "no:randomly")
GUARANTEE_FIRST = re.compile(r"^(G(\d{1,2}) [a-z ]+|Inputs): ")
SHAPES = {"--mem0-memory": "interface_shapes:Mem0Shaped",
          "--agent-framework-history": "interface_shapes:HistoryProviderShaped"}


@pytest.fixture(autouse=True)
def _quiet_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.syspathinsert(str(__import__("pathlib").Path(__file__).parent))


def _needs(option: str) -> None:
    pytest.importorskip(by_option(option).needs)


def _failures(reprec: pytest.HookRecorder) -> dict[str, str]:
    return {r.nodeid: r.longreprtext for r in reprec.getreports("pytest_runtest_logreport")
            if r.failed}


@pytest.mark.slow  # the memory profile's concurrency workloads: ~20 s for mem0's shape
@pytest.mark.parametrize("option", list(SHAPES), ids=["mem0", "agent-framework"])
def test_a_correct_store_of_each_shape_passes(pytester: pytest.Pytester, option: str) -> None:
    _needs(option)
    reprec = pytester.inline_run(*SUITE, option, SHAPES[option])
    failures = _failures(reprec)
    assert not failures, "\n\n".join(f"{k}\n{v[:1500]}" for k, v in failures.items())
    assert reprec.ret == pytest.ExitCode.OK
    passed, _, _ = reprec.listoutcomes()
    assert len(passed) >= 25, f"only {len(passed)} passed"


def test_the_mem0_shape_reaches_the_memory_profile(pytester: pytest.Pytester) -> None:
    """Fast: the profile line, and the tests that need search and the whole history."""
    _needs("--mem0-memory")
    result = pytester.runpytest(*SUITE, "--mem0-memory", SHAPES["--mem0-memory"], "-k",
                                "test_search_finds_exact_content or test_history_limit or "
                                "test_forget_removes_everything")
    result.stdout.fnmatch_lines(["*nomnesia profile memory (declared)*"])
    result.assert_outcomes(passed=3)


REAL = {
    # mem0 on local Qdrant, offline; its own findings are known (docs/ecosystem.md): it drops
    # role ``system`` with infer=False (G1, G3) and trims user ids (G9).
    "--mem0-memory": ("nomnesia.suite.examples:mem0_memory",
                      "test_history_limit_returns_newest or test_forget_removes_everything "
                      "or test_search_finds_exact_content or test_users_are_isolated"),
    "--agent-framework-history": ("nomnesia.suite.examples:agent_framework_memory",
                                  "test_contract or test_forget"),
}


@pytest.mark.parametrize("option", [
    pytest.param("--mem0-memory", id="mem0", marks=pytest.mark.slow),  # ~12 s with mem0's import
    pytest.param("--agent-framework-history", id="agent-framework")])
def test_the_real_library_is_judged_with_no_interface_error(pytester: pytest.Pytester,
                                                            option: str) -> None:
    _needs(option)
    factory, subset = REAL[option]
    reprec = pytester.inline_run(*SUITE, option, factory, "-k", subset)
    passed, _, failed = reprec.listoutcomes()
    assert passed, "nothing passed: the mapping cannot be reaching the library"
    for nodeid, text in _failures(reprec).items():
        assert GUARANTEE_FIRST.match(text), f"{nodeid}: not a finding:\n{text[:600]}"
        for error in ("InterfaceMismatch", "AttributeError", "unlabelled"):
            assert error not in text, f"{nodeid}: {error}:\n{text[:600]}"
    if option == "--agent-framework-history":
        assert not failed, [r.nodeid for r in failed]  # InMemoryHistoryProvider is correct


def test_mem0_sync_memory_runs_in_worker_threads() -> None:
    """mem0's sync ``Memory`` is called off the event loop, and reads back the same."""
    _needs("--mem0-memory")
    from nomnesia.suite.examples import mem0_sync_memory
    from nomnesia.suite.interfaces import mem0

    loop_threads: set[int] = set()

    async def body() -> list[dict[str, str]]:
        import threading

        async with mem0.open_store(mem0_sync_memory) as store:
            memory = await store._object()
            assert not mem0.is_async(memory)
            real = memory.add

            def add(*args: Any, **kwargs: Any) -> Any:
                loop_threads.add(threading.get_ident())
                return real(*args, **kwargs)

            memory.add = add
            await store.append_message("ann", "user", "hello")
            await store.append_message("ann", "assistant", "hi")
            assert threading.get_ident() not in loop_threads
            return await store.get_history("ann", 10)

    assert asyncio.run(body()) == [{"role": "user", "content": "hello"},
                                   {"role": "assistant", "content": "hi"}]


def test_a_history_provider_that_cannot_forget_fits_no_option() -> None:
    """``FileHistoryProvider`` has no ``clear`` and keeps its messages in files, so the
    history profile (forget or clear) is out of its reach: the option says so."""
    pytest.importorskip("agent_framework")
    from agent_framework import FileHistoryProvider, InMemoryHistoryProvider

    from nomnesia.suite.interfaces.agent_framework import AgentFrameworkHistory

    file_provider = FileHistoryProvider(__import__("tempfile").mkdtemp())
    assert not AgentFrameworkHistory.fits(file_provider)
    assert AgentFrameworkHistory(lambda: None).missing(file_provider) == ["clear"]
    assert AgentFrameworkHistory.fits(InMemoryHistoryProvider())
