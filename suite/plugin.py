"""pytest11 entry point of the conformance suite: options, the store fixture, safe collection.

Loaded by every pytest run in an environment where nomnesia is installed, so it
stays light (in the manner of Hypothesis's plugin): it adds the ``nomnesia``
option group and a fixture, and otherwise does nothing unless the suite's own
tests are collected. The suite itself lives in ``nomnesia.suite.test_*``::

    python -m pytest --pyargs nomnesia.suite --store mypkg.mod:factory
    python -m pytest --pyargs nomnesia.suite --adapter memory
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import os
import random
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from .core.factories import resolve_factory
from .core.loop import run_async
from .core.settings import settings
from .core.violations import GuaranteeViolation
from .glue import SESSION_PROFILE, probe

_SUITE_DIR = Path(__file__).resolve().parent
_PACKAGE = "nomnesia.suite"
_BACKENDS = ("auto", "embedded", "docker", "external")

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
        from nomnesia.adapters import adapter_names

        names = ", ".join(adapter_names())
    except Exception:  # pragma: no cover - adapters broken or absent
        names = "see nomnesia.adapters"
    from .interfaces import INTERFACES

    interfaces = ", ".join(f"{i.option} {i.example}" for i in INTERFACES)
    return USAGE.format(names=names, interfaces=interfaces)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("nomnesia", "nomnesia memory-store conformance suite")
    group.addoption("--store", dest="nomnesia_store", metavar="MODULE:FACTORY", default=None,
                    help="run the suite on a store: a zero-argument callable returning an async "
                         "context manager that yields a fresh, empty store")
    group.addoption("--adapter", dest="nomnesia_adapter", metavar="NAME", default=None,
                    help="run the suite on a built-in store (nomnesia.adapters registry)")
    from .interfaces import INTERFACES

    for interface in INTERFACES:
        group.addoption(interface.option, dest=interface.dest, metavar="MODULE:FACTORY",
                        default=None, help=f"run the suite on {interface.takes}, mapped to "
                                           f"the profile it can reach (e.g. {interface.example})")
    group.addoption("--langchain-sync", dest="nomnesia_langchain_sync", action="store_true",
                    help="with --langchain-history: call the history's sync methods, not the "
                         "async ones")
    group.addoption("--backends", dest="nomnesia_backends", choices=_BACKENDS, default=None,
                    help="where built-in stacks get their engines: auto (default, or "
                         "$NOMNESIA_BACKENDS), embedded, docker or external")
    group.addoption("--nomnesia-timeout", dest="nomnesia_timeout", type=float, default=120.0,
                    metavar="SECONDS", help="a suite test that takes longer fails with G12 "
                                            "(default 120)")
    group.addoption("--nomnesia-op-timeout", dest="nomnesia_op_timeout", type=float,
                    default=30.0, metavar="SECONDS",
                    help="where a test checks that a store still answers (no lock left held "
                         "after an interruption), the bound per operation (default 30)")
    group.addoption("--nomnesia-profile", dest="nomnesia_profile", default=None,
                    choices=("full", "memory", "seed", "history"),
                    help="hold the store to this profile of SPEC.md (default: the largest it "
                         "implements, detected from its methods)")
    group.addoption("--nomnesia-eventually", dest="nomnesia_eventually", type=float,
                    default=2.0, metavar="SECONDS",
                    help="how long the suite polls consistent_state of a store that declares "
                         "no staleness bound (the seed profile) before G11 fails (default 2)")
    group.addoption("--nomnesia-loop-block", dest="nomnesia_loop_block", type=float,
                    default=2.0, metavar="SECONDS",
                    help="a store call that stops the test's event loop this long is named "
                         "(G12: a synchronous call inside an async method; default 2, 0: off)")
    group.addoption("--nomnesia-seed", dest="nomnesia_seed", type=int, default=None,
                    metavar="N", help="seed of the randomised tests (default: random, printed)")
    group.addoption("--nomnesia-anomalies", dest="nomnesia_anomalies", type=_anomalies,
                    default=3, metavar="N|all",
                    help="anomalies a concurrency failure prints (default 3; the JSON report "
                         "keeps them all)")
    group.addoption("--nomnesia-model-examples", dest="nomnesia_model_examples", type=int,
                    default=None, metavar="N",
                    help="call sequences the model-based test tries per store (default 50)")
    group.addoption("--nomnesia-model-steps", dest="nomnesia_model_steps", type=int,
                    default=None, metavar="N",
                    help="calls per sequence of the model-based test, at most (default 20)")
    group.addoption("--nemesis", dest="nomnesia_nemesis", metavar="KINDS", default=None,
                    help="also run the nemesis on the store (--adapter, --store or an "
                         "interface option): crash,pause,kill,net,failover or all, every kind "
                         "the store's engines can take (docs/nemesis.md, docs/faults.md)")
    group.addoption("--nemesis-faults", dest="nomnesia_nemesis_faults", type=int, default=50,
                    metavar="N", help="faults the --nemesis run injects (default 50)")
    from . import reporting

    reporting.add_options(group)  # --nomnesia-json PATH: the per-test, per-guarantee report


def _anomalies(text: str) -> int | None:
    """``--nomnesia-anomalies``: a count >= 1, or ``all`` (None)."""
    if text.strip().lower() == "all":
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1 or 'all', got {text!r}")
    return value


def _targets(config: pytest.Config) -> list[tuple[str, str]]:
    """The store options given: (option, value) for --store, --adapter and each interface's."""
    from .interfaces import INTERFACES

    given = [("--store", config.getoption("nomnesia_store", None)),
             ("--adapter", config.getoption("nomnesia_adapter", None)),
             *((i.option, config.getoption(i.dest, None)) for i in INTERFACES)]
    return [(option, str(value)) for option, value in given if value]


def _target(config: pytest.Config) -> tuple[str, str] | None:
    """The one store option of the run (``pytest_configure`` refused more than one)."""
    targets = _targets(config)
    return targets[0] if targets else None


def _interface_factory(config: pytest.Config, option: str, value: str) -> Callable[..., Any]:
    """The suite's store factory over a library's own object (``nomnesia.suite.interfaces``)."""
    from .interfaces import MissingLibrary, by_option, store_factory

    interface = by_option(option)
    sync = interface.module == "langchain" and config.getoption("nomnesia_langchain_sync", False)
    try:
        interface.check_installed()
        target = resolve_factory(value, config.invocation_params.dir, option)
        return store_factory(interface, target, **({"sync": True} if sync else {}))
    except MissingLibrary as exc:
        raise pytest.UsageError(str(exc)) from None


def _backends(config: pytest.Config) -> str:
    chosen = config.getoption("nomnesia_backends") or os.environ.get("NOMNESIA_BACKENDS", "auto")
    if chosen not in _BACKENDS:
        raise pytest.UsageError(f"NOMNESIA_BACKENDS must be one of {', '.join(_BACKENDS)}, "
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
            from . import reporting

            config.stash[reporting.INTERFACE_INFO] = (option, value)
    if adapter:
        from nomnesia.adapters import UnknownAdapter, lookup

        try:
            spec = lookup(adapter)
        except UnknownAdapter as exc:
            raise pytest.UsageError(f"--adapter: {exc}") from None
        _backends(config)
        from . import reporting

        config.stash[reporting.ADAPTER_INFO] = (list(spec.engines), spec.target)
    elif not targets and not hasattr(config, "workerinput") and _collects_suite(config):
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
    from . import reporting

    reporting.configure(config)

    _install_engines(config)
    config.stash[_SETTINGS] = dict(vars(settings))  # restored when this run ends
    settings.timeout = float(config.getoption("nomnesia_timeout", 120.0))
    settings.op_timeout = float(config.getoption("nomnesia_op_timeout", 30.0))
    settings.seed = int(seed)
    settings.anomalies = config.getoption("nomnesia_anomalies", 3)
    settings.profile = config.getoption("nomnesia_profile", None)
    settings.eventually = float(config.getoption("nomnesia_eventually", 2.0))
    settings.loop_block = float(config.getoption("nomnesia_loop_block", 2.0))


@pytest.hookimpl(tryfirst=True)  # before xdist starts its workers, and before the header
def pytest_sessionstart(session: pytest.Session) -> None:
    """Find the run's profile once, on the controller, and hand it to every worker.

    ``--adapter`` stacks are the project's own and implement the full profile;
    a ``--store`` factory is opened once to read its methods. A declared profile
    the store does not implement stops the run here, naming what is missing.
    """
    config = session.config
    from .core.profiles import ProfileError, Resolved, static_full

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
        from . import reporting

        config.stash[reporting.PROFILE_INFO] = resolved.to_json()


_PROFILE_UNKNOWN = pytest.StashKey[str]()


def _check_interface(config: pytest.Config) -> None:
    """An interface option's factory must make an object with every method the option maps;
    else the run stops with one sentence (``interfaces.mismatch``), never a G12 per test."""
    target = _target(config)
    if target is None or target[0] in ("--store", "--adapter"):
        return
    from .interfaces import by_option, check
    from .interfaces._base import InterfaceMismatch

    option, value = target
    interface = by_option(option)
    sync = interface.module == "langchain" and config.getoption("nomnesia_langchain_sync", False)
    made = resolve_factory(value, config.invocation_params.dir, option)
    try:
        run_async(check(interface, made, value, **({"sync": True} if sync else {})),
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
_UNINSTALL = pytest.StashKey[Callable[[], None]]()


def _install_engines(config: pytest.Config) -> None:
    """One engine provider per session (so per xdist worker), made on first use.

    The built-in stacks and ``nomnesia.suite.engines.engine_url`` (what a
    ``--store`` factory calls) share it; it closes in ``pytest_unconfigure``.
    """
    from nomnesia.adapters.engines import session as engines

    def make() -> Any:
        from nomnesia.adapters.engines import get_provider  # the plugin may import adapters

        return _settle(get_provider(_backends(config)))

    session = engines.EngineSession(make)
    config.stash[_ENGINES] = session
    config.stash[_UNINSTALL] = engines.install(session)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """Faults always heal: whatever a test armed is undone before the next test starts, even
    when the test could not heal it itself (a store that blocked its event loop, a timeout).
    The engine session does it from here, outside that loop; what it had to undo is a
    defect of the suite, so it is said, as a warning on the test."""
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
    if not (chosen or _collects_suite(config)):
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


def _collects_suite(config: pytest.Config) -> bool:
    """Whether the command line names the suite's package or files (a controller-side guess)."""
    for arg in config.args:
        name = arg.split("::")[0]
        if name == _PACKAGE or name.startswith(_PACKAGE + "."):
            return True
        try:
            path = (config.invocation_params.dir / name).resolve()
        except OSError:  # pragma: no cover
            continue
        if path == _SUITE_DIR or _SUITE_DIR in path.parents:
            return True
    return False


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
    from nomnesia.adapters import ADAPTERS

    server_only: frozenset[str] = frozenset()
    if ADAPTERS[adapter].engines:
        from nomnesia.adapters.engines import SERVER_ONLY

        server_only = SERVER_ONLY.intersection(ADAPTERS[adapter].engines)
    if server_only and getattr(config.stash[_ENGINES].provider, "kind", None) == "embedded":
        pytest.skip(f"adapter {adapter!r} needs {', '.join(sorted(server_only))}, which no "
                    "wheel ships: run with --backends docker where Docker answers, or "
                    "--backends external with its NOMNESIA_*_URL set")
    yield _adapter_factory(config, adapter)


def _adapter_factory(config: pytest.Config, adapter: str) -> Callable[..., Any]:
    """``open_store(adapter)`` on the session's engines (one provider per session or xdist
    worker, shared with engine_url(); every store gets its own namespace in it)."""
    from nomnesia.adapters import ADAPTERS, open_store

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
    if _in_suite(Path(str(item.path))):
        from . import reporting

        reporting.annotate(report, excinfo)  # its causes, for the summary by cause
    if (excinfo is None or not report.failed
            or not isinstance(excinfo.value, GuaranteeViolation)
            or item.config.getoption("tbstyle", "auto") != "auto"):
        return report  # type: ignore[no-any-return]
    where = ""
    for entry in reversed(excinfo.traceback):
        path = Path(str(entry.path))
        if path.parent == _SUITE_DIR and path.name.startswith("test_"):
            where = f"\n\n{path.name}:{entry.lineno + 1}: in {entry.name}"
            break
    report.longrepr = f"{excinfo.value}{where}"
    return report  # type: ignore[no-any-return]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The profile and what was not applicable to it; then failures grouped by cause
    (twelve red tests from one trimmed user id read as one line)."""
    from . import reporting

    config = terminalreporter.config
    skipped = terminalreporter.stats.get("skipped", ())
    inapplicable = [r for r in skipped if reporting.is_not_applicable(r)]
    if inapplicable or config.stash.get(SESSION_PROFILE, None) is not None:
        terminalreporter.write_sep("=", "nomnesia: profile")
        terminalreporter.write_line(_profile_line(config))
        for line in reporting.not_applicable_lines(inapplicable):
            terminalreporter.write_line(line)

    failures = [(r.nodeid, reporting.report_causes(r))
                for kind in ("failed", "error") for r in terminalreporter.stats.get(kind, ())
                if getattr(r, "when", "call") in ("setup", "call", "teardown")]
    failures = [(nodeid, causes) for nodeid, causes in failures if causes]
    if not failures:
        return
    groups = reporting.group_causes(failures)
    terminalreporter.write_sep("=", "nomnesia: failures by cause")
    for line in reporting.cause_lines(groups, len({nodeid for nodeid, _ in failures})):
        terminalreporter.write_line(line)


# --------------------------------------------------------------------------- collection


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Refuse a suite test's malformed ``guarantee`` mark; without a store to test, stop
    early with the usage, not with one error per test.

    Other projects' items are left alone (their ``guarantee`` mark may mean something
    else); ``--nomnesia-json`` checks every item it reports on.
    """
    from . import reporting

    for item in items:
        if _in_suite(Path(str(item.path))):
            reporting.declared(item)  # raises UsageError for anything but Guarantee members
    if _target(config) is not None:
        return
    if hasattr(config, "workerinput"):
        return  # an xdist worker cannot stop the run; the fixture fails with the usage instead
    if any("nomnesia_store" in getattr(item, "fixturenames", ()) for item in items):
        raise pytest.UsageError(_usage())


def _in_suite(path: Path) -> bool:
    try:
        return path.resolve().parent == _SUITE_DIR
    except OSError:  # pragma: no cover
        return False


class _OwnNaming:
    """The suite's names are ``Test*`` and ``test_*`` whatever the caller's ini says."""

    def classnamefilter(self, name: str) -> bool:
        return name.startswith("Test")

    def funcnamefilter(self, name: str) -> bool:
        return name.startswith("test")


class SuiteModule(_OwnNaming, pytest.Module):
    """A suite file, always imported under its real name ``nomnesia.suite.test_x``.

    From an editable install pytest's default import mode would import
    ``suite/test_x.py`` as a bare ``suite.test_x`` (the repository root has no
    ``__init__.py``), a second copy of every class; importing by name avoids it.
    """

    def _getobj(self) -> Any:
        return importlib.import_module(f"{_PACKAGE}.{self.path.stem}")


class SuiteClass(_OwnNaming, pytest.Class):
    """A suite class, collected by the suite's own naming rules."""


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str,
                              obj: object) -> pytest.Class | None:
    if isinstance(collector, SuiteModule) and isinstance(obj, type) \
            and collector.classnamefilter(name) and getattr(obj, "__test__", True):
        return SuiteClass.from_parent(collector, name=name, obj=obj)
    return None


class SuitePackage(pytest.Package):
    """The suite's directory; its ``__init__`` is imported by name, never by path."""

    def setup(self) -> None:
        importlib.import_module(_PACKAGE)


@pytest.hookimpl(tryfirst=True)
def pytest_collect_directory(path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if path.resolve() == _SUITE_DIR:
        return SuitePackage.from_parent(parent, path=path)
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path: Path,
                                parent: pytest.Collector) -> pytest.Module | None:
    if _in_suite(module_path) and module_path.name.startswith("test_"):
        return SuiteModule.from_parent(parent, path=module_path)
    return None


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    """Collect the suite's files even when the caller's ``python_files`` would not match them."""
    if not (_in_suite(file_path) and file_path.name.startswith("test_")
            and file_path.suffix == ".py"):
        return None
    if parent.session.isinitpath(file_path):
        return None  # pytest collects explicitly named files itself
    patterns = parent.config.getini("python_files")
    if any(file_path.match(p) for p in patterns):
        return None  # pytest's own collector will (through pytest_pycollect_makemodule)
    return SuiteModule.from_parent(parent, path=file_path)
