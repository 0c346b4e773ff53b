"""The noxfile reads its axes from pyproject and the registry, and importing it does nothing.

The sessions are listed with a real ``nox -l --json``; the helpers are tested on
the noxfile loaded as a module (it sets the run's environment only when its
command line runs an aggregate, and the fixture undoes that). The table the
aggregates print is tested in test_matrix_table.py, where its code lives.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import nox.project
import pytest

from nomnesia.adapters import ADAPTERS

ROOT = Path(__file__).resolve().parent.parent
PYTHONS = ["3.10", "3.11", "3.12", "3.13"]
sys.path.insert(0, str(ROOT / "ci"))
import pythons  # noqa: E402


def nox_listing() -> list[dict[str, Any]]:
    out = subprocess.run([sys.executable, "-m", "nox", "-f", str(ROOT / "noxfile.py"),
                          "-l", "--json"], cwd=ROOT, capture_output=True, text=True,
                         check=True, timeout=120)
    listing: list[dict[str, Any]] = json.loads(out.stdout)
    return listing


@pytest.fixture(scope="module")
def listing() -> list[dict[str, Any]]:
    return nox_listing()


@pytest.fixture(scope="module")
def noxfile() -> Iterator[ModuleType]:
    saved = dict(os.environ)
    spec = importlib.util.spec_from_file_location("nomnesia_noxfile_under_test",
                                                  ROOT / "noxfile.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]
        os.environ.clear()
        os.environ.update(saved)


def test_lists_matrix_adapters_and_every_leaf(listing: list[dict[str, Any]]) -> None:
    names = {s["session"] for s in listing}
    assert "matrix" in names
    assert ADAPTERS, "the registry is empty"
    for adapter in ADAPTERS:
        assert f"adapter({adapter})" in names
        for python in PYTHONS:
            assert f"conformance-{python}({adapter})" in names
    assert {"tests", "lint", "typecheck"} <= names


def test_leaves_are_exactly_registry_times_classifiers(listing: list[dict[str, Any]]) -> None:
    leaves = {(s["call_spec"]["adapter"], s["python"]) for s in listing
              if s["name"] == "conformance"}
    assert leaves == {(a, p) for a in ADAPTERS for p in PYTHONS}


def test_python_versions_come_from_the_classifiers(noxfile: ModuleType, tmp_path: Path) -> None:
    assert noxfile.PYTHONS == PYTHONS
    fake = tmp_path / "pyproject.toml"
    fake.write_text('[project]\nclassifiers = [\n  "Programming Language :: Python :: 3",\n'
                    '  "Programming Language :: Python :: 3.14",\n'
                    '  "Programming Language :: Python :: 3.9",\n]\n')
    # What the noxfile calls, on another pyproject.
    assert nox.project.python_versions(nox.project.load_toml(fake)) == ["3.9", "3.14"]


def test_registry_read_by_path_matches_the_installed_one(noxfile: ModuleType) -> None:
    assert list(noxfile.ADAPTERS) == list(ADAPTERS)
    for name, spec in ADAPTERS.items():
        assert noxfile.ADAPTERS[name].extras == tuple(spec.extras)
        assert noxfile.ADAPTERS[name].engines == tuple(spec.engines)


def test_matrix_requires_every_leaf_and_leaves_run_in_parallel(noxfile: ModuleType) -> None:
    import nox.registry

    sessions = nox.registry.get()
    leaves = {f"conformance-{p}({a})" for a in ADAPTERS for p in PYTHONS}
    assert set(sessions["matrix"].requires) == leaves
    for adapter in ADAPTERS:
        assert set(sessions[f"adapter({adapter})"].requires) == {
            f"conformance-{p}({adapter})" for p in PYTHONS}
    assert sessions["conformance"].allow_parallel is True
    # The aggregates are data: one table per entry, each tagged so that CI skips it.
    assert set(noxfile.AGGREGATES) == {"matrix", *(f"adapter({a})" for a in ADAPTERS)}
    assert all("aggregate" in sessions[name].tags for name in noxfile.AGGREGATES)


@pytest.mark.parametrize(("argv", "env", "aggregate"), [
    (["nox"], {}, True),
    (["nox", "-s", "matrix", "-j", "2"], {}, True),
    (["nox", "-s", "adapter(memory)"], {}, True),
    (["nox", "--session=matrix"], {}, True),
    (["nox", "-s", "lint", "adapter(memory)"], {}, True),
    (["nox"], {"NOXSESSION": "lint,matrix"}, True),
    (["nox", "-s", "conformance-3.12(memory)"], {}, False),
    (["nox", "-s", "tests", "--", "-s", "matrix"], {}, False),
    (["nox", "-t", "conformance"], {}, False),
    (["nox"], {"NOXSESSION": "tests"}, False),
    (["nox", "-l"], {}, False),
    (["nox", "-s", "matrix", "--list"], {}, False),
    (["/venv/lib/python3.12/site-packages/pytest/__main__.py", "-q"], {}, False),  # not nox
])
def test_aggregate_runs_defer_leaf_failures(noxfile: ModuleType, argv: list[str],
                                            env: dict[str, str], aggregate: bool) -> None:
    assert noxfile.runs_aggregate(argv, env) is aggregate


def snapshot(root: Path) -> dict[str, tuple[int, float]]:
    return {str(p.relative_to(root)): (p.lstat().st_mode, p.lstat().st_mtime)
            for p in sorted(root.rglob("*"))}


def test_nox_list_creates_links_and_changes_nothing(tmp_path: Path) -> None:
    """``nox -l`` (and importing the noxfile) leaves the tree and the environment as they were."""
    copy = tmp_path / "tree"
    for name in ("noxfile.py", "pyproject.toml", "adapters/registry.py",
                 "adapters/ecosystem/__init__.py"):
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, copy / name)
    before = snapshot(copy)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NOMNESIA_NOX_", "NOX"))}
    listed = subprocess.run([sys.executable, "-m", "nox", "-l"], cwd=copy, env=env,
                            capture_output=True, text=True, timeout=120, check=True)
    assert "conformance-3.12(memory)" in listed.stdout
    assert listed.stderr == ""  # no warnings about interpreters, no links made
    probe = ("import json, os, runpy, sys; sys.argv = ['nox', '-l']; before = dict(os.environ);"
             "path = list(sys.path); runpy.run_path('noxfile.py');"
             "print(json.dumps([dict(os.environ) == before, sys.path == path]))")
    imported = subprocess.run([sys.executable, "-c", probe], cwd=copy, env=env,
                              capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(imported.stdout) == [True, True], imported.stderr
    assert snapshot(copy) == before, "nox -l created or changed files"


def test_pythons_selects_the_newest_build_of_each_classifier() -> None:
    installed = ["2.7.18", "3.10.9", "3.10.13", "3.11.7", "3.12.1", "3.12.1t", "miniconda3",
                 "3.13.0", "3.13-dev"]
    chosen, missing = pythons.select(["3.11.7"], installed, [*PYTHONS, "3.14"])
    assert chosen == ["3.11.7", "3.10.13", "3.12.1", "3.13.0"]  # the current one stays first
    assert missing == ["3.14"]
    assert pythons.select(["system"], ["3.12.1"], ["3.12"]) == (["3.12.1"], [])
    assert pythons.select(["3.12.0"], ["3.12.0", "3.12.1"], ["3.12"]) == (["3.12.0"], [])


def test_pythons_output_is_what_nox_needs_to_find_them() -> None:
    """With its line applied, nox's own discovery finds every Python pyenv has."""
    if shutil.which("pyenv") is None:
        pytest.skip("no pyenv on this machine")
    out = subprocess.run([sys.executable, str(ROOT / "ci" / "pythons.py")], capture_output=True,
                         text=True, timeout=60, check=True).stdout.strip()
    assert out.startswith("export PYENV_VERSION=")
    env = {**os.environ, "PYENV_VERSION": out.split("=", 1)[1].strip("'")}
    have = subprocess.run(["pyenv", "versions", "--bare"], capture_output=True, text=True,
                          check=True).stdout.split()
    wanted = [p for p in PYTHONS if any(v.startswith(p + ".") for v in have)]
    probe = ("import sys; from python_discovery import get_interpreter;"
             "print(all(get_interpreter(v) for v in sys.argv[1:]))")
    found = subprocess.run([sys.executable, "-c", probe, *wanted], env=env, capture_output=True,
                           text=True, timeout=120, check=True)
    assert found.stdout.strip() == "True", (out, wanted, found.stderr)
