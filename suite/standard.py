"""The whole conformance suite as one class to subclass (the langchain standard-tests pattern).

Run it from the command line on any store::

    python -m pytest --pyargs nomnesia.suite --store mypkg.mod:factory

or subclass it in your own tests and override the one ``store`` fixture, which
returns a *factory*: a zero-argument callable returning an async context
manager that yields a fresh, empty store (every test opens its own)::

    import pytest
    from nomnesia.suite.standard import MemoryStoreSuite

    class TestMyStore(MemoryStoreSuite):
        @pytest.fixture
        def store(self):
            return lambda: MyStore(url=...)

To record a known gap, override the test and mark it (anything else fails
``test_no_overrides_DO_NOT_OVERRIDE``)::

        @pytest.mark.xfail(reason="search lags more than search_staleness")
        def test_search_finds_exact_content(self, store): ...

Writing suite tests (for the suite's own modules, ``suite/test_*.py``):

- subclass ``StoreTests`` (from ``nomnesia.suite.base``), which brings the
  ``store`` fixture and the override guard; give every test a name unique
  across the suite, since ``MemoryStoreSuite`` merges all classes;
- write ``@suite_test async def test_x(self, store) -> None`` and open the
  store inside with ``async with recorded(store) as s``: the test runs on a
  fresh event loop with an overall timeout, whatever the caller's asyncio
  setup, and every call on ``s`` lands in ``s.log``;
- fail with ``expect(cond, G7, "what broke", s.log)`` (``G1`` ... ``G12`` and
  ``INPUTS`` from ``nomnesia.suite.contract``; or raise ``GuaranteeViolation``)
  so that the message starts with the guarantee and shows the operations that
  led to it;
- declare what the test checks with ``@pytest.mark.guarantee(G1, G7, ...)``:
  the JSON report and the matrix attribute a test by that mark alone
  (docs/suite.md, "Writing suite tests");
- skip on a declared capability only: ``capabilities_of(store)`` /
  ``s.capabilities`` (for example ``failpoints``);
- docstrings carry a "Troubleshooting" section for the store author.
"""

from __future__ import annotations

import importlib.util

from .base import StoreTests
from .core.loop import suite_test
from .test_contract import TestContract
from .test_inputs import TestInputs, TestInvalidInputs
from .test_interruption import TestInterruption
from .test_limits import TestLimits
from .test_model import TestModel

__all__ = ["MemoryStoreSuite", "StoreTests", "suite_test"]

if importlib.util.find_spec(f"{__package__}.test_concurrency") is not None:
    from .test_concurrency import TestConcurrency

    class MemoryStoreSuite(
        TestContract, TestInputs, TestInvalidInputs, TestLimits, TestInterruption, TestModel,
        TestConcurrency):  # type: ignore[misc,unused-ignore]
        """Every test of the conformance suite; override ``store`` to run it on your store."""

else:  # pragma: no cover - only while the concurrency tests are being written

    class MemoryStoreSuite(  # type: ignore[no-redef]
            TestContract, TestInputs, TestInvalidInputs, TestLimits, TestInterruption,
            TestModel):
        """Every test of the conformance suite; override ``store`` to run it on your store."""
