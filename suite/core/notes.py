"""Checks that did not run, said at the end of the run, never counted as passes.

A fault round whose faults hit nothing (the store made no call through that engine
while they held) judged nothing, yet its test may pass on the other engines. Such a
round is noted here by the test that ran it; the plugin moves the notes onto the test's
report (``user_properties``, which xdist forwards to the controller) and prints them in
the run's summary, by name. A process runs one test at a time, so one list suffices.
"""

from __future__ import annotations

__all__ = ["NOT_EXERCISED", "not_exercised", "take"]

NOT_EXERCISED = "nomnesia_not_exercised"
"""``user_properties`` key: what a test could not exercise, one sentence each."""

_PENDING: list[str] = []


def not_exercised(text: str) -> None:
    """Note that part of the running test judged nothing, and why (one sentence)."""
    _PENDING.append(text)


def take() -> list[str]:
    """The running test's notes, cleared for the next test."""
    taken = list(_PENDING)
    _PENDING.clear()
    return taken
