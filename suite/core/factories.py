"""``MODULE:FACTORY``, as ``--store`` and the interface options take it, to the callable.

One reading for the plugin and the nemesis (which opens a user's store in its workers),
so both refuse a bad spec with the same sentence.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

__all__ = ["resolve_factory"]


def resolve_factory(spec: str, rootdir: Path | None = None, option: str = "--store"
                    ) -> Callable[..., Any]:
    """``MODULE:FACTORY`` to the callable; the working directory counts as importable."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise pytest.UsageError(f"{option} expects MODULE:FACTORY, got {spec!r}")
    here = str(rootdir or Path.cwd())
    if here not in sys.path:
        sys.path.insert(0, here)  # as `python -m` would: a module next to the caller counts
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise pytest.UsageError(f"{option} {spec}: cannot import {module_name!r}: {exc}"
                                ) from exc
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise pytest.UsageError(f"{option} {spec}: {module_name!r} has no {attr!r}"
                                    ) from None
    if not callable(target):
        raise pytest.UsageError(f"{option} {spec}: {attr!r} is not callable")
    return target  # type: ignore[no-any-return]
