"""G10 interruption (placeholder while being written)."""

from __future__ import annotations

from ._run import StoreTests


class TestInterruption(StoreTests):
    """G10: cancelled and failed operations take full effect or none."""
