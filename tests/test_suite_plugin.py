"""The suite as users run it: options, usage errors, collection, xdist, subclassing.

These run pytest in a child process (pytester) where the way pytest is
started matters (working directory, import of the suite's modules, xdist),
and in-process elsewhere, for speed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest_plugins = ("pytester",)

REPO = Path(__file__).resolve().parent.parent
MEMORY = "nomnesia.adapters.memory:InMemoryStore"
ONE = "test_append_returns_the_entry_and_history_shows_it"
QUIET = ("-p", "no:cacheprovider", "-p", "no:randomly")


@pytest.fixture(autouse=True)
def _quiet_ini(pytester: pytest.Pytester) -> None:
    # Inner runs get a neutral ini (pytest-asyncio warns without a loop scope).
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


def test_missing_store_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--pyargs", "nomnesia.suite", *QUIET)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*choose the store to test*--store MODULE:FACTORY*--adapter*"])


def test_missing_store_under_xdist_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--pyargs", "nomnesia.suite", "-n", "2", *QUIET)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*choose the store to test*"])


def test_plugin_leaves_other_projects_alone(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_other="def test_ok():\n    assert True\n")
    result = pytester.runpytest(*QUIET)
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*nomnesia suite*")


@pytest.mark.parametrize("spec", ["nosuchmodule:make", "nomnesia.adapters.memory",
                                  "nomnesia.adapters.memory:Nope"])
def test_bad_store_spec_is_a_usage_error(pytester: pytest.Pytester, spec: str) -> None:
    result = pytester.runpytest("--pyargs", "nomnesia.suite", "--store", spec, *QUIET)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--store*"])


def test_unknown_adapter_lists_the_known_ones(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--pyargs", "nomnesia.suite", "--adapter", "nope", *QUIET)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no such built-in store*memory*"])


def test_store_and_adapter_together_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--pyargs", "nomnesia.suite", "--adapter", "memory",
                                "--store", MEMORY, *QUIET)
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_adapter_memory_runs_the_suite(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--pyargs", "nomnesia.suite", "--adapter", "memory", "-k", ONE,
                                *QUIET)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*nomnesia suite: --adapter memory; seed *"])


def test_store_module_in_the_working_directory(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(mystore="""
        from nomnesia.adapters.memory import InMemoryStore

        def make():
            return InMemoryStore(keep_last=7)
    """)
    result = pytester.runpytest_subprocess("--pyargs", "nomnesia.suite", "--store",
                                           "mystore:make", "-k", "compact", *QUIET)
    assert result.ret == 0, result.stdout.str()
    assert result.parseoutcomes()["passed"] >= 5


def test_runs_from_another_directory_with_hostile_ini(pytester: pytest.Pytester) -> None:
    # The caller's naming rules, asyncio mode and warning filters must not matter.
    pytester.makeini("""
        [pytest]
        python_files = check_*.py
        python_classes = Check
        python_functions = check_
        asyncio_mode = strict
        asyncio_default_fixture_loop_scope = function
        filterwarnings = error
        xfail_strict = true
        addopts = --strict-markers
    """)
    pytester.makeconftest("import pytest\n\n@pytest.fixture(autouse=True)\ndef noise():\n"
                          "    yield\n")
    result = pytester.runpytest_subprocess("--pyargs", "nomnesia.suite", "--store", MEMORY,
                                           "-k", "contract", *QUIET)
    assert result.ret == 0, result.stdout.str()
    assert result.parseoutcomes()["passed"] >= 15


def _probe(tmp: Path) -> Path:
    (tmp / "bareprobe.py").write_text(textwrap.dedent("""
        import sys

        def pytest_sessionfinish(session):
            bare = sorted(m for m in sys.modules if m == "suite" or m.startswith("suite."))
            print("BARE-SUITE-MODULES:", bare)
    """))
    return tmp


@pytest.mark.parametrize("where", ["repo", "elsewhere"])
def test_suite_modules_import_under_their_real_name(tmp_path: Path, where: str) -> None:
    """From an editable install, nothing may import ``suite/`` as a bare ``suite`` package."""
    cwd = REPO if where == "repo" else tmp_path
    env = {**os.environ, "PYTHONPATH": str(_probe(tmp_path))}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--pyargs", "nomnesia.suite", "--store", MEMORY,
         "-p", "bareprobe", "-s", "-q", *QUIET, "-k", "contract"],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "BARE-SUITE-MODULES: []" in proc.stdout, proc.stdout


def test_xdist(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--pyargs", "nomnesia.suite", "--store", MEMORY,
                                           "-n", "2", "-k", "contract or invalid", *QUIET)
    assert result.ret == 0, result.stdout.str()
    assert result.parseoutcomes()["passed"] >= 25


SUBCLASS = """\
import pytest
from nomnesia.adapters.memory import InMemoryStore
from nomnesia.suite.standard import MemoryStoreSuite


class TestMine(MemoryStoreSuite):
    @pytest.fixture
    def store(self):
        return lambda: InMemoryStore(keep_last=2)
"""


def _subclass(extra: str = "") -> str:
    return SUBCLASS + textwrap.indent(textwrap.dedent(extra), "    ")


def test_subclass_with_store_fixture_needs_no_options(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mine=_subclass())
    result = pytester.runpytest("-k", f"{ONE} or no_overrides or compact_replaces", *QUIET)
    result.assert_outcomes(passed=3)


def test_overriding_a_suite_test_without_xfail_fails_the_guard(
        pytester: pytest.Pytester) -> None:
    extra = """
        def test_search_finds_exact_content(self, store):
            pass
    """
    pytester.makepyfile(test_mine=_subclass(extra))
    result = pytester.runpytest("-k", "no_overrides", *QUIET)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*overridden without @pytest.mark.xfail*"
                                 "test_search_finds_exact_content*"])


def test_overriding_with_xfail_is_allowed(pytester: pytest.Pytester) -> None:
    extra = """
        @pytest.mark.xfail(reason="known gap")
        def test_search_finds_exact_content(self, store):
            raise AssertionError("known gap")
    """
    pytester.makepyfile(test_mine=_subclass(extra))
    result = pytester.runpytest("-k", "no_overrides or search_finds", *QUIET)
    result.assert_outcomes(passed=1, xfailed=1)


def test_an_xfail_override_keeps_the_guarantees_it_gives_up(pytester: pytest.Pytester) -> None:
    """The report says which guarantees a store's xfail override leaves unchecked."""
    import json

    extra = """
        @pytest.mark.xfail(reason="known gap")
        def test_search_finds_exact_content(self, store):
            raise AssertionError("known gap")
    """
    pytester.makepyfile(test_mine=_subclass(extra))
    report = pytester.path / "report.json"
    result = pytester.runpytest("-k", "search_finds", f"--nomnesia-json={report}", *QUIET)
    result.assert_outcomes(xfailed=1)
    tests = json.loads(report.read_text(encoding="utf-8"))["tests"]
    (test,) = [t for t in tests if "search_finds_exact_content" in t["nodeid"]]
    assert "G4" in test["guarantees"], test


def test_a_hanging_store_fails_with_g12(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(hanging="""
        import asyncio
        from nomnesia.adapters.memory import InMemoryStore

        class Hanging(InMemoryStore):
            async def append_message(self, *args, **kwargs):
                await asyncio.Event().wait()
    """)
    result = pytester.runpytest_subprocess("--pyargs", "nomnesia.suite", "--store",
                                           "hanging:Hanging", "--nomnesia-timeout", "1",
                                           "-k", ONE, *QUIET)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*G12 errors: * did not finish within 1s (--nomnesia-timeout): "
                                 "in flight: append_message('*_ann', 'user', 'hello there')*"])


def test_a_timeout_names_a_hanging_open_or_close() -> None:
    """Opening and closing a store are calls too: a hang there is named, not "no operation"."""
    import asyncio
    import contextlib

    from nomnesia.suite.core.loop import run_async
    from nomnesia.suite.core.recorder import recorded
    from nomnesia.suite.core.violations import GuaranteeViolation

    @contextlib.asynccontextmanager
    async def hangs_on(where: str):  # type: ignore[no-untyped-def]
        from nomnesia.adapters.memory import InMemoryStore

        if where == "open":
            await asyncio.Event().wait()
        async with InMemoryStore() as store:
            yield store
        if where == "close":
            await asyncio.Event().wait()

    for where, call in (("open", "opening the store"), ("close", "closing the store")):
        async def body(where: str = where) -> None:
            async with recorded(lambda: hangs_on(where)) as s:
                await s.get_history("ann")

        with pytest.raises(GuaranteeViolation) as info:
            run_async(body(), timeout=0.5, what="test_x")
        assert f"did not finish within 0.5s: in flight: {call} (" in str(info.value)


def test_failpoint_tests_skip_with_a_reason(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--pyargs", "nomnesia.suite", "--store", MEMORY, "-rs",
                                "-k", "failpoints and append and raise", *QUIET)
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*declares no failpoints*"])


def test_seed_is_printed_and_replayed(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--pyargs", "nomnesia.suite", "--store", MEMORY,
                                "--nomnesia-seed", "1234", "-k", "random_user_ids", *QUIET)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*seed 1234 (replay with --nomnesia-seed 1234)*"])


def test_every_suite_test_has_troubleshooting() -> None:
    from nomnesia.suite.standard import MemoryStoreSuite

    tests = [name for name in dir(MemoryStoreSuite) if name.startswith("test_")]
    assert len(tests) >= 30
    missing = [name for name in tests
               if "Troubleshooting" not in (getattr(MemoryStoreSuite, name).__doc__ or "")]
    assert not missing
