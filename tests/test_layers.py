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
* One exception: the audits' report (``adapters/ecosystem/report.py``, a tool, not a
  store) opens an interface audit's store for its probes through the public
  ``nomnesia.suite.interfaces``, so each library has one mapping.

No module in ``suite/`` or ``bench/`` imports one that imports it, not even
through others or inside a function: a circle makes the order of imports matter
and two modules that can only be read together.

Imports are read with ``ast``, function-level ones included, relative ones resolved.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from safe_ast import parse

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"suite": "nomnesia.suite", "adapters": "nomnesia.adapters"}
CONTRACT = {f"nomnesia.suite.{m}" for m in ("contract", "errors", "validation", "failpoints")}
REPORT = "nomnesia.adapters.ecosystem.report"
"""The audits' report, a tool run with ``python -m`` that no store imports: its probes open
an interface audit's library object through the suite's public mapping
(``nomnesia.suite.interfaces``), as the suite run did, so there is one mapping per library."""
ENTRY_POINTS = ("nomnesia.suite.plugin", "nomnesia.suite.cli", "nomnesia.suite.engines",
                "nomnesia.suite.examples",
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
    for node in ast.walk(parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolved(node, package)
            # ``from pkg import mod`` imports a module too: judge pkg.mod for each name.
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
            found.append((node.lineno, base))
    return [(line, name) for line, name in found if name.startswith("nomnesia.")]


def _resolved(node: ast.ImportFrom, package: str) -> str:
    """The absolute module a ``from ... import`` names, relative dots resolved in ``package``."""
    base = node.module or ""
    if node.level:
        anchor = package.split(".")
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join([*anchor, base] if base else anchor)
    return base


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
                    if module == REPORT and _under(name, "nomnesia.suite.interfaces") \
                            and not private:
                        continue  # the audits' report opens interface stores for its probes
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


def suite_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules of ``suite/`` it imports (``from pkg import mod`` is pkg.mod)."""
    paths = {_module_name(root, p): p for p in sorted((root / "suite").rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        edges: set[str] = set()
        for node in ast.walk(parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                edges.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                package = module if path.name == "__init__.py" else module.rpartition(".")[0]
                base = _resolved(node, package)
                named = {f"{base}.{a.name}" for a in node.names} & paths.keys()
                edges.update(named or {base})
        graph[module] = (edges & paths.keys()) - {module}
    return graph


def bench_graph(root: Path) -> dict[str, set[str]]:
    """Script -> the scripts of ``bench/`` it imports (they import each other by bare name)."""
    paths = {p.stem: p for p in sorted((root / "bench").glob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        edges: set[str] = set()
        for node in ast.walk(parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                edges.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                edges.add(node.module.split(".")[0])
        graph[name] = (edges & paths.keys()) - {name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            part = []
            while True:
                top = stack.pop()
                part.append(top)
                if top == node:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_no_module_imports_one_that_imports_it() -> None:
    assert circles(suite_graph(ROOT)) == []
    assert circles(bench_graph(ROOT)) == []


def test_a_circle_through_a_function_level_import_is_found(tmp_path: Path) -> None:
    """What suite/reporting.py and report_html.py were: one imports the other at the top,
    the other imports it back inside a function. And bench's two scripts, by bare name."""
    (tmp_path / "suite" / "report").mkdir(parents=True)
    (tmp_path / "bench").mkdir()
    (tmp_path / "suite" / "report" / "__init__.py").write_text("")
    (tmp_path / "suite" / "report" / "a.py").write_text("from .b import x\n")
    (tmp_path / "suite" / "report" / "b.py").write_text(
        "def x():\n    from . import a\n    from ..checker import check\n")
    (tmp_path / "suite" / "checker.py").write_text("import nomnesia.suite.report.a\n")
    (tmp_path / "bench" / "report.py").write_text("def f():\n    import bench_load\n")
    (tmp_path / "bench" / "bench_load.py").write_text("from report import f\n")
    assert circles(suite_graph(tmp_path)) == [[
        "nomnesia.suite.checker", "nomnesia.suite.report.a", "nomnesia.suite.report.b"]]
    assert circles(bench_graph(tmp_path)) == [["bench_load", "report"]]


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
