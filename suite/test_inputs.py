"""Adversarial inputs (placeholder while being written)."""

from __future__ import annotations

from ._run import StoreTests


class TestInputs(StoreTests):
    """Inputs: adversarial ids and contents round-trip; invalid values change nothing."""
