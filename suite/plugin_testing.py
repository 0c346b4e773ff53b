"""The fixtures of ``nomnesia.testing``, registered by the plugin: faults for ``parametrize``.

``nomnesia_fault`` is parametrized over every fault kind (``nomnesia.testing.FAULT_KINDS``),
so one test runs once per kind: the seed's "dozens of failure combinations in one go"::

    def test_compaction_under_faults(nomnesia_fault):
        ...open the store (engine_url) ...
        with nomnesia_fault("redis"):      # lost-reply, refuse, stall, latency, pause, ...
            ...

A kind that cannot hit that engine here (a wire fault on an in-process engine, ``lag`` on
a single server) skips the test with the reason; it is not a failure of the store. Both
fixtures arm the fault proxy for the test (``nomnesia_faultable``), so every engine URL the
test asks for comes through it; after the test the plugin heals whatever is left.

Its own module, like ``plugin_options``: every pytest run loads the plugin, so the fault
machinery (``nomnesia.adapters.engines``, ~75 ms) is imported only when a test asks for
one of these fixtures.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

__all__ = ["FAULT_KINDS", "nomnesia_fault", "nomnesia_faultable", "stop_recording"]

FAULT_KINDS: tuple[str, ...] = ("lost-reply", "refuse", "stall", "latency", "pause", "lag",
                                "cut-primary")
"""``nomnesia.testing.FAULT_KINDS``, spelled here so that loading the plugin imports no
engine code (tests/test_testing.py holds the two equal)."""


class FaultKind:
    """One kind of fault, for a test to hold on the engines it chooses: ``with
    nomnesia_fault("redis"):`` or ``async with``; ``kind`` says which it is."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __repr__(self) -> str:
        return f"<nomnesia fault {self.kind}>"

    def __call__(self, engine: str, *, ms: float | None = None) -> Any:
        from nomnesia.testing import Fault, FaultUnavailable  # function-level: see the module

        made = Fault(self.kind, engine, ms=ms)
        return _SkipUnavailable(made, FaultUnavailable)


class _SkipUnavailable:
    """A ``Fault`` whose start skips the test when the kind cannot hit that engine here."""

    def __init__(self, fault: Any, unavailable: type[Exception]) -> None:
        self.fault = fault
        self.unavailable = unavailable

    def __enter__(self) -> Any:
        try:
            return self.fault.__enter__()
        except self.unavailable as exc:
            pytest.skip(str(exc))

    def __exit__(self, *exc: Any) -> None:
        self.fault.__exit__(*exc)

    async def __aenter__(self) -> Any:
        try:
            return await self.fault.__aenter__()
        except self.unavailable as exc:
            pytest.skip(str(exc))

    async def __aexit__(self, *exc: Any) -> None:
        await self.fault.__aexit__(*exc)


@pytest.fixture
def nomnesia_faultable(nomnesia_engines: Any) -> Iterator[Any]:
    """Arm the fault proxy for this test: every ``engine_url``/``fault_url`` the test asks
    for comes back behind it (so ``nomnesia.testing``'s wire faults can reach it). Yields
    the fault scope (``scope.engines``: the engines proxied so far)."""
    with nomnesia_engines.faulted() as scope:
        yield scope


@pytest.fixture(params=FAULT_KINDS)
def nomnesia_fault(request: pytest.FixtureRequest, nomnesia_faultable: Any) -> FaultKind:
    """One fault kind per test run, over every kind; call it with an engine name."""
    return FaultKind(str(request.param))


def stop_recording() -> None:
    """After each test: no history of it hears of later faults (``nomnesia.testing``'s
    registry of histories being recorded, if a test loaded it)."""
    recording = sys.modules.get("nomnesia.testing.recording")
    if recording is not None:
        recording.stop_all()
