"""The layers of docs/architecture.md, enforced: a wrong import fails here, not in review.

* The **contract layer** (``contract``, ``errors``, ``validation``, ``failpoints``)
  imports nothing else of nomnesia. It is the only part of ``nomnesia.suite``
  that adapters (ours and third parties') import.
* The **suite's core** (model, checker, history, reporting, the tests) imports no
  adapter: it judges any store, so it may not know ours.
* Only the **entry points** (``plugin``, ``cli``, ``engines``, ``nemesis``) use
  both, and only public names of ``nomnesia.adapters``: no module whose name
  starts with ``_`` (``engines._proc``), so what the nemesis needs of engines is
  public API of ``nomnesia.adapters.engines``.

Imports are read with ``ast``, function-level ones included, relative ones resolved.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"suite": "nomnesia.suite", "adapters": "nomnesia.adapters"}
CONTRACT = {f"nomnesia.suite.{m}" for m in ("contract", "errors", "validation", "failpoints")}
ENTRY_POINTS = ("nomnesia.suite.plugin", "nomnesia.suite.cli", "nomnesia.suite.engines",
                "nomnesia.suite.nemesis", "nomnesia.suite.__main__")


def _module_name(root: Path, path: Path) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = [PACKAGES[rel.parts[0]], *rel.parts[1:]]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(source: str, module: str, is_package: bool) -> list[tuple[int, str]]:
    """(line, absolute module) of every ``nomnesia`` import in ``source``."""
    found: list[tuple[int, str]] = []
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # ``from pkg import mod`` imports a module too: judge pkg.mod for each name.
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
            found.append((node.lineno, base))
    return [(line, name) for line, name in found if name.startswith("nomnesia.")]


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def violations(root: Path) -> list[str]:
    """Every import in ``root/suite`` and ``root/adapters`` that breaks a rule above."""
    bad: list[str] = []
    for top in PACKAGES:
        for path in sorted((root / top).rglob("*.py")):
            module = _module_name(root, path)
            where = f"{path.relative_to(root)}"
            for line, name in imports_of(path.read_text(encoding="utf-8"), module,
                                         path.name == "__init__.py"):
                private = any(part.startswith("_") and part != "__init__"
                              for part in name.split(".")[2:])
                if top == "adapters":
                    if _under(name, "nomnesia.suite") and name != "nomnesia.suite" and not any(
                            _under(name, c) for c in CONTRACT):
                        bad.append(f"{where}:{line}: an adapter imports {name}, "
                                   "outside the suite's contract layer")
                elif module in CONTRACT:
                    if not any(_under(name, c) for c in CONTRACT) and name != "nomnesia.suite":
                        bad.append(f"{where}:{line}: the contract layer imports {name}")
                elif any(_under(module, e) for e in ENTRY_POINTS):
                    if _under(name, "nomnesia.adapters") and private:
                        bad.append(f"{where}:{line}: an entry point imports the private {name}")
                elif _under(name, "nomnesia.adapters"):
                    bad.append(f"{where}:{line}: the suite's core imports {name}")
    # ``from a import b`` is judged as both a.b and a: report each line once.
    once: dict[str, str] = {}
    for report in bad:
        once.setdefault(report.split(": ", 1)[0], report)
    return list(once.values())


def test_the_tree_keeps_its_layers() -> None:
    assert violations(ROOT) == []


@pytest.mark.parametrize(("path", "source", "expected"), [
    ("suite/nemesis/runner.py", "from nomnesia.adapters.engines._proc import launcher\n",
     "an entry point imports the private nomnesia.adapters.engines._proc"),
    ("suite/checker.py", "def f():\n    from nomnesia.adapters import ADAPTERS\n",
     "the suite's core imports nomnesia.adapters"),
    ("suite/errors.py", "from .history import History\n",
     "the contract layer imports nomnesia.suite.history"),
    ("adapters/tiered.py", "from nomnesia.suite import _run\n",
     "an adapter imports nomnesia.suite._run"),
    ("adapters/indexes/x.py", "from ...suite.checker import check\n",
     "an adapter imports nomnesia.suite.checker"),
])
def test_each_rule_can_fail(tmp_path: Path, path: str, source: str, expected: str) -> None:
    (tmp_path / "suite").mkdir()
    (tmp_path / "adapters").mkdir()
    target = tmp_path / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(source, encoding="utf-8")
    found = violations(tmp_path)
    assert len(found) == 1 and expected in found[0], found


def test_allowed_imports_pass(tmp_path: Path) -> None:
    for path, source in {
        "suite/nemesis/runner.py": "from nomnesia.adapters.engines import launcher\n",
        "suite/checker.py": "from .history import History\nfrom .contract import Entry\n",
        "adapters/tiered.py": "from nomnesia.suite.errors import BackendUnavailable\n"
                              "from nomnesia.suite import validation\n",
    }.items():
        target = tmp_path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source, encoding="utf-8")
    assert violations(tmp_path) == []
