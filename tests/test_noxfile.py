"""The noxfile's two axes come from pyproject and the adapter registry, and its table reads junit.

The sessions are listed with a real ``nox -l --json``; the helpers are tested on
the noxfile loaded as a module (its import-time changes to the environment are
undone after loading).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from nomnesia.adapters import ADAPTERS

ROOT = Path(__file__).resolve().parent.parent
PYTHONS = ["3.10", "3.11", "3.12", "3.13"]


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
    sys.modules[spec.name] = module  # dataclasses look their module up
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
    assert noxfile.python_versions(fake) == ["3.9", "3.14"]


def test_python_versions_without_tomllib(noxfile: ModuleType,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tomllib", None)  # as on Python 3.10
    assert noxfile.python_versions() == PYTHONS


def test_registry_read_by_path_matches_the_installed_one(noxfile: ModuleType) -> None:
    assert list(noxfile.ADAPTERS) == list(ADAPTERS)
    for name, spec in ADAPTERS.items():
        assert noxfile.ADAPTERS[name].extras == tuple(spec.extras)
    assert noxfile.REGISTRY.guarantees["G7"] == "G7 atomic compaction"


def test_registry_parse_fallback_agrees(noxfile: ModuleType) -> None:
    source = (ROOT / "adapters" / "registry.py").read_text()
    parsed = noxfile._parse_registry(source)
    assert [a.name for a in parsed] == list(ADAPTERS)


def test_matrix_requires_every_leaf_and_leaves_run_in_parallel(noxfile: ModuleType) -> None:
    import nox.registry

    sessions = nox.registry.get()
    leaves = {f"conformance-{p}({a})" for a in ADAPTERS for p in PYTHONS}
    assert set(sessions["matrix"].requires) == leaves
    for adapter in ADAPTERS:
        assert set(sessions[f"adapter({adapter})"].requires) == {
            f"conformance-{p}({adapter})" for p in PYTHONS}
    assert sessions["conformance"].allow_parallel is True


@pytest.mark.parametrize(("argv", "aggregate"), [
    (["nox"], True),
    (["nox", "-s", "matrix", "-j", "2"], True),
    (["nox", "-s", "adapter(memory)"], True),
    (["nox", "--session=matrix"], True),
    (["nox", "-s", "lint", "adapter(memory)"], True),
    (["nox", "-s", "conformance-3.12(memory)"], False),
    (["nox", "-s", "tests", "--", "-s", "matrix"], False),
    (["nox", "-t", "conformance"], False),
])
def test_aggregate_runs_defer_leaf_failures(noxfile: ModuleType, monkeypatch: pytest.MonkeyPatch,
                                            argv: list[str], aggregate: bool) -> None:
    monkeypatch.delenv("NOXSESSION", raising=False)
    assert noxfile._starts_aggregate(argv) is aggregate


JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="4" failures="2" errors="1">
<testcase classname="suite.test_contract.TestContract" name="test_ok"/>
<testcase classname="suite.test_contract.TestContract" name="test_compact">
  <failure message="nomnesia.suite._run.GuaranteeViolation: G7 atomic compaction: lost m3">
  trace</failure></testcase>
<testcase classname="suite.test_contract.TestContract" name="test_search">
  <failure message="G4 search: returned a covered entry">trace</failure></testcase>
<testcase classname="suite.test_contract.TestContract" name="test_g11_quiescent">
  <error message="RuntimeError: boom">trace</error></testcase>
</testsuite></testsuites>
"""


def write_leaf(directory: Path, stem: str, code: int, xml: str | None) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{stem}.exit").write_text(f"{code}\n")
    if xml is not None:
        (directory / f"{stem}.xml").write_text(xml)


def test_cells_name_the_failed_guarantees(noxfile: ModuleType, tmp_path: Path) -> None:
    write_leaf(tmp_path, noxfile.leaf_stem("3.12", "memory"), 1, JUNIT)
    cell = noxfile.read_cell(tmp_path, "3.12", "memory")
    assert cell.status == "fail" and cell.tests == 4
    assert cell.failed == {"G7": 1, "G4": 1, "G11": 1}
    assert cell.text() == "FAIL G4 G7 G11"


def test_cells_tell_no_tests_and_errors_and_absent_leaves(noxfile: ModuleType,
                                                          tmp_path: Path) -> None:
    write_leaf(tmp_path, noxfile.leaf_stem("3.10", "memory"), 5, None)
    write_leaf(tmp_path, noxfile.leaf_stem("3.11", "memory"), 4, None)
    ok = JUNIT.split("<testcase", 2)[0] + '<testcase name="t"/></testsuite></testsuites>'
    write_leaf(tmp_path, noxfile.leaf_stem("3.13", "memory"), 0, ok)
    cells = {p: noxfile.read_cell(tmp_path, p, "memory") for p in PYTHONS}
    assert [cells[p].status for p in PYTHONS] == ["no tests", "error", "not run", "pass"]
    assert cells["3.13"].text() == "pass (1)"
    assert cells["3.10"].ok and cells["3.13"].ok
    assert not cells["3.11"].ok and not cells["3.12"].ok


def test_one_table_adapter_by_python(noxfile: ModuleType, tmp_path: Path) -> None:
    write_leaf(tmp_path, noxfile.leaf_stem("3.12", "memory"), 1, JUNIT)
    cells = {(a, p): noxfile.read_cell(tmp_path, p, a) for a in ("memory", "other")
             for p in ("3.12",)}
    table = noxfile.render_table(cells, ["memory", "other"], ["3.12"],
                                 {"G7": "G7 atomic compaction"})
    lines = table.splitlines()
    assert lines[0].split() == ["adapter", "3.12"]
    assert lines[2].split()[:2] == ["memory", "FAIL"]
    assert lines[3].split() == ["other", "not", "run"]
    assert "  G7 atomic compaction: memory@3.12 (1)" in lines


def test_guarantee_of_reads_the_message_prefix(noxfile: ModuleType) -> None:
    assert noxfile.guarantee_of("pkg.GuaranteeViolation: G12 errors: x") == "G12"
    assert noxfile.guarantee_of("Inputs: empty user id accepted") == "Inputs"
    assert noxfile.guarantee_of("assert 1 == 2", "test_g9_isolation") == "G9"
    assert noxfile.guarantee_of("assert 1 == 2", "test_other") == "unlabelled"
    missing = "nomnesia.suite.errors.BackendUnavailable: backend 'postgres' unavailable: G12"
    assert noxfile.guarantee_of(missing) == "G12"
    assert noxfile.guarantee_of(missing.removesuffix(": G12")) == "BackendUnavailable"


def test_skipped_tests_are_counted_apart(noxfile: ModuleType, tmp_path: Path) -> None:
    head = '<testsuites><testsuite name="pytest">'
    skip = '<testcase name="s"><skipped message="no engine"/></testcase>'
    write_leaf(tmp_path, noxfile.leaf_stem("3.12", "a"), 0,
               f'{head}<testcase name="t"/>{skip}</testsuite></testsuites>')
    write_leaf(tmp_path, noxfile.leaf_stem("3.12", "b"), 0,
               f"{head}{skip}{skip}</testsuite></testsuites>")
    assert noxfile.read_cell(tmp_path, "3.12", "a").text() == "pass (1, 1 skipped)"
    cell = noxfile.read_cell(tmp_path, "3.12", "b")
    assert (cell.status, cell.text(), cell.ok) == ("skipped", "skipped (2)", True)
