"""``StoreTests``: the public base of every suite class, and of a project's own subclass.

Kept small on purpose (as langchain's standard-tests keeps its ``BaseStandardTests``): a
newcomer reads here what a suite class promises, and the machinery lives elsewhere
(``core/`` records and runs, ``glue.py`` finds the profile).
"""

from __future__ import annotations

import pytest

from .core.profiles import not_applicable
from .core.recorder import StoreFactory
from .core.violations import guarantee_keys
from .glue import ITEM_PROFILE, NEEDS, profile_for

__all__ = ["StoreTests"]


class StoreTests:
    """Base of every suite class: provides the ``store`` fixture and the override guard.

    ``store`` returns a *factory*, not a store: every test opens its own fresh
    store through it (``async with recorded(store) as s``). Override it in a
    subclass to test your store without command-line options::

        class TestMyStore(MemoryStoreSuite):
            @pytest.fixture
            def store(self):
                return MyStore          # zero-arg, async context manager
    """

    @pytest.fixture
    def store(self, nomnesia_store: StoreFactory) -> StoreFactory:
        return nomnesia_store

    @pytest.fixture(autouse=True)
    def _nomnesia_profile(self, request: pytest.FixtureRequest) -> None:
        """Not applicable, before anything runs, when the store's profile lacks a need.

        SPEC.md: a missing method is never a failure, and a guarantee that cannot
        be judged is never a pass: the skip's reason says what the profile lacks
        and which guarantees the test would have judged.
        """
        if "store" not in request.fixturenames:
            return
        resolved = profile_for(request, StoreTests)
        request.node.stash[ITEM_PROFILE] = resolved
        needs = [n for mark in request.node.iter_markers(NEEDS) for n in mark.args]
        lacking = resolved.lacking(needs)
        if lacking:
            would = [str(g) for mark in request.node.iter_markers("guarantee")
                     for g in mark.args]
            pytest.skip(not_applicable(resolved, lacking, guarantee_keys(would)))

    @pytest.mark.guarantee(none="that a subclass hid no suite test, not a store's behaviour")
    def test_no_overrides_DO_NOT_OVERRIDE(self) -> None:
        """Suite tests may be overridden only to mark them xfail, so a red test can't be hidden.

        Troubleshooting: if this fails, a subclass replaced a suite test with
        its own version. Delete the override, or decorate it with
        ``@pytest.mark.xfail(reason="why this store does not meet it")`` so the
        gap stays visible in every run.
        """
        hidden = []
        cls = type(self)
        for base in cls.__mro__:
            if not base.__module__.startswith("nomnesia.suite."):
                continue
            for name in vars(base):
                if not name.startswith("test_"):
                    continue
                owner = next(c for c in cls.__mro__ if name in vars(c))
                if owner.__module__.startswith("nomnesia.suite."):
                    continue
                current = vars(owner)[name]
                marks = getattr(current, "pytestmark", [])
                if not any(getattr(m, "name", None) == "xfail" for m in marks):
                    hidden.append(f"{name} (from {base.__qualname__})")
        if hidden:
            pytest.fail("suite tests overridden without @pytest.mark.xfail(reason=...): "
                        + ", ".join(sorted(set(hidden))), pytrace=False)
