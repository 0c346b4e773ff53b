"""pytest11 entry point of the conformance suite: options, the store fixture, safe collection.

Loaded by every pytest run in an environment where nomnesia is installed, so it
stays light (in the manner of Hypothesis's plugin): it adds the ``nomnesia``
option group and a fixture, and otherwise does nothing unless the suite's own
tests are collected. The suite itself lives in ``nomnesia.suite.test_*``::

    python -m pytest --pyargs nomnesia.suite --store mypkg.mod:factory
    python -m pytest --pyargs nomnesia.suite --adapter memory

Two concerns live beside it and are re-exported here (pytest reads this module's
hooks): ``plugin_options`` (the ``nomnesia`` option group) and ``plugin_collection``
(how the suite's own files are collected, whatever the caller's settings).
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import os
import random
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from nomnesia.adapters import ADAPTERS, UnknownAdapter, adapter_names, lookup, open_store
from nomnesia.adapters.engines import engine_cpu

from .core.factories import resolve_factory
from .core.fresh import RUN
from .core.loop import run_async
from .core.notes import NOT_EXERCISED, take
from .core.profiles import ProfileError, Resolved, static_full
from .core.settings import settings
from .core.violations import GuaranteeViolation
from .glue import SESSION_PROFILE, probe
from .interfaces import (
    INTERFACES,
    Interface,
    InterfaceMismatch,
    MissingLibrary,
    by_option,
    check,
    store_factory,
)
from .plugin_collection import SUITE_DIR, collects_suite, in_suite
from .plugin_collection import pytest_collect_directory as pytest_collect_directory
from .plugin_collection import pytest_collect_file as pytest_collect_file
from .plugin_collection import pytest_pycollect_makeitem as pytest_pycollect_makeitem
from .plugin_collection import pytest_pycollect_makemodule as pytest_pycollect_makemodule
from .plugin_options import BACKENDS
from .plugin_options import pytest_addoption as pytest_addoption
from .plugin_testing import nomnesia_fault as nomnesia_fault
from .plugin_testing import nomnesia_faultable as nomnesia_faultable
from .plugin_testing import stop_recording
from .report.annotate import annotate, declared, report_causes
from .report.causes import group_causes
from .report.json_report import ADAPTER_INFO, ENGINE_CPU, INTERFACE_INFO, PROFILE_INFO, configure
from .report.outcome import is_not_applicable
from .report.text import cause_lines, not_applicable_lines

USAGE = (
    "nomnesia: choose the store to test: "
    "--store MODULE:FACTORY (a zero-argument callable returning an async context manager "
    "that yields a fresh, empty store; e.g. --store nomnesia.adapters.memory:InMemoryStore) "
    "or --adapter NAME (a built-in store: {names}); "
    "or a library's own object: {interfaces}; "
    "or subclass nomnesia.suite.standard.MemoryStoreSuite and override its `store` fixture"
)


def _usage() -> str:
    try:
        names = ", ".join(adapter_names())
    except Exception:  # pragma: no cover - adapters broken or absent
        names = "see nomnesia.adapters"
    interfaces = ", ".join(f"{i.option} {i.example}" for i in INTERFACES)
    return USAGE.format(names=names, interfaces=interfaces)


def _targets(config: pytest.Config) -> list[tuple[str, str]]:
    """The store options given: (option, value) for --store, --adapter and each interface's."""
    given = [("--store", config.getoption("nomnesia_store", None)),
             ("--adapter", config.getoption("nomnesia_adapter", None)),
             *((i.option, config.getoption(i.dest, None)) for i in INTERFACES)]
    return [(option, str(value)) for option, value in given if value]


def _target(config: pytest.Config) -> tuple[str, str] | None:
    """The one store option of the run (``pytest_configure`` refused more than one)."""
    targets = _targets(config)
    return targets[0] if targets else None


def _mapping_options(config: pytest.Config, interface: Interface) -> dict[str, Any]:
    """What the options of one interface tell its mapping: ``--langchain-sync`` (the
    history's sync methods), ``--langgraph-concurrent-runs`` (no run queue per thread)."""
    if interface.module == "langchain" and config.getoption("nomnesia_langchain_sync", False):
        return {"sync": True}
    if interface.module == "langgraph_checkpointer" and config.getoption(
            "nomnesia_langgraph_concurrent_runs", False):
        return {"enqueue": False}
    return {}


def _interface_factory(config: pytest.Config, option: str, value: str) -> Callable[..., Any]:
    """The suite's store factory over a library's own object (``nomnesia.suite.interfaces``)."""
    interface = by_option(option)
    try:
        interface.check_installed()
        target = resolve_factory(value, config.invocation_params.dir, option)
        return store_factory(interface, target, **_mapping_options(config, interface))
    except MissingLibrary as exc:
        raise pytest.UsageError(str(exc)) from None


def _backends(config: pytest.Config) -> str:
    chosen = config.getoption("nomnesia_backends") or os.environ.get("NOMNESIA_BACKENDS", "auto")
    if chosen not in BACKENDS:
        raise pytest.UsageError(f"NOMNESIA_BACKENDS must be one of {', '.join(BACKENDS)}, "
                                f"not {chosen!r}")
    return str(chosen)


def pytest_configure(config: pytest.Config) -> None:
    targets = _targets(config)
    if len(targets) > 1:
        raise pytest.UsageError(f"nomnesia: give one store option, not "
                                f"{' and '.join(option for option, _ in targets)}")
    store = config.getoption("nomnesia_store", None)
    adapter = config.getoption("nomnesia_adapter", None)
    if store:
        resolve_factory(store, config.invocation_params.dir)
    for option, value in targets:
        if option not in ("--store", "--adapter"):
            _interface_factory(config, option, value)  # a usage error now, not in every test
            config.stash[INTERFACE_INFO] = (option, value)
    if adapter:
        try:
            spec = lookup(adapter)
        except UnknownAdapter as exc:
            raise pytest.UsageError(f"--adapter: {exc}") from None
        _backends(config)
        config.stash[ADAPTER_INFO] = (list(spec.engines), spec.target)
    elif not targets and not hasattr(config, "workerinput") and collects_suite(config):
        # Say so before the header and "collected 59 items": nothing can run without a store.
        raise pytest.UsageError(_usage())
    seed = config.getoption("nomnesia_seed", None)
    workerinput = getattr(config, "workerinput", None)
    if seed is None and workerinput is not None:
        seed = workerinput.get("nomnesia_seed")
    if seed is None:
        seed = random.SystemRandom().randrange(2**32)
    config.stash[_SEED] = int(seed)
    config.addinivalue_line(
        "markers", "guarantee(*guarantees, none=None): the SPEC.md guarantees a nomnesia suite "
                   "test checks (nomnesia.suite.contract.G1 ... G12, INPUTS), read by the JSON "
                   "report; none='why' for a test of the suite itself")
    config.addinivalue_line(
        "markers", "needs(*features): what a nomnesia suite test needs of the store's profile "
                   "(nomnesia.suite.core.profiles.FEATURES); without it the test is not applicable")
    configure(config)

    _install_engines(config)
    config.stash[_ENGINE_CPU_BEFORE] = engine_cpu()
    config.stash[_SETTINGS] = dict(vars(settings))  # restored when this run ends
    settings.timeout = float(config.getoption("nomnesia_timeout", 120.0))
    settings.op_timeout = float(config.getoption("nomnesia_op_timeout", 30.0))
    settings.fault_timeout = float(config.getoption("nomnesia_fault_timeout", 300.0))
    settings.seed = int(seed)
    settings.anomalies = config.getoption("nomnesia_anomalies", 3)
    settings.profile = config.getoption("nomnesia_profile", None)
    settings.eventually = float(config.getoption("nomnesia_eventually", 2.0))
    settings.loop_block = float(config.getoption("nomnesia_loop_block", 3.0))
    settings.event_loop = _event_loop(config)
    settings.history_dir = config.getoption("nomnesia_history", None)


def _event_loop(config: pytest.Config) -> str:
    """The loop ``--nomnesia-loop`` asks for; ``auto``: the built-in stack's own choice
    (``AdapterSpec.event_loop``: uvloop, where installed, but for the Milvus stacks).

    The project's own stacks are measured on both loops (docs/bench.md); a user's store,
    or a library's object, keeps CPython's loop, which its code was written for, unless
    the user asks.
    """
    chosen = str(config.getoption("nomnesia_loop", "auto"))
    installed = importlib.util.find_spec("uvloop") is not None
    if chosen == "uvloop" and not installed:
        raise pytest.UsageError("--nomnesia-loop uvloop: uvloop is not installed here "
                                "(pip install uvloop; it has no Windows build)")
    if chosen != "auto":
        return chosen
    adapter = config.getoption("nomnesia_adapter", None)
    spec = ADAPTERS.get(str(adapter)) if adapter is not None else None
    if spec is None or spec.event_loop != "uvloop" or not installed:
        return "asyncio"
    return "uvloop"


@pytest.hookimpl(tryfirst=True)  # before xdist starts its workers, and before the header
def pytest_sessionstart(session: pytest.Session) -> None:
    """Find the run's profile once, on the controller, and hand it to every worker.

    ``--adapter`` stacks are the project's own and implement the full profile;
    a ``--store`` factory is opened once to read its methods. A declared profile
    the store does not implement stops the run here, naming what is missing.
    """
    config = session.config
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        data = workerinput.get("nomnesia_profile")
        if data:
            config.stash[SESSION_PROFILE] = Resolved.from_json(data)
        return
    _check_interface(config)  # the wrong object for its option: a usage error, before any test
    factory = _factory(config)
    if factory is None:
        if config.getoption("nomnesia_adapter", None) and not settings.profile:
            config.stash[SESSION_PROFILE] = static_full()
    else:
        try:
            config.stash[SESSION_PROFILE] = probe(factory)
        except ProfileError as exc:
            raise pytest.UsageError(f"nomnesia: {exc}") from None
        except Exception as exc:  # the tests will say it again, as G12, with the operations
            config.stash[_PROFILE_UNKNOWN] = f"{type(exc).__name__}: {exc}"
    resolved = config.stash.get(SESSION_PROFILE, None)
    if resolved is not None:
        config.stash[PROFILE_INFO] = resolved.to_json()


_PROFILE_UNKNOWN = pytest.StashKey[str]()


def _check_interface(config: pytest.Config) -> None:
    """An interface option's factory must make an object with every method the option maps;
    else the run stops with one sentence (``interfaces.mismatch``), never a G12 per test."""
    target = _target(config)
    if target is None or target[0] in ("--store", "--adapter"):
        return
    option, value = target
    interface = by_option(option)
    made = resolve_factory(value, config.invocation_params.dir, option)
    try:
        run_async(check(interface, made, value, **_mapping_options(config, interface)),
                       what="checking the factory's object against its option")
    except InterfaceMismatch as exc:
        raise pytest.UsageError(f"nomnesia: {exc}") from None
    except Exception as exc:
        # The factory could not make its object before any test asked the store anything: a
        # configuration error (``AsyncMemory()`` with no OPENAI_API_KEY), never a finding;
        # as G12 it would fail every test and blame the library.
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise pytest.UsageError(
            f"nomnesia: {option} {value}: the factory raised {type(exc).__name__}"
            f"{': ' + first[:300] if first else ''}, before any test; no store was judged"
        ) from None


def _factory(config: pytest.Config) -> Callable[..., Any] | None:
    """The store factory the command line names, or None for none (and for a built-in
    ``--adapter`` without a declared profile: those implement the full profile)."""
    target = _target(config)
    if target is None:
        return None
    option, value = target
    if option == "--store":
        return resolve_factory(value, config.invocation_params.dir)
    if option == "--adapter":
        return _adapter_factory(config, value) if config.getoption("nomnesia_profile") else None
    return _interface_factory(config, option, value)


_SEED = pytest.StashKey[int]()
_SETTINGS = pytest.StashKey[dict[str, Any]]()
_ENGINES = pytest.StashKey[Any]()  # the session's nomnesia.suite.engines.EngineSession
_ENGINE_CPU_BEFORE = pytest.StashKey["dict[str, float]"]()
"""``engine_cpu()`` when the run began: a run inside another (pytester) reports its own."""
_UNINSTALL = pytest.StashKey[Callable[[], None]]()


def _install_engines(config: pytest.Config) -> None:
    """One engine provider per session (so per xdist worker), made on first use.

    The built-in stacks and ``nomnesia.suite.engines.engine_url`` (what a
    ``--store`` factory calls) share it; it closes in ``pytest_unconfigure``.
    ``nomnesia.adapters.engines`` is imported here and in ``nomnesia_store``, not at
    the top: it costs ~75 ms (tenacity, every engine's part), a quarter of this
    module's import, which every pytest run in the environment pays.
    """
    from nomnesia.adapters.engines import get_provider, session  # function-level: ~75 ms

    def make() -> Any:
        return _settle(get_provider(_backends(config)))

    engines = session.EngineSession(make)
    config.stash[_ENGINES] = engines
    config.stash[_UNINSTALL] = session.install(engines)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """The test's name for the history files of ``--nomnesia-history``."""
    settings.history_test = item.nodeid


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """Faults always heal: whatever a test armed is undone before the next test starts, even
    when the test could not heal it itself (a store that blocked its event loop, a timeout).
    The engine session does it from here, outside that loop; what it had to undo is a
    defect of the suite, so it is said, as a warning on the test."""
    stop_recording()
    engines = item.config.stash.get(_ENGINES, None)
    if engines is None or not engines.started:
        return
    undone = engines.heal()
    if undone:
        item.warn(pytest.PytestWarning(f"nomnesia healed after this test: {'; '.join(undone)}"))


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stop the session's engines once its tests are over, before any report is written.

    The JSON report's ``cpu_seconds`` then include the engines' own CPU (a stopped
    engine has been waited for): a redis leaf read 20 CPU-s with its engines still
    running at that point, 27 with them counted. ``pytest_unconfigure`` still closes a
    session that never got here; closing twice is safe.
    """
    engines = session.config.stash.get(_ENGINES, None)
    if engines is not None:
        engines.close()
        before = session.config.stash.get(_ENGINE_CPU_BEFORE, {})
        spent = {name: total - before.get(name, 0.0) for name, total in engine_cpu().items()}
        session.config.stash[ENGINE_CPU] = {name: s for name, s in spent.items() if s > 0}


def pytest_unconfigure(config: pytest.Config) -> None:
    uninstall = config.stash.get(_UNINSTALL, None)
    if uninstall is not None:
        uninstall()
        config.stash[_ENGINES].close()
    before = config.stash.get(_SETTINGS, None)
    if before is not None:  # a run inside another (pytester) leaves the outer one's settings

        vars(settings).update(before)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist: every worker uses the controller's seed (one number replays the run) and the
    profile the controller found (so no worker opens a store just to read it)."""
    node.workerinput["nomnesia_seed"] = node.config.stash[_SEED]

    resolved = node.config.stash.get(SESSION_PROFILE, None)
    if resolved is not None:
        node.workerinput["nomnesia_profile"] = resolved.to_json()


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    chosen = _target(config)
    if not (chosen or collects_suite(config)):
        return None
    target = " ".join(chosen) if chosen else "(subclass)"
    seed = config.stash[_SEED]
    return [f"nomnesia suite: {target}; seed {seed} (replay with --nomnesia-seed {seed})",
            f"nomnesia {_profile_line(config)}"]


def _profile_line(config: pytest.Config) -> str:

    resolved = config.stash.get(SESSION_PROFILE, None)
    if resolved is not None:
        return resolved.describe()
    unknown = config.stash.get(_PROFILE_UNKNOWN, None)
    if unknown is not None:
        return f"profile: not read, opening a store failed ({unknown[:200]})"
    return "profile: read from each test class's store"


# --------------------------------------------------------------------------- fixtures


def _settle(value: Any) -> Any:
    """A provider's methods may be sync or async; run the latter on a loop of their own."""
    if not inspect.isawaitable(value):
        return value

    async def wait() -> Any:
        return await value

    return asyncio.run(wait())


@pytest.fixture(scope="session")
def nomnesia_seed(request: pytest.FixtureRequest) -> int:
    """The run's seed: ``--nomnesia-seed N`` or a random one printed in the header."""
    return request.config.stash[_SEED]


@pytest.fixture(scope="session")
def nomnesia_engines(request: pytest.FixtureRequest) -> Any:
    """This session's (this xdist worker's) engines: ``nomnesia_engines.url("postgres")``.

    The same as ``nomnesia.suite.engines.engine_url`` in a ``--store`` factory:
    one provider (``--backends``), engines started on first use, stopped at the end.
    """
    return request.config.stash[_ENGINES]


@pytest.fixture(scope="session")
def nomnesia_scan_forget(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """Look inside every engine this session handed out for a forgotten user (SPEC G8)::

        result = nomnesia_scan_forget(user_ids=["ann"], contents=["ann's secret"])
        assert result.clean, "\n".join(map(str, result.residues))

    Every key and row of the networked engines your store got from ``engine_url`` (or
    ``nomnesia_engines``), for the ids, the contents and the digests the project's adapters
    derive (docs/forget.md). ``clean`` is false when nothing could be scanned."""
    from .forget_scan import scan_handed  # function-level: adapters.engines costs ~75 ms

    session = request.config.stash[_ENGINES]

    def scan_forget(**needles: Any) -> Any:
        return scan_handed(session, **needles)

    return scan_forget


@pytest.fixture(scope="session")
def nomnesia_store(request: pytest.FixtureRequest) -> Iterator[Callable[[], Any]]:
    """The factory chosen on the command line; the suite's default ``store`` fixture."""
    config = request.config
    chosen = _target(config)
    if chosen is None:
        pytest.fail(_usage(), pytrace=False)
    option, adapter = chosen
    if option == "--store":
        yield resolve_factory(adapter, config.invocation_params.dir)
        return
    if option != "--adapter":
        yield _interface_factory(config, option, adapter)
        return
    yield _adapter_factory(config, adapter)


def _adapter_factory(config: pytest.Config, adapter: str) -> Callable[..., Any]:
    """``open_store(adapter)`` on the session's engines (one provider per session or xdist
    worker, shared with engine_url(); every store gets its own namespace in it)."""
    # Routed, so a partial-failure test can put its fault proxy in front of each engine.
    provider = config.stash[_ENGINES].routed() if ADAPTERS[adapter].engines else None
    return partial(open_store, adapter, provider=provider)


# --------------------------------------------------------------------------- reporting


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Iterator[None]:
    """A broken guarantee reads best as its message (guarantee, detail, operations) alone.

    The suite's helpers would otherwise fill the screen with their own source;
    ``--tb=long`` (or any explicit style) still shows the full traceback.
    """
    report: Any = yield
    excinfo = call.excinfo
    if call.when == "call":
        unexercised = take()  # what the test could not exercise: said in the summary
        if unexercised:
            report.user_properties.append((NOT_EXERCISED, unexercised))
    if in_suite(Path(str(item.path))):
        annotate(report, excinfo)  # its causes, for the summary by cause
    if (excinfo is None or not report.failed
            or not isinstance(excinfo.value, GuaranteeViolation)
            or item.config.getoption("tbstyle", "auto") != "auto"):
        return report  # type: ignore[no-any-return]
    where = ""
    for entry in reversed(excinfo.traceback):
        path = Path(str(entry.path))
        if path.parent == SUITE_DIR and path.name.startswith("test_"):
            where = f"\n\n{path.name}:{entry.lineno + 1}: in {entry.name}"
            break
    report.longrepr = f"{excinfo.value}{where}"
    return report  # type: ignore[no-any-return]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The profile and what was not applicable to it; then failures grouped by cause
    (twelve red tests from one trimmed user id read as one line)."""
    config = terminalreporter.config
    skipped = terminalreporter.stats.get("skipped", ())
    inapplicable = [r for r in skipped if is_not_applicable(r)]
    if inapplicable or config.stash.get(SESSION_PROFILE, None) is not None:
        terminalreporter.write_sep("=", "nomnesia: profile")
        terminalreporter.write_line(_profile_line(config))
        resolved = config.stash.get(SESSION_PROFILE, None)
        for why in resolved.turned_on() if resolved is not None else ():
            terminalreporter.write_line(f"  {why}")
        for line in not_applicable_lines(inapplicable):
            terminalreporter.write_line(line)

    unexercised = [(r.nodeid, text) for reports in terminalreporter.stats.values()
                   for r in reports for key, texts in getattr(r, "user_properties", ())
                   if key == NOT_EXERCISED for text in texts]
    if unexercised:
        terminalreporter.write_sep("=", "nomnesia: not exercised (judged nothing, never "
                                        "counted as a pass)")
        for nodeid, text in unexercised:
            terminalreporter.write_line(f"  {nodeid.rsplit('::', 1)[-1]}: {text}")

    failures = [(r.nodeid, report_causes(r))
                for kind in ("failed", "error") for r in terminalreporter.stats.get(kind, ())
                if getattr(r, "when", "call") in ("setup", "call", "teardown")]
    failures = [(nodeid, causes) for nodeid, causes in failures if causes]
    if not failures:
        return
    groups = group_causes(failures)
    terminalreporter.write_sep("=", "nomnesia: failures by cause")
    terminalreporter.write_line(
        f"(ids: a test's own sentences name the suite's ids, 'ann'; its operations and the "
        f"concurrency anomalies show them as the store received them, with a token of that "
        f"store's own in front, '{RUN}1_ann', so that no test reads another's data)")
    for line in cause_lines(groups, len({nodeid for nodeid, _ in failures})):
        terminalreporter.write_line(line)


# --------------------------------------------------------------------------- collection


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Refuse a suite test's malformed ``guarantee`` mark; without a store to test, stop
    early with the usage, not with one error per test.

    Other projects' items are left alone (their ``guarantee`` mark may mean something
    else); ``--nomnesia-json`` checks every item it reports on.
    """
    for item in items:
        if in_suite(Path(str(item.path))):
            declared(item)  # raises UsageError for anything but Guarantee members
    if _target(config) is not None:
        return
    if hasattr(config, "workerinput"):
        return  # an xdist worker cannot stop the run; the fixture fails with the usage instead
    if any("nomnesia_store" in getattr(item, "fixturenames", ()) for item in items):
        raise pytest.UsageError(_usage())


