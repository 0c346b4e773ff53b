"""Safe collection of the suite's own files, whatever the caller's pytest settings.

Its own module because it answers one question the rest of the plugin never asks:
how pytest finds ``nomnesia.suite.test_*`` (by real module name, with the suite's
own ``Test*``/``test_*`` naming) and whether a path or a command line is the suite's.
The plugin re-exports its hooks; nothing here knows about stores or reports.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

SUITE_DIR = Path(__file__).resolve().parent
"""The directory of ``nomnesia.suite``: a file directly in it is one of the suite's."""
PACKAGE = "nomnesia.suite"


def collects_suite(config: pytest.Config) -> bool:
    """Whether the command line names the suite's package or files (a controller-side guess)."""
    for arg in config.args:
        name = arg.split("::")[0]
        if name == PACKAGE or name.startswith(PACKAGE + "."):
            return True
        try:
            path = (config.invocation_params.dir / name).resolve()
        except OSError:  # pragma: no cover
            continue
        if path == SUITE_DIR or SUITE_DIR in path.parents:
            return True
    return False


def in_suite(path: Path) -> bool:
    try:
        return path.resolve().parent == SUITE_DIR
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
        return importlib.import_module(f"{PACKAGE}.{self.path.stem}")


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
        importlib.import_module(PACKAGE)


@pytest.hookimpl(tryfirst=True)
def pytest_collect_directory(path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if path.resolve() == SUITE_DIR:
        return SuitePackage.from_parent(parent, path=path)
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path: Path,
                                parent: pytest.Collector) -> pytest.Module | None:
    if in_suite(module_path) and module_path.name.startswith("test_"):
        return SuiteModule.from_parent(parent, path=module_path)
    return None


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    """Collect the suite's files even when the caller's ``python_files`` would not match them."""
    if not (in_suite(file_path) and file_path.name.startswith("test_")
            and file_path.suffix == ".py"):
        return None
    if parent.session.isinitpath(file_path):
        return None  # pytest collects explicitly named files itself
    patterns = parent.config.getini("python_files")
    if any(file_path.match(p) for p in patterns):
        return None  # pytest's own collector will (through pytest_pycollect_makemodule)
    return SuiteModule.from_parent(parent, path=file_path)
