"""The layers of docs/architecture.md, enforced: a wrong import fails here, not in review.

Each folder is a floor, and imports only go down (function-level imports count: an import
inside a function is still an import):

* ``suite/contract`` (the guarantees, the protocol, errors, validation, failpoints)
  imports nothing else of nomnesia. It is the only part of the suite an adapter imports.
* ``suite/core`` (histories, checkers, the recorder and the loop, the workload) imports
  only the contract: it judges any store, so it may not know ours.
* ``suite/report`` and ``suite/interfaces`` import the contract and the core.
* ``adapters/`` imports only the contract of the suite; the engine seam (the session,
  the fault proxy, its toxics) lives in ``adapters/engines`` for that reason. One
  exception: the audits' report (``adapters/ecosystem/report.py``, a tool, not a store)
  opens an interface audit's store for its probes through ``nomnesia.suite.interfaces``.
* ``suite/faults`` (the fault parts) and ``suite/nemesis`` may use the engines, by their
  public names only (no ``_module``).
* No subfolder of ``suite/`` imports the top of ``suite/`` (the plugin, the CLI, the
  façades, the suite's own tests): the top is where entry points live.

Across all of it: no circle between folders, no module of ``suite/`` or ``bench/`` that
imports one that imports it, and fewer than 20 imports of project modules inside
functions, each with a comment that says why it cannot be at the top.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest
from safe_ast import parse

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"suite": "nomnesia.suite", "adapters": "nomnesia.adapters"}
TESTING = "nomnesia.testing"
TESTING_DIR = ("suite", "testing")
"""``suite/testing/`` is installed as ``nomnesia.testing``, the public testing module: a
floor of its own above the faults, the core and the report, below the top of the suite."""
CONTRACT = "nomnesia.suite.contract"
CORE = "nomnesia.suite.core"
REPORT = "nomnesia.adapters.ecosystem.report"
"""The audits' report, a tool run with ``python -m`` that no store imports: its probes open
an interface audit's library object through the suite's public mapping
(``nomnesia.suite.interfaces``), as the suite run did, so there is one mapping per library."""
MAY_IMPORT = {  # a folder of the suite -> the folders of nomnesia it may import
    "nomnesia.suite.contract": (),
    "nomnesia.suite.core": (CONTRACT,),
    "nomnesia.suite.report": (CONTRACT, CORE),
    "nomnesia.suite.interfaces": (CONTRACT, CORE),
    "nomnesia.suite.faults": (CONTRACT, CORE, "nomnesia.adapters.engines"),
    TESTING: (CONTRACT, CORE, "nomnesia.suite.faults", "nomnesia.suite.report",
              "nomnesia.adapters"),
}
ENTRY_POINTS = ("nomnesia.suite.plugin", "nomnesia.suite.cli", "nomnesia.suite.nemesis.__main__",
                "nomnesia.adapters.ecosystem.run", "nomnesia.adapters.ecosystem.report",
                "nomnesia.adapters.ecosystem.repro")
"""What users and nox start: the pytest plugin, ``nomnesia``, ``python -m ...``."""
FUNCTION_LEVEL_MOST = 20
FUNCTION_LEVEL_REASON = "function-level:"


def _module_name(root: Path, path: Path) -> str:
    rel = path.relative_to(root).with_suffix("")
    if rel.parts[:2] == TESTING_DIR:  # installed under its own name (pyproject's package-dir)
        return ".".join([TESTING, *rel.parts[2:]]).removesuffix(".__init__")
    parts = [PACKAGES[rel.parts[0]], *rel.parts[1:]]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(root: Path) -> dict[str, Path]:
    return {_module_name(root, p): p for top in PACKAGES if (root / top).is_dir()
            for p in sorted((root / top).rglob("*.py"))}


def _resolved(node: ast.ImportFrom, package: str) -> str:
    """The absolute module a ``from ... import`` names, relative dots resolved in ``package``."""
    base = node.module or ""
    if node.level:
        anchor = package.split(".")
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join([*anchor, base] if base else anchor)
    return base


def _in_functions(tree: ast.Module) -> set[int]:
    """The ids of the import nodes that stand inside a function body."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inside.update(id(sub) for sub in ast.walk(node)
                          if isinstance(sub, (ast.Import, ast.ImportFrom)))
    return inside


def imports(root: Path) -> list[tuple[str, int, str, bool]]:
    """(module, line, imported module, inside a function) for every nomnesia import.

    ``from pkg import name`` imports ``pkg.name`` where that is a module, else ``pkg``.
    """
    modules = _modules(root)
    found: list[tuple[str, int, str, bool]] = []
    for module, path in modules.items():
        tree = parse(path.read_text(encoding="utf-8"))
        inside = _in_functions(tree)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolved(node, package)
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                         for a in node.names]
            for name in dict.fromkeys(names):
                if name.startswith("nomnesia.") and name != module:
                    found.append((module, node.lineno, name, id(node) in inside))
    return found


def folder_of(module: str, modules: dict[str, Path]) -> str:
    """The folder (as a dotted name) a module's file stands in."""
    path = modules.get(module)
    if path is None:  # a name below a module (``pkg.mod.Name``): its module's folder
        return folder_of(module.rpartition(".")[0], modules) if "." in module else module
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def violations(root: Path) -> list[str]:
    """Every import in ``root/suite`` and ``root/adapters`` that breaks a floor's rule."""
    modules = _modules(root)
    bad: list[str] = []
    for module, line, name, _ in imports(root):
        where = f"{modules[module].relative_to(root)}:{line}"
        folder, target = folder_of(module, modules), folder_of(name, modules)
        private = any(part.startswith("_") and part != "__init__"
                      for part in name.split(".")[2:])
        if _under(module, "nomnesia.adapters"):
            if module == REPORT and _under(name, "nomnesia.suite.interfaces") and not private:
                continue  # the audits' report opens interface stores for its probes
            if _under(name, "nomnesia.suite") and not _under(name, CONTRACT):
                bad.append(f"{where}: an adapter imports {name}, outside the suite's contract")
            continue
        if _under(name, "nomnesia.adapters") and private:
            bad.append(f"{where}: the suite imports the private {name}")
            continue
        allowed = next((may for floor, may in MAY_IMPORT.items() if _under(folder, floor)), None)
        if allowed is not None:
            own = next(floor for floor in MAY_IMPORT if _under(folder, floor))
            if not _under(target, own) and not any(_under(target, a) for a in allowed):
                bad.append(f"{where}: {own.rpartition('.')[2]} imports {name}")
        elif folder != "nomnesia.suite" and target == "nomnesia.suite":
            bad.append(f"{where}: {folder} imports the top of the suite ({name})")
    return list(dict.fromkeys(bad))


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
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


def folder_graph(root: Path) -> dict[str, set[str]]:
    """Folder -> the folders its modules import (function-level imports included)."""
    modules = _modules(root)
    graph: dict[str, set[str]] = {}
    for module, _, name, _ in imports(root):
        src, dst = folder_of(module, modules), folder_of(name, modules)
        if src != dst:
            graph.setdefault(src, set()).add(dst)
    return graph


def module_graph(root: Path, top: str) -> dict[str, set[str]]:
    """Module -> the modules of ``root/top`` it imports."""
    modules = _modules(root)
    graph: dict[str, set[str]] = {}
    for module, _, name, _ in imports(root):
        if _under(module, PACKAGES[top]) and name in modules and name != module:
            graph.setdefault(module, set()).add(name)
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


def function_level(root: Path) -> list[tuple[str, int, str, str]]:
    """(file, line, module imported, the line's text) of every import statement of a project
    module inside a function, in ``suite/``, ``adapters/`` and ``bench/``."""
    found: list[tuple[str, int, str, str]] = []
    files = [p for top in (*PACKAGES, "bench") if (root / top).is_dir()
             for p in sorted((root / top).rglob("*.py"))]
    for path in files:
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        tree = parse(source)
        inside = _in_functions(tree)
        for node in ast.walk(tree):
            if id(node) not in inside:
                continue
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] if not node.level else [f"relative {node.module}"]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            if getattr(node, "level", 0) or any(n.startswith("nomnesia") for n in names):
                text = " ".join(lines[node.lineno - 1:node.end_lineno or node.lineno])
                found.append((str(path.relative_to(root)), node.lineno, names[0], text))
    return found


# --------------------------------------------------------------------------- the tree


def test_no_folder_imports_one_that_imports_it() -> None:
    assert circles(folder_graph(ROOT)) == []


def test_no_module_imports_one_that_imports_it() -> None:
    assert circles(module_graph(ROOT, "suite")) == []
    assert circles(module_graph(ROOT, "adapters")) == []
    assert circles(bench_graph(ROOT)) == []


def test_the_tree_keeps_its_layers() -> None:
    assert violations(ROOT) == []


def test_few_imports_stand_inside_functions_and_each_says_why() -> None:
    found = function_level(ROOT)
    unexplained = [f"{path}:{line}: {text.strip()}" for path, line, _, text in found
                   if FUNCTION_LEVEL_REASON not in text]
    assert unexplained == [], "a function-level import without '# function-level: why'"
    assert len(found) < FUNCTION_LEVEL_MOST, [f"{p}:{n}" for p, n, _, _ in found]


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_every_entry_point_named_here_exists(entry: str) -> None:
    assert importlib.util.find_spec(entry) is not None, entry


# --------------------------------------------------------------------------- the checks can fail


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for path, source in files.items():
        target = tmp_path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source, encoding="utf-8")
    for folder in ("suite", "adapters"):
        (tmp_path / folder).mkdir(exist_ok=True)
        (tmp_path / folder / "__init__.py").touch()
    return tmp_path


def test_a_circle_through_a_function_level_import_is_found(tmp_path: Path) -> None:
    """What suite/reporting.py and report_html.py once were: one imports the other at the
    top, the other imports it back inside a function. And two folders doing the same."""
    root = _tree(tmp_path, {
        "suite/report/__init__.py": "",
        "suite/report/a.py": "from .b import x\n",
        "suite/report/b.py": "def x():\n    from . import a\n    from ..core.checker import c\n",
        "suite/core/__init__.py": "",
        "suite/core/checker.py": "def c():\n    import nomnesia.suite.report.a\n",
        "bench/report.py": "def f():\n    import bench_load\n",
        "bench/bench_load.py": "from report import f\n",
    })
    assert circles(module_graph(root, "suite")) == [[
        "nomnesia.suite.core.checker", "nomnesia.suite.report.a", "nomnesia.suite.report.b"]]
    assert circles(folder_graph(root)) == [["nomnesia.suite.core", "nomnesia.suite.report"]]
    assert circles(bench_graph(root)) == [["bench_load", "report"]]


@pytest.mark.parametrize(("path", "source", "expected"), [
    ("suite/nemesis/runner.py", "from nomnesia.adapters.engines._proc import launcher\n",
     "the suite imports the private nomnesia.adapters.engines._proc"),
    ("suite/core/checker.py", "def f():\n    from nomnesia.adapters import ADAPTERS\n",
     "core imports nomnesia.adapters"),
    ("suite/contract/errors.py", "from ..core.history import History\n",
     "contract imports nomnesia.suite.core.history"),
    ("adapters/tiered.py", "from nomnesia.suite.core import recorder\n",
     "an adapter imports nomnesia.suite.core.recorder"),
    ("adapters/indexes/x.py", "from ...suite.core.checker import check\n",
     "an adapter imports nomnesia.suite.core.checker"),
    ("suite/nemesis/user_store.py", "from .. import plugin\n",
     "imports the top of the suite (nomnesia.suite.plugin)"),
    ("suite/report/causes.py", "from ..faults import during\n",
     "report imports nomnesia.suite.faults.during"),
    ("suite/testing/faults.py", "from nomnesia.suite import plugin\n",
     "testing imports nomnesia.suite.plugin"),
])
def test_each_rule_can_fail(tmp_path: Path, path: str, source: str, expected: str) -> None:
    files = dict.fromkeys(("suite/core/__init__.py", "suite/contract/__init__.py",
                           "suite/faults/__init__.py", "suite/faults/during.py",
                           "suite/core/history.py", "suite/core/recorder.py",
                           "suite/core/checker.py", "suite/plugin.py"), "")
    root = _tree(tmp_path, {**files, path: source})
    found = violations(root)
    assert len(found) == 1 and expected in found[0], found


def test_allowed_imports_pass(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "suite/nemesis/runner.py": "from nomnesia.adapters.engines import launcher\n",
        "suite/core/checker.py": "from .history import History\nfrom ..contract import Entry\n",
        "suite/core/history.py": "",
        "suite/contract/__init__.py": "",
        "suite/contract/errors.py": "",
        "suite/plugin.py": "from .core import checker\nfrom nomnesia.adapters import stacks\n",
        "adapters/tiered.py": "from nomnesia.suite.contract.errors import BackendUnavailable\n"
                              "from nomnesia.suite.contract import validation\n",
    })
    assert violations(root) == []


def test_an_unexplained_function_level_import_is_named(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "suite/cli.py": "def main():\n    from .core import history\n"
                        "    from .core import checker  # function-level: only the check\n",
    })
    found = function_level(root)
    assert [(path, line) for path, line, _, _ in found] == [("suite/cli.py", 2),
                                                          ("suite/cli.py", 3)]
    assert [FUNCTION_LEVEL_REASON in text for _, _, _, text in found] == [False, True]
