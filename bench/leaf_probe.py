"""A pytest plugin that splits one conformance leaf into phases, for ``bench_leaf.py``.

Loaded with ``-p leaf_probe`` (``bench/`` on ``PYTHONPATH``) into the very command a
matrix leaf runs, it records, as wall seconds and CPU-seconds:

- ``start``: the interpreter, imports, plugins and collection, up to the first test;
- ``engines``: the adapter's engines started before the first test (a leaf starts them
  lazily inside its first test; starting them here, through the same engine session,
  moves that cost out of the first module without changing it);
- one phase per suite module (``test_contract``, ``test_concurrency``, ...);
- ``teardown``: the suite's own ``pytest_sessionfinish``, which stops the engines.

Each phase's CPU is split into the pytest process's own (the suite, the store and any
in-process engine: Qdrant local mode, the Milvus Lite client) and its descendants' (the
engine processes: PostgreSQL, Redis, the Milvus server), so the engines' own CPU
while the suite waits on them is a figure, not a guess (``_Descendants`` says how it
is read). The result goes to the JSON file named by ``NOMNESIA_LEAF_PROBE``.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import psutil
import pytest

from nomnesia.adapters import lookup
from nomnesia.adapters.engines.session import current_session

OUT_ENV = "NOMNESIA_LEAF_PROBE"


def _own_cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def _waited_children_cpu() -> float:
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return kids.ru_utime + kids.ru_stime


class _Descendants:
    """CPU-seconds of every process below this one, live or exited.

    An exited child of this process is in ``RUSAGE_CHILDREN`` once waited for; an exited
    grandchild (a PostgreSQL backend) is in its parent's ``children_*`` times, which the
    parent's reading below includes. So the sum is exact at any instant, without
    remembering the dead (which would count them twice once their parent reaped them).
    """

    def __init__(self) -> None:
        self._me = psutil.Process()

    def read(self) -> float:
        total = _waited_children_cpu()
        try:
            children = self._me.children(recursive=True)
        except psutil.Error:
            children = []
        for child in children:
            try:
                t = child.cpu_times()
            except psutil.Error:
                continue  # exited since the listing: its parent's reading has it (or will)
            total += t.user + t.system + t.children_user + t.children_system
        return total

    def live(self) -> int:
        try:
            return len(self._me.children(recursive=True))
        except psutil.Error:
            return 0


class LeafProbe:
    """Phase boundaries of one pytest session, with wall, own CPU and engine CPU."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.out = Path(os.environ[OUT_ENV])
        self.descendants = _Descendants()
        self.phases: list[dict[str, Any]] = []
        created = psutil.Process().create_time()
        # The interpreter's start, as this clock reads it: time.time() and create_time()
        # share the epoch; monotonic time does the arithmetic from here on.
        self._mark = (time.monotonic() - (time.time() - created), 0.0, 0.0)
        self._phase = "start"
        self._module: str | None = None

    def close_phase(self, next_phase: str) -> None:
        """End the current phase now and start ``next_phase``."""
        now = (time.monotonic(), _own_cpu(), self.descendants.read())
        wall, own, engines = (a - b for a, b in zip(now, self._mark, strict=True))
        self.phases.append({"phase": self._phase, "wall_s": round(wall, 3),
                            "own_cpu_s": round(own, 3), "engine_cpu_s": round(engines, 3)})
        self._mark, self._phase = now, next_phase

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, Any, None]:
        self.close_phase("engines")
        adapter = self.config.getoption("nomnesia_adapter", None)
        if adapter and session.items:
            kinds = lookup(adapter).engines
            if kinds:
                current_session().urls(*kinds)
        self.close_phase("(no test)")
        yield

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, Any, None]:
        module = item.nodeid.split("::")[0].rpartition("/")[2].removesuffix(".py")
        if module != self._module:
            if self._module is None:
                self._phase = module  # the empty "(no test)" phase becomes the first module
            else:
                self.close_phase(module)
            self._module = module
        yield

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Generator[None, Any, None]:
        self.close_phase("teardown")
        yield
        self.close_phase("")
        self.out.write_text(json.dumps({
            "phases": self.phases, "exitstatus": int(session.exitstatus),
            "tests": len(session.items), "descendants_left": self.descendants.live(),
        }, indent=2) + "\n", encoding="utf-8")


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get(OUT_ENV):
        config.pluginmanager.register(LeafProbe(config), "leaf_probe_instance")
