"""The reproduction scripts beside docs/ecosystem.md: one per graded cause, standalone,
and judged by what they print and how they exit (without running any audited library)."""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

import pytest
from safe_ast import parse

from nomnesia.adapters.ecosystem.causes import CAUSES, Cause, attribute, repro_dir
from nomnesia.adapters.ecosystem.repro import needs, run_one

SCRIPTS = repro_dir()


@pytest.mark.parametrize("cause", [c for c in CAUSES if c.repro], ids=lambda c: c.key)
def test_every_graded_cause_has_a_standalone_script(cause: Cause) -> None:
    script = SCRIPTS / str(cause.repro)
    assert script.exists(), f"{cause.key} ({cause.severity}) has no {script}"
    tree = parse(script.read_text(encoding="utf-8"))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {str(n.module) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {m for m in imported if m.split(".")[0] == "nomnesia"}, \
        f"{script.name} imports nomnesia: a maintainer could not paste it"
    assert ast.get_docstring(tree), f"{script.name} says nothing of what it shows"
    needs(script)  # only engines the runner can start


def test_a_contract_gap_needs_no_script_and_a_defect_needs_its_functions() -> None:
    gap = Cause("x-gap", (), ("G1",), "contract gap", "f", "what", "repro", "always")
    assert gap.repro is None
    with pytest.raises(ValueError, match="names its functions"):
        Cause("x-loss", (), ("G1",), "data loss", "f", "what", "repro", "always")
    with pytest.raises(ValueError, match="severity"):
        Cause("x-bad", (), ("G1",), "bad", "f", "what", "repro", "always")


def _outcome(tmp_path: Path, body: str, shows: str = r"lost \d+") -> str:
    script = tmp_path / "x.py"
    script.write_text(body, encoding="utf-8")
    cause = Cause("x", (), ("G1",), "data loss", "f", "what", "repro", "always",
                  functions=("os:getcwd",), shows=shows)
    return run_one(cause, script, dict(os.environ)).outcome


def test_the_runner_tells_reproduces_fixed_and_broken_apart(tmp_path: Path) -> None:
    assert _outcome(tmp_path, "print('lost 3 messages'); raise SystemExit(1)") == "reproduces"
    assert _outcome(tmp_path, "print('not reproduced: all there')") == "fixed"
    # Exit 1 for another reason (a crash, an import error) is no reproduction.
    assert _outcome(tmp_path, "import no_such_module_here") == "broken"
    assert _outcome(tmp_path, "print('something else'); raise SystemExit(1)") == "broken"
    missing = Cause("y", (), ("G1",), "data loss", "f", "w", "r", "always",
                    functions=("os:getcwd",), shows="x")
    assert run_one(missing, tmp_path / "absent.py", {}).outcome == "broken"


def test_attribution_names_the_distribution_that_ships_the_file() -> None:
    pytest.importorskip("langgraph.store.base")
    found = attribute("langgraph.store.base:_validate_namespace_labels")
    assert found.distribution == "langgraph-checkpoint", found  # not "langgraph"
    with pytest.raises(LookupError):
        attribute("langgraph.store.base:no_such_function")
    with pytest.raises(LookupError):
        attribute(f"{Path(sys.executable).stem}_no_such_module:f")


def test_each_script_runs_in_exactly_one_venv() -> None:
    """A cause's script runs either in the project's venv or with ``--only-audit`` in its
    audit's own; never in both, never in neither."""
    from nomnesia.adapters.ecosystem import AUDITS
    from nomnesia.adapters.ecosystem.causes import CAUSES
    from nomnesia.adapters.ecosystem.repro import _selected

    shared = {c.key for c in _selected([])}
    own = {name: {c.key for c in _selected([], only_audit=name)}
           for name, audit in AUDITS.items() if audit.requires}
    with_script = {c.key for c in CAUSES if c.repro}
    assert all(shared.isdisjoint(keys) for keys in own.values())
    assert shared.union(*own.values()) == with_script
    assert all(own.values()), f"an audit with its own venv reproduces nothing: {own}"
