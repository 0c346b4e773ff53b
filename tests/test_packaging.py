"""The wheel installs nomnesia.suite and nomnesia.adapters, and never bare `suite`/`adapters`.

Bare `adapters` and `suite` are other projects' import names on PyPI; a wheel
that shipped them would break those projects for our users.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # nox's uv-made venvs have no pip; build with whichever frontend is there.
    has_pip = importlib.util.find_spec("pip") is not None
    uv = shutil.which("uv")
    if has_pip or uv is None:
        command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out)]
    else:
        command = [uv, "build", "--wheel", "-q", "--out-dir", str(out)]
    subprocess.run([*command, str(ROOT)], check=True)
    (built,) = out.glob("nomnesia-*.whl")
    return built


@pytest.mark.xdist_group("wheel")  # one `wheel` fixture, not one per worker
def test_wheel_holds_only_the_nomnesia_namespace(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"nomnesia"}, f"unexpected top-level entries in the wheel: {sorted(tops)}"
    assert "nomnesia/suite/contract/__init__.py" in names
    assert "nomnesia/suite/core/recorder.py" in names
    assert "nomnesia/adapters/memory.py" in names
    assert "nomnesia/suite/py.typed" in names
    # nomnesia.testing from suite/testing/, once, and the history format's schema
    assert "nomnesia/testing/__init__.py" in names
    assert "nomnesia/testing/py.typed" in names
    assert not any(n.startswith("nomnesia/suite/testing/") for n in names)
    assert "nomnesia/suite/core/history-v1.schema.json" in names


@pytest.mark.xdist_group("wheel")  # one `wheel` fixture, not one per worker
def test_wheel_registers_the_pytest_plugin(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        entry_points = next(n for n in zf.namelist() if n.endswith("entry_points.txt"))
        text = zf.read(entry_points).decode()
    assert "[pytest11]" in text and "nomnesia.suite.plugin" in text


@pytest.mark.install  # a venv from nothing: nox -s slow
def test_plain_install_in_a_new_venv(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel)],
                   check=True)
    probe = (
        "import importlib.util as u, nomnesia.suite, nomnesia.adapters;"
        "from nomnesia.adapters.memory import InMemoryStore;"
        "print(u.find_spec('adapters') is None, u.find_spec('suite') is None)"
    )
    result = subprocess.run([str(python), "-c", probe], cwd=tmp_path, check=True,
                            capture_output=True, text=True)
    assert result.stdout.split() == ["True", "True"]


def test_every_package_of_the_tree_is_listed_for_the_wheel() -> None:
    """A new subpackage (adapters/ecosystem/causes) missing from pyproject's list would be
    left out of every non-editable install, and only a user would find out."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    root = Path(__file__).resolve().parents[1]
    listed = set(tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
                 ["tool"]["setuptools"]["packages"])
    # suite/testing/ installs as nomnesia.testing (package-dir), never as nomnesia.suite.testing
    found = {"nomnesia." + ".".join(init.parent.relative_to(root).parts)
             .replace("suite.testing", "testing", 1)
             for top in ("adapters", "suite") for init in (root / top).rglob("__init__.py")}
    assert found == listed, f"missing: {sorted(found - listed)}; stale: {sorted(listed - found)}"
