"""Errors a memory store raises, shared by every store so callers catch one family.

Input errors are plain ``ValueError``/``TypeError`` as SPEC.md demands; these
types are for what goes wrong behind the store (guarantee 12): a backend that is
down, too slow, or that disagrees with the others.
"""

from __future__ import annotations


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
        super().__init__(message)


class BackendTimeout(BackendUnavailable):
    """A backend did not answer within the store's timeout."""

    def __init__(self, backend: str, timeout: float, detail: str = "") -> None:
        self.timeout = timeout
        suffix = f" ({detail})" if detail else ""
        super().__init__(backend, f"no answer within {timeout:g}s{suffix}")


class StoreClosed(MemoryStoreError):
    """The store was used after ``aclose``."""


class UnknownAdapter(MemoryStoreError, LookupError):
    """No built-in store is registered under that name."""
