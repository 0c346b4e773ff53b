"""The suite's forget test looks inside the engines it handed the store (``suite/forget_scan.py``):
a store whose forget leaves rows behind fails G8 with the table and the row named, and our
store, which forgets from every tier, passes with the scan done. Stores on the suite's
engines, as a team would write them (``fault_stores.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ("pytester",)
ROOT = Path(__file__).resolve().parent.parent
STORES = "tests.fault_stores"


def _forget(pytester: pytest.Pytester, suite_args: tuple[str, ...],
            *args: str) -> tuple[int, list[str]]:
    pytester.syspathinsert(str(ROOT))
    reprec = pytester.inline_run(*suite_args, *args, "-k", "test_forget_removes_everything")
    passed, _, failed = reprec.listoutcomes()
    return len(passed), [r.longreprtext for r in failed]


def test_a_forget_that_leaves_its_postgresql_rows_fails_g8_naming_the_row(
        pytester: pytest.Pytester, suite_args: tuple[str, ...]) -> None:
    _, failures = _forget(pytester, suite_args, "--store", f"{STORES}:half_forget",
                          "--nomnesia-profile", "history", "--nomnesia-op-timeout", "1")
    assert len(failures) == 1, failures
    text = failures[0]
    assert text.startswith("G8 forget: forget("), text[:300]
    assert "places in the engines the suite handed the store still hold the user" in text
    assert "table public.nmfs_nm" in text and " row (0," in text, text[:800]


def test_a_store_that_forgets_from_every_tier_passes_with_its_engines_scanned(
        pytester: pytest.Pytester, suite_args: tuple[str, ...]) -> None:
    assert _forget(pytester, suite_args, "--adapter", "pgvector") == (1, [])


def test_a_teams_own_test_holds_its_store_to_g8_with_the_fixture(
        pytester: pytest.Pytester) -> None:
    """``nomnesia_scan_forget`` in a test of a team's own: it sees what is planted in an engine
    the session handed out, and says so when nothing was left."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_own="""
        import redis

        def test_forget(nomnesia_engines, nomnesia_scan_forget):
            client = redis.Redis.from_url(nomnesia_engines.url("redis"))
            try:
                client.set("team:ann-4711:note", "ann's secret")
                found = nomnesia_scan_forget(user_ids=["ann-4711"], contents=["ann's secret"])
                assert not found.clean and any("team:ann-4711:note" in str(r)
                                               for r in found.residues), found.residues
                client.delete("team:ann-4711:note")
                assert nomnesia_scan_forget(user_ids=["ann-4711"]).clean
            finally:
                client.close()
    """)
    reprec = pytester.inline_run("-p", "no:cacheprovider")
    reprec.assertoutcome(passed=1)
