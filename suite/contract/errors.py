"""Errors a memory store raises, shared by every store so callers catch one family.

Input errors are plain ``ValueError``/``TypeError`` as SPEC.md demands; these
types are for what goes wrong behind the store (guarantee 12): a backend that is
down, too slow, or that disagrees with the others.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["BackendTimeout", "BackendUnavailable", "MemoryStoreError", "StoreClosed",
           "add_explainer", "remove_explainer"]

Explainer = Callable[[], "list[str]"]
"""Returns what is known to be wrong behind the stores right now, e.g. that an
embedded engine died and why; empty when nothing is."""

_explainers: list[Explainer] = []
_explainers_lock = threading.Lock()


def add_explainer(explain: Explainer) -> None:
    """Have every later :class:`BackendUnavailable` carry what ``explain()`` reports.

    A store sees only "connection refused"; whoever started the engine knows that
    it exited with SIGILL and what its log said. Engine providers register here
    so that the error a test or an operator reads names the cause, not a symptom.
    """
    with _explainers_lock:
        _explainers.append(explain)


def remove_explainer(explain: Explainer) -> None:
    with _explainers_lock:
        if explain in _explainers:
            _explainers.remove(explain)


def _explanations() -> list[str]:
    with _explainers_lock:
        current = list(_explainers)
    notes: list[str] = []
    for explain in current:
        try:
            notes.extend(explain())
        except Exception:  # an explainer must never turn an error into another one
            continue
    return notes


class MemoryStoreError(Exception):
    """Base of every error a nomnesia store raises on purpose (not input errors)."""


class BackendUnavailable(MemoryStoreError):
    """A backend is down, refused, or did not answer within the store's timeout.

    The message always names the backend (guarantee 12), so an operator reading
    a log line knows which engine to look at.
    """

    def __init__(self, backend: str, detail: str = "", *, install_hint: str | None = None) -> None:
        self.backend = backend
        self.detail = detail
        self.install_hint = install_hint
        message = f"backend {backend!r} unavailable"
        if detail:
            message += f": {detail}"
        if install_hint:
            message += f" (install it with: {install_hint})"
        self.explanations = _explanations()
        """What the engine providers know about it (an engine that died, and how)."""
        for note in self.explanations:
            message += f"\n  meanwhile: {note}"
        super().__init__(message)


class BackendTimeout(BackendUnavailable):
    """A backend did not answer within the store's timeout."""

    def __init__(self, backend: str, timeout: float, detail: str = "") -> None:
        self.timeout = timeout
        suffix = f" ({detail})" if detail else ""
        super().__init__(backend, f"no answer within {timeout:g}s{suffix}")


class StoreClosed(MemoryStoreError):
    """The store was used after ``aclose``."""
