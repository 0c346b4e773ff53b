"""docs/examples/test_seed_scenario.py, run as a user runs it: once per fault kind, on the
seed's FragileMemoryStore (it must fail, naming the guarantee it broke) and on our
TieredMemoryStore on embedded engines (it must pass). CI's ``tests`` session runs this.

The first test fails if the example stops judging: with ``check`` finding nothing and
``eventually`` returning at its deadline instead of raising, the seed's store passes (its
G5 and G11 are never reported). The second fails if a fault is left on: a stall or pause
that never heals keeps the store from answering again (the example's G10 wait).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples"
KINDS_HERE = 5
"""lost-reply, refuse, stall, latency, pause: the kinds a single embedded engine takes; lag
and cut-primary skip (no replicated topology in the example), with the reason."""


def _run(store: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NOMNESIA_EXAMPLE_STORE": store, "NOMNESIA_BACKENDS": "embedded",
           "PYTEST_ADDOPTS": "-p no:cacheprovider -p no:langsmith_plugin"}
    return subprocess.run([sys.executable, "-m", "pytest", str(EXAMPLES), "-rfs", "-q",
                           "-p", "no:xdist", "--rootdir", str(EXAMPLES)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
                          check=False)


@pytest.mark.xdist_group("seed-example")
def test_the_example_fails_the_seeds_store_naming_the_guarantee() -> None:
    done = _run("fragile")
    out = done.stdout
    assert done.returncode == 1, out[-3000:]
    assert f"{KINDS_HERE} failed, 2 skipped" in out, out[-3000:]
    # each failure's section: "____ test_...[stall] ____" up to the next one
    sections = re.split(r"^_{3,} test_\w+\[([a-z-]+)\] _{3,}$", out, flags=re.MULTILINE)[1:]
    failures = dict(zip(sections[::2], sections[1::2], strict=True))
    assert len(failures) == KINDS_HERE, out[-3000:]
    for kind, text in failures.items():
        assert re.search(r"(broken: G\d+ [a-z ]+|G11 quiescent consistency did not hold)",
                         text), (kind, text[-2000:])


@pytest.mark.xdist_group("seed-example")
def test_the_example_passes_the_tiered_store_under_every_fault() -> None:
    done = _run("tiered")
    out = done.stdout
    assert done.returncode == 0, out[-3000:]
    assert f"{KINDS_HERE} passed, 2 skipped" in out, out[-3000:]
    assert "not a replicated topology" in out  # lag and cut-primary skip, saying why
