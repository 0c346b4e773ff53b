"""Profiles (SPEC.md): stores that implement less are judged on what they have.

A store is judged by the largest profile it implements, or the one it declares;
a test that needs what the profile lacks is *not applicable*, never a pass or a
failure. The seed's own four-method store (``adapters/seed.py``) is the positive
control of the ``seed`` profile: every failure names a guarantee, none is an
interface error; the correct four-method store, and the oracle read through every
smaller profile, are the negative controls.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from nomnesia.suite.contract import Guarantee
from nomnesia.suite.core.profiles import FULL, HISTORY, MEMORY, SEED, ProfileError, resolve
from nomnesia.suite.reporting import leaf_cell

pytest_plugins = ("pytester",)

GUARANTEE_FIRST = re.compile(r"^(G(\d{1,2}) [a-z ]+|Inputs): ")


def _failures(reprec: pytest.HookRecorder) -> dict[str, str]:
    return {r.nodeid: r.longreprtext for r in reprec.getreports("pytest_runtest_logreport")
            if r.failed}


def _skips(reprec: pytest.HookRecorder) -> list[str]:
    return [str(r.longrepr[2]) for r in reprec.getreports("pytest_runtest_logreport")
            if r.skipped and isinstance(r.longrepr, tuple)]


# --------------------------------------------------------------------------- detection


class Seedish:
    async def append_message(self, user_id: str, role: str, content: str) -> None: ...
    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]: ...
    async def compact(self, user_id: str) -> None: ...
    async def consistent_state(self, user_id: str) -> bool: ...


class Historyish:
    async def append_message(self, user_id: str, role: str, content: str) -> None: ...
    async def get_history(self, user_id: str, limit: int = 10) -> list[dict[str, str]]: ...
    async def forget(self, user_id: str) -> None: ...


class Memoryish(Historyish):
    async def append_message(self, user_id: str, role: str, content: str, *,
                             message_id: str | None = None) -> None: ...
    async def search(self, user_id: str, query: str, k: int = 5) -> list[Any]: ...


def test_the_largest_implemented_profile_is_chosen() -> None:
    from nomnesia.adapters.memory import InMemoryStore

    assert resolve(InMemoryStore()).profile is FULL
    seed = resolve(Seedish())
    assert seed.profile is SEED and seed.headline() == "seed (4 of 8 methods)"
    assert resolve(Historyish()).profile is HISTORY
    memory = resolve(Memoryish())
    assert memory.profile is MEMORY and memory.has("message_id") and memory.keyed


def test_a_declared_profile_is_held_to_and_names_what_is_missing() -> None:
    class Declares(Historyish):
        nomnesia_profile = "memory"

    with pytest.raises(ProfileError, match=r"declares profile 'memory' but has no "
                                           r"search\(user_id, query, k\)"):
        resolve(Declares())
    assert resolve(Memoryish(), "history").profile is HISTORY


def test_a_store_with_no_profile_says_what_the_smallest_need() -> None:
    class Reader:
        async def get_history(self, user_id: str, limit: int = 10) -> list[Any]: ...

    with pytest.raises(ProfileError, match=r"implements no profile.*seed: append_message"):
        resolve(Reader())


# --------------------------------------------------------------------------- the seed profile


def test_the_seeds_store_is_caught_by_guarantee_never_by_interface(
        pytester: pytest.Pytester, suite_args: tuple[str, ...]) -> None:
    reprec = pytester.inline_run(*suite_args, "--store", "nomnesia.adapters.seed:SeedMemoryStore")
    failures = _failures(reprec)
    named = set()
    for nodeid, text in failures.items():
        match = GUARANTEE_FIRST.match(text)
        assert match, f"{nodeid}: not a guarantee first:\n{text[:400]}"
        named.add(match.group(1).split()[0])
        for interface_error in ("AttributeError", "unexpected keyword argument",
                                "keep_last must be", "UnreadableResult"):
            assert interface_error not in text, f"{nodeid}: an interface error:\n{text[:600]}"
    # The stale-read compaction (G7, or G1 where no compaction is to blame) and the
    # vector write after an await (a cancelled append leaves the store inconsistent).
    assert "G7" in named, failures.keys()
    assert any("test_cancel_at_every_step_then_recover[append]" in n for n in failures)
    assert any("G11 quiescent consistency" in t for t in failures.values())
    assert named <= {"G1", "G2", "G3", "G5", "G7", "G10", "G11"}, named


def test_the_correct_four_method_store_passes_with_not_applicable_tests(
        pytester: pytest.Pytester, suite_args: tuple[str, ...]) -> None:
    reprec = pytester.inline_run(*suite_args, "--store", "nomnesia.adapters.seed:CorrectSeedStore")
    assert not _failures(reprec)
    skips = _skips(reprec)
    # Failpoints are a capability a store declares, and the nemesis an option: skips. An
    # in-process store got no engine the partial-failure test could fault.
    assert skips and all(_expected(s, "seed") for s in skips), skips
    passed, _, _ = reprec.listoutcomes()
    assert len(passed) >= 20


@pytest.mark.parametrize(("profile", "at_least"), [("memory", 40), ("seed", 25),
                                                  ("history", 24)])
def test_the_oracle_read_through_a_smaller_profile_passes(pytester: pytest.Pytester,
                                                          suite_args: tuple[str, ...],
                                                          profile: str, at_least: int) -> None:
    """The keyed reading and its checker raise no false alarm on a correct store.

    And they ran: a usage error or a run where every test is not applicable
    reports no failure either. ``at_least`` is a little below today's count
    (42, 27 and 26 passed); every skip must be a test the profile does not judge.
    """
    reprec = pytester.inline_run(*suite_args, "--store", "nomnesia.adapters.memory:InMemoryStore",
                                 "--nomnesia-profile", profile)
    failures = _failures(reprec)
    assert not failures, "\n\n".join(f"{k}\n{v[:2000]}" for k, v in failures.items())
    assert reprec.ret == pytest.ExitCode.OK, reprec.ret
    passed, _, failed = reprec.listoutcomes()
    assert not failed, [r.nodeid for r in failed]
    assert len(passed) >= at_least, f"only {len(passed)} passed"
    skips = _skips(reprec)
    assert all(_expected(s, profile) for s in skips), skips


def _expected(skip: str, profile: str) -> bool:
    """A skip a correct in-process store may have: what its profile does not judge, what it
    does not declare or have (failpoints, an engine from the suite, a batch method, a pop,
    an interface's own promises), or the nemesis, which runs only when asked for."""
    return (skip.startswith(f"Skipped: not applicable to profile {profile}: needs ")
            or skip.startswith("Skipped: not applicable: the store got no engine")
            or skip.startswith("Skipped: not applicable: the store got no replicated topology")
            or "maps no library method that takes a batch" in skip
            or "maps no interface with promises of its own" in skip
            or "has no stored_batch" in skip or "maps no pop" in skip
            or "declares no failpoints" in skip or "--nemesis" in skip
            or "never asked for nomnesia.suite.engines.store_namespace()" in skip)


def test_the_fragile_store_read_as_a_seed_store_is_still_caught(
        pytester: pytest.Pytester, suite_args: tuple[str, ...]) -> None:
    reprec = pytester.inline_run(*suite_args, "--store",
                                 "nomnesia.adapters.fragile:FragileMemoryStore",
                                 "--nomnesia-profile", "seed", "-k",
                                 "concurrent_compactions or cancel_at_every_step_then_recover")
    failures = _failures(reprec)
    assert any("test_concurrent_compactions" in n for n in failures), failures.keys()
    assert all(GUARANTEE_FIRST.match(t) for t in failures.values())


def test_a_declared_profile_the_store_lacks_stops_the_run(pytester: pytest.Pytester,
                                                          suite_args: tuple[str, ...]) -> None:
    result = pytester.runpytest(*suite_args, "--store", "nomnesia.adapters.seed:CorrectSeedStore",
                                "--nomnesia-profile", "memory")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*declares profile 'memory' but has no forget(user_id)*"])


def test_the_profile_is_printed_before_the_first_test(pytester: pytest.Pytester,
                                                      suite_args: tuple[str, ...]) -> None:
    result = pytester.runpytest(*suite_args, "--store", "nomnesia.adapters.seed:CorrectSeedStore",
                                "-k", "history_limit")
    result.stdout.fnmatch_lines(["nomnesia profile seed (4 of 8 methods); judged on G1 G2 G3 "
                                 "G5 G7 G9 G10 G11 G12 Inputs*",
                                 "*collected*"])


# --------------------------------------------------------------------------- reports


def test_json_matrix_and_html_say_not_applicable(pytester: pytest.Pytester,
                                                 suite_args: tuple[str, ...],
                                                 tmp_path: Path) -> None:
    from nomnesia.suite.report_html import build_matrix, render_html

    out = tmp_path / "seed.json"
    pytester.inline_run(*suite_args, "--store", "nomnesia.adapters.seed:CorrectSeedStore",
                        "-k", "search or history_limit", f"--nomnesia-json={out}")
    report = json.loads(out.read_text())
    assert report["meta"]["profile"]["name"] == "seed"
    outcomes = {t["nodeid"].rsplit("::", 1)[-1]: t["outcome"] for t in report["tests"]}
    assert outcomes["test_search_finds_exact_content"] == "not applicable"
    assert outcomes["test_history_limit_returns_newest_in_ascending_order"] == "passed"
    verdicts = {k: v["verdict"] for k, v in report["guarantees"].items()}
    assert verdicts["G4"] == verdicts["G6"] == verdicts["G8"] == "not applicable"
    assert verdicts["G3"] == "pass"
    history = next(t for t in report["tests"] if "history_limit" in t["nodeid"])
    assert "G4" not in history["guarantees"], "a seed store is not credited with search"
    cell = leaf_cell(report)
    assert cell.ok and "n/a (seed)" in cell.text(), cell.text()
    page = render_html(build_matrix([report]))
    assert 'class="na"' in page and "profile seed" in page


# --------------------------------------------------------------------------- the interfaces


README = Path(__file__).resolve().parents[1] / "README.md"
COMMAND = re.compile(r"^python -m pytest --pyargs nomnesia\.suite (--[a-z0-9-]+) (\S+)", re.M)
PROFILE_OF = {"--langgraph-store": "history", "--mem0-memory": "memory"}
PROFILE_OF["--adk-memory"] = "memory"  # issue 46
PROFILE_OF.update({"--crewai-storage": "memory", "--crewai-memory": "memory"})  # issue 46
ENGINE_ONLY = {"--crewai-storage", "--crewai-memory"}
"""Options whose library keeps memory on disk only (CrewAI: LanceDB or Qdrant Edge files):
the README has their real-engine command and no in-memory one."""
PROFILE_OF["--agno-entities"] = "memory"  # issue 46 item 3
"""The profile each README command reaches where it is not ``history`` (LangGraph's
``InMemoryStore`` has no index: history)."""
ENGINE_NEEDS = {
    "langchain_postgres": ("langchain_postgres", "psycopg"),
    "langgraph_postgres": ("langgraph.store.postgres", "psycopg"),
    "agents_postgres": ("sqlalchemy", "asyncpg"),
    "llama_postgres": ("asyncpg",),
    "adk_postgres": ("asyncpg",),
    "mem0_pgvector": ("psycopg_pool",),
    "agent_framework_redis": ("agent_framework_redis", "redis"),
    "checkpointer_postgres": ("langgraph.checkpoint.postgres", "psycopg"),
    "checkpointer_postgres_pool": ("langgraph.checkpoint.postgres", "psycopg_pool"),
    "checkpointer_redis": ("langgraph.checkpoint.redis", "redis"),
    "adk_memory_sqlite": ("aiosqlite",),  # ADK has no memory service on a server here
    "agno_postgres": ("sqlalchemy", "psycopg"),
    "agno_sqlite": ("sqlalchemy",),
    "strands_valkey": ("strands_valkey_session_manager", "valkey"),
    # a file, but a package outside the interfaces extra (as adk_memory_sqlite above)
    "strands_sql_sqlite": ("strands_sql_session_manager",),
    "strands_sql_postgres": ("strands_sql_session_manager", "psycopg"),
    # CrewAI's memory storages are embedded (LanceDB, Qdrant Edge: files, no server):
    # LanceDB in a temporary directory is its real engine, and it has none in memory.
    "crewai_lancedb": ("crewai", "lancedb"),
    "crewai_memory": ("crewai", "lancedb"),
    "agno_entities_sqlite": ("sqlalchemy",),
    "agno_entities_postgres": ("sqlalchemy", "psycopg"),
}
"""What each real-engine command's ``pip install`` line adds to the interfaces extra."""


def _readme_commands() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The interface commands of the README, (option, factory): in memory, then on an engine
    (the factories of ``nomnesia.suite.examples`` that take an engine)."""
    from nomnesia.suite.interfaces import INTERFACES

    options = {i.option for i in INTERFACES}
    found = [(o, f) for o, f in COMMAND.findall(README.read_text(encoding="utf-8"))
             if o in options]
    engine = [(o, f) for o, f in found if f.rpartition(":")[2] in ENGINE_NEEDS]
    return [c for c in found if c not in engine], engine


README_INTERFACES = [(o, f, PROFILE_OF.get(o, "history")) for o, f in _readme_commands()[0]]
README_ENGINES = [(o, f, PROFILE_OF.get(o, "history")) for o, f in _readme_commands()[1]]


NO_ENGINE = {
    "--pydantic-ai-conversations": "pydantic-ai-harness 0.75.0, the newest on PyPI, has no "
                                   "ConversationStore backend (README says so)",
}
"""Options no released backend of which runs on an engine the suite starts: an in-memory
command only, and the README says why."""


def test_the_readme_has_every_interface_in_memory_and_on_an_engine() -> None:
    from nomnesia.suite import examples
    from nomnesia.suite.interfaces import INTERFACES

    in_memory, engine = _readme_commands()
    readme = README.read_text(encoding="utf-8")
    for interface in INTERFACES:
        if interface.option not in ENGINE_ONLY:
            assert [f for o, f in in_memory if o == interface.option], interface.option
        if interface.option in NO_ENGINE:
            assert "pydantic-ai-harness" in readme, interface.option
            continue
        assert [f for o, f in engine if o == interface.option], interface.option
    for _, factory in engine:
        assert factory.startswith("nomnesia.suite.examples:"), factory
        assert factory.rpartition(":")[2] in examples.__all__, factory


def test_every_readme_command_sits_in_a_code_block() -> None:
    """A merge once left three commands in a paragraph and an unclosed fence that swallowed
    the prose after it: the regex above still found them, the page a user reads did not."""
    inside, stray = False, []
    lines = README.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, 1):
        if line.startswith("```"):
            inside = not inside
        elif COMMAND.match(line) and not inside:
            stray.append(f"README.md:{number}: {line[:60]}")
    assert not inside, "README.md ends inside a code block (a fence without its pair)"
    assert not stray, "commands outside a code block:\n" + "\n".join(stray)


def _readme_case(option: str, factory: str, profile: str, *, engine: bool) -> Any:
    """One README command as a test case: ``slow`` in memory (seconds each, in a fresh
    process), ``readme`` on an engine or for mem0 (minutes each, up to 8 for ADK on
    PostgreSQL: ``nox -s readme``, beside the matrix, not in every CI run)."""
    heavy = engine or option == "--mem0-memory"
    return pytest.param(option, factory, profile,
                        marks=pytest.mark.readme if heavy else pytest.mark.slow,
                        id=f"{option.lstrip('-')}-{factory.rpartition(':')[2]}")


@pytest.mark.parametrize(("option", "factory", "profile"),
                         [_readme_case(*case, engine=False) for case in README_INTERFACES]
                         + [_readme_case(*case, engine=True) for case in README_ENGINES])
def test_each_interface_runs_the_whole_suite_with_no_adapter_code(
        pytester: pytest.Pytester,
        suite_args: tuple[str, ...], option: str, factory: str, profile: str) -> None:
    """The README's command for each interface, in memory and on an engine: the profile
    first, then every test, judged."""
    import importlib.util

    from nomnesia.suite.interfaces import MissingLibrary, by_option

    try:
        by_option(option).check_installed()
    except MissingLibrary as exc:
        pytest.skip(str(exc))
    for module in ENGINE_NEEDS.get(factory.rpartition(":")[2], ()):
        if importlib.util.find_spec(module.split(".")[0]) is None:
            pytest.skip(f"{factory} needs {module} (the README's pip install line)")
    # In a process of its own: these libraries import thousands of modules, which would
    # stay in this worker and slow every later in-process pytester run.
    result = pytester.runpytest_subprocess(*suite_args, option, factory)
    result.stdout.fnmatch_lines([f"nomnesia profile {profile} (declared)*", "*collected*"])
    text = "\n".join(result.stdout.lines)
    outcome = result.stdout.lines[-1]
    assert " passed" in outcome and "error" not in outcome, text[-3000:]
    # Whatever it finds names a guarantee (LangGraph refuses '.' in namespace labels;
    # SQLite cannot bind a limit of 2**64): never an unlabelled interface error, never a
    # mapped method missing. (An AttributeError the library raises on a bad input, as mem0
    # does for content=1, is a labelled Inputs finding, not an interface error.)
    import importlib

    interface = by_option(option)
    mapped = importlib.import_module(f"nomnesia.suite.interfaces.{interface.module}").MAPPED
    assert "unlabelled" not in text and "InterfaceMismatch" not in text, text[-3000:]
    for name in mapped.requires:
        assert f"has no attribute '{name}'" not in text, text[-3000:]


def test_a_missing_library_names_the_package_to_install(pytester: pytest.Pytester,
                                                        suite_args: tuple[str, ...],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import nomnesia.suite.interfaces as interfaces

    real = interfaces.importlib.util.find_spec
    monkeypatch.setattr(interfaces.importlib.util, "find_spec",
                        lambda name, *a: None if name == "agents" else real(name, *a))
    result = pytester.runpytest(*suite_args, "--openai-session", "os:getcwd")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--openai-session maps an OpenAI Agents SDK Session*"
                                 "pip install openai-agents*"])


def test_every_guarantee_a_profile_judges_is_a_guarantee() -> None:
    for profile in (FULL, MEMORY, SEED, HISTORY):
        assert all(isinstance(g, Guarantee) for g in profile.judged)
        assert profile.required <= set(("append", "message_id", "read", "search", "compact",
                                        "forget", "consistent", "recover", "entries"))


def test_concurrent_first_calls_of_one_user_share_one_library_object() -> None:
    """A factory that awaits (opens a connection) before its object is ready is made once
    per user, however many calls arrive first: each extra object would lose its writes."""
    from nomnesia.suite.interfaces.openai_agents import AgentsSession

    made: list[str] = []

    class Session:
        def __init__(self) -> None:
            self.items: list[Any] = []

        async def add_items(self, items: list[Any]) -> None:
            self.items.extend(items)

        async def get_items(self, limit: int | None = None) -> list[Any]:
            return self.items[-limit:] if limit else list(self.items)

        async def clear_session(self) -> None:  # the Session protocol's: the option maps it
            self.items.clear()

    async def factory(session_id: str) -> Session:
        made.append(session_id)
        await asyncio.sleep(0.01)  # a connection being opened
        return Session()

    async def run() -> list[dict[str, str]]:
        async with AgentsSession(factory) as store:
            await asyncio.gather(*(store.append_message("ann", "user", f"m{i}")
                                   for i in range(5)))
            return await store.get_history("ann", 10)

    history = asyncio.run(run())
    assert made == ["ann"], made
    assert [e["content"] for e in history] == [f"m{i}" for i in range(5)]
