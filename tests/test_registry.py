"""The adapter registry: stdlib-only rows that say what each stack is, opened by one function.

nox reads ``adapters/registry.py`` from an interpreter where nomnesia and its
dependencies may be missing, so it must import nothing else; a stack is a row
(log engine, index class, engines), and ``open_engine_stack`` opens any row.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nomnesia.adapters import ADAPTERS, AdapterSpec, MissingDependency, UnknownAdapter, lookup
from nomnesia.adapters.stacks import open_engine_stack
from nomnesia.adapters.tiered import TieredMemoryStore

REGISTRY = Path(__file__).resolve().parent.parent / "adapters" / "registry.py"

_BY_PATH = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("registry", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print(json.dumps({"rows": [[a.name, list(a.extras), list(a.engines)]
                           for a in module.ADAPTERS.values()],
                  "foreign": sorted(m for m in sys.modules if m.startswith("nomnesia"))}))
"""


def test_the_registry_loads_by_path_with_the_standard_library_alone() -> None:
    """-S: no site-packages, so any third-party or nomnesia import fails here."""
    out = subprocess.run([sys.executable, "-I", "-S", "-c", _BY_PATH, str(REGISTRY)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    loaded = json.loads(out.stdout)
    assert loaded["foreign"] == []
    assert loaded["rows"] == [[a.name, list(a.extras), list(a.engines)]
                              for a in ADAPTERS.values()]


def test_every_stack_row_names_an_index_class_of_the_shared_shape() -> None:
    import inspect

    stacks = [spec for spec in ADAPTERS.values() if spec.is_stack]
    assert {s.name for s in stacks} == set(ADAPTERS) - {"memory"}
    checked = []
    for spec in stacks:
        try:
            cls = spec.index_class()
        except MissingDependency:  # its client is not installed here, and it says so
            continue
        checked.append(spec.name)
        params = inspect.signature(cls).parameters
        assert next(iter(params)) not in ("namespace", "dim"), spec.name  # the target
        for keyword in ("namespace", "dim", "timeout", "reuse"):
            assert params[keyword].kind is inspect.Parameter.KEYWORD_ONLY, (spec.name, keyword)
        assert callable(getattr(cls, "create", None)), spec.name
    # Without any client library this test checked nothing: the dev install has them all.
    assert checked, "no stack's client library is installed: pip install -e '.[dev]'"


@pytest.mark.parametrize(("row", "message"), [
    ({"index": "m:C", "log": "redis", "index_engine": "x", "engines": ("postgres", "redis")},
     "engines =="),
    ({"index": "m:C", "engines": ("postgres",)}, "needs log and index_engine"),
    ({}, "needs a target or an index"),
])
def test_a_malformed_row_is_rejected_when_written(row: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AdapterSpec("bad", **row)


async def test_open_engine_stack_refuses_what_is_not_a_stack_before_starting_engines() -> None:
    with pytest.raises(ValueError, match="not an engine stack"):
        async with open_engine_stack("memory"):
            pass
    with pytest.raises(UnknownAdapter, match="did you mean 'pgvector'"):
        async with open_engine_stack("pgvectr"):
            pass
    assert lookup("redis") is ADAPTERS["redis"]


class _Marked(TieredMemoryStore):
    """A subclass, as the nemesis's positive control is one."""


async def test_store_cls_opens_the_same_stack_as_that_class(engines: Any) -> None:
    async with open_engine_stack("pgvector", store_cls=_Marked, provider=engines) as store:
        assert type(store) is _Marked
        entry = await store.append_message("ann", "user", "fact")
        assert [h.id for h in await store.search("ann", "fact", 1)] == [entry.id]
        assert store.index.name == "pgvector" and store.log.name == "redis"
