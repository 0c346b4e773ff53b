"""Redis's loss window stays caught: a partition plus a Sentinel failover loses acknowledged
appends under the default settings (bench/bench_loss_window.py measures all settings)."""

from __future__ import annotations

import secrets
import sys
from pathlib import Path

import pytest

from nomnesia.adapters.engines import EmbeddedProvider

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from bench_loss_window import measure

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("loss-window")]


def test_a_partitioned_primary_loses_what_it_acknowledged_alone() -> None:
    with EmbeddedProvider() as provider:
        window = measure(provider, "redis-sentinel", "default", f"loss:{secrets.token_hex(4)}")
    assert window.before_cut > 0 and window.acknowledged > window.before_cut, window
    assert window.lost, f"no acknowledged append was lost: {window}"
