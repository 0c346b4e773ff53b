"""Data survives a reopen (``suite/test_reopen.py``): the test can fail, and knows when it cannot
judge. Stores on the suite's Redis, as a team would write them (``fault_stores.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ("pytester",)
ROOT = Path(__file__).resolve().parent.parent
STORES = "tests.fault_stores"


def _run(pytester: pytest.Pytester, suite_args: tuple[str, ...],
         store: str) -> tuple[int, list[str], list[str]]:
    pytester.syspathinsert(str(ROOT))
    reprec = pytester.inline_run(*suite_args, "--store", store, "-k",
                                 "test_what_one_store_acknowledged_the_next_one_reads")
    passed, skipped, failed = reprec.listoutcomes()
    reasons = [str(r.longrepr[2]).removeprefix("Skipped: ") for r in skipped
               if isinstance(r.longrepr, tuple)]
    return len(passed), reasons, [r.longreprtext for r in failed]


def test_a_store_whose_keys_carry_its_object_id_loses_what_it_wrote_on_reopen(
        pytester: pytest.Pytester, suite_args: tuple[str, ...]) -> None:
    _, _, failures = _run(pytester, suite_args, f"{STORES}:tagged")
    assert len(failures) == 1, failures
    assert failures[0].startswith("G1 durability: 3 of 3 appends acknowledged by one store "
                                  "object were gone when the factory opened a second one"), \
        failures[0][:400]


def test_the_same_store_keyed_by_its_namespace_alone_passes(
        pytester: pytest.Pytester, suite_args: tuple[str, ...]) -> None:
    assert _run(pytester, suite_args, f"{STORES}:not_retrying") == (1, [], [])


@pytest.mark.parametrize("store", [f"{STORES}:ephemeral", "nomnesia.adapters.memory:InMemoryStore"])
def test_a_factory_that_never_asks_for_the_namespace_is_not_applicable(
        pytester: pytest.Pytester, suite_args: tuple[str, ...], store: str) -> None:
    passed, reasons, failures = _run(pytester, suite_args, store)
    assert (passed, failures) == (0, [])
    assert len(reasons) == 1 and "never asked for nomnesia.suite.engines.store_namespace()" \
        in reasons[0], reasons
