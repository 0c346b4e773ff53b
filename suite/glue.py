"""The suite's pytest glue: the store's profile, found once and kept on the run and each item.

The plugin finds the run's profile (``SESSION_PROFILE``); ``StoreTests`` (``base.py``) reads
it for every test, probing a subclass that brings its own ``store`` fixture on its own; the
JSON report credits a test only with what its profile judges (``ITEM_PROFILE``).
"""

from __future__ import annotations

import pytest

from .core.loop import run_async
from .core.profiles import (
    ITEM_PROFILE,
    SESSION_PROFILE,
    ProfileError,
    Resolved,
    not_applicable,
    resolve,
)
from .core.recorder import LoggedStore, StoreFactory, opened
from .core.settings import settings

__all__ = ["ITEM_PROFILE", "NEEDS", "SESSION_PROFILE", "probe", "profile_for", "require"]


_PROBED = pytest.StashKey["dict[object, Resolved]"]()
NEEDS = "needs"
"""``@pytest.mark.needs("search", ...)``: the features (``profiles.FEATURES``) a test needs."""


async def _probe(factory: StoreFactory) -> Resolved:
    async with opened(factory, raw=True) as store:
        return resolve(store, settings.profile)


def probe(factory: StoreFactory) -> Resolved:
    """Open one store from ``factory`` and read its profile (``ProfileError`` if it has none)."""
    return run_async(_probe(factory), what="opening a store to read its profile")


def profile_for(request: pytest.FixtureRequest, base: type) -> Resolved:
    """The profile ``request``'s test runs under; ``base`` is the class whose ``store``
    fixture is the run's own (a subclass that overrides it is probed on its own)."""
    config = request.config
    session = config.stash.get(SESSION_PROFILE, None)
    # Accessed through a class, a fixture function is a new object each time: find the
    # class that defines it.
    owner = next((c for c in getattr(request.cls, "__mro__", ()) if "store" in vars(c)), None)
    overridden = owner is not None and owner is not base
    if session is not None and not overridden:
        return session
    factory = request.getfixturevalue("store")
    cache = config.stash.setdefault(_PROBED, {})
    key = request.cls if overridden else factory  # one kind of store per overriding class
    found = cache.get(key)
    if found is None:
        try:
            found = cache[key] = probe(factory)
        except ProfileError as exc:
            pytest.fail(f"nomnesia: {exc}", pytrace=False)
    return found



def require(s: LoggedStore, *features: str) -> None:
    """Inside a test body: not applicable unless the profile has every feature.

    For needs that depend on a parameter (the interrupted operation); fixed
    needs are declared with ``@pytest.mark.needs`` and never reach the body.
    """
    lacking = s.resolved.lacking(features)
    if lacking:
        pytest.skip(not_applicable(s.resolved, lacking))

