"""Failures that name their guarantee, and reading a store's stray exception as one.

``GuaranteeViolation`` / ``expect``: failures whose message starts with the guarantee
(``G6 idempotent appends: ...``) and ends with the operations that led there, oldest
first. ``store_error`` reads an exception a store call raised as the violation it is
(valid input refused: Inputs; anything else on a healthy store: G12). The histories a
running test records register here (``watch``), so both a timeout and ``store_error``
can find the call that was in flight or raised.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from nomnesia.suite.contract import Guarantee

from .history import History, Op, call_text, method

__all__ = [
    "GuaranteeViolation",
    "UsageMistake",
    "active_logs",
    "expect",
    "guarantee_key",
    "guarantee_keys",
    "reframed",
    "replay_hint",
    "store_error",
    "trying",
    "watch",
]


class UsageMistake(Exception):
    """A mistake in how the suite was pointed at a store, never a finding about the store.

    ``nomnesia.suite.interfaces.InterfaceMismatch`` (the wrong option for the object) is
    one: the store was never asked anything, so ``store_error`` lets it through as itself
    and the workload stops on it rather than count it against the store.
    """

    needs: str | None = None
    """Set where the mistake stops one test, not the run: what that test needs that the
    store cannot give (ADK's memory, whose search returns at most ten memories, cannot be
    read whole past ten). The test is then not applicable, never a failure (``suite_test``)."""


# The histories recorded while a test body runs, so that a timeout can show what was in flight.
active_logs: contextvars.ContextVar[list[History] | None] = contextvars.ContextVar(
    "nomnesia_active_logs", default=None)
# The kind of valid input an ``Attempts`` block is trying ("user id", "content" ...), so that
# an error it raises reads as that input refused rather than as a sick store (G12).
trying: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "nomnesia_trying", default=None)


# --------------------------------------------------------------------------- reporting


def watch(log: History) -> None:
    """Register ``log`` with the running test, whose timeout names what is in flight in it."""
    active = active_logs.get()
    if active is not None and not any(known is log for known in active):
        active.append(log)


class GuaranteeViolation(AssertionError):
    """A broken guarantee. ``str`` starts with it, e.g. ``G7 atomic compaction: ...``.

    ``op`` is the kind of the last store call before the check failed (the
    call whose answer was wrong, as far as the suite can tell), ``parts`` the
    separate failures of a test that tried many inputs (``Attempts``), each as
    (input label, violation), and ``anomalies`` every ``checker.Anomaly`` of a
    concurrency failure (however many the message shows); reports group
    failures by cause from them. ``history`` is the history the failure was
    found in (a concurrency round's, else ``log``): the HTML report draws it.
    ``within`` is the failure this one reframes (a G10 failure whose symptom, after the
    interruption, was a G5 violation): the summary by cause files the two as one defect
    when the same symptom also fails a test of its own.
    """

    def __init__(self, guarantee: Guarantee, detail: str, log: History | None = None, *,
                 user: object = None, evidence: str = "", op: str | None = None,
                 parts: Sequence[tuple[str, GuaranteeViolation]] = (),
                 anomalies: Sequence[Any] = (), history: History | None = None,
                 within: GuaranteeViolation | None = None) -> None:
        self.guarantee = guarantee
        self.within = within
        self.detail = detail
        if log is not None:
            evidence = f"operations, oldest first:\n{log.format(user=user)}"
            if op is None:
                last = log.last_call(user)
                op = method(last) if last is not None else None
        self.evidence = evidence
        self.op = op
        self.parts = list(parts)
        self.anomalies = list(anomalies)
        self.history = history if history is not None else log
        super().__init__(f"{guarantee}: {detail}" + (f"\n\n{evidence}" if evidence else ""))

    def again(self, detail: str, guarantee: Guarantee | None = None) -> GuaranteeViolation:
        """The same failure (evidence, op, parts) under another detail or guarantee.

        Under another guarantee, the new failure remembers this one as ``within``.
        """
        moved = guarantee is not None and guarantee is not self.guarantee
        return GuaranteeViolation(guarantee or self.guarantee, detail, evidence=self.evidence,
                                  op=self.op, parts=self.parts, anomalies=self.anomalies,
                                  history=self.history, within=self if moved else self.within)


def expect(condition: object, guarantee: Guarantee, detail: str | Callable[[], str],
           log: History | None = None, *, user: object = None) -> None:
    """Raise ``GuaranteeViolation`` unless ``condition``; ``detail`` may be lazy.

    ``user`` narrows the printed log to that user's calls: the smallest story
    that shows the violation (leave it out when other users matter, as for G9).
    """
    __tracebackhide__ = True
    if not condition:
        raise GuaranteeViolation(guarantee, detail() if callable(detail) else detail, log,
                                 user=user)


def store_error(exc: BaseException, logs: Sequence[History] | None = None
                ) -> GuaranteeViolation | None:
    """A store call's unexpected exception as a violation (None if no store call raised it).

    Tests catch the errors they expect (invalid input, conflicting retries);
    anything else a store raises on a valid call of a healthy store fails the
    run. ``ValueError``/``TypeError`` refuse valid input (Inputs), and so does
    any error while an ``Attempts`` block tries an odd but valid input (a
    backend that cannot store NUL raises its own error type); a refused
    append of valid content also loses what was appended (G1). Anything else
    is an error the store should not have had (G12).
    """
    if isinstance(exc, UsageMistake):
        return None  # the wrong option for the object: a usage error, never the store's
    for log in logs if logs is not None else (active_logs.get() or []):
        op = log.raiser(exc)
        if op is not None:
            return _refusal(exc, op, log)
    return None


def _refusal(exc: BaseException, op: Op, log: History) -> GuaranteeViolation:
    what = trying.get()
    raised = f"{call_text(op)} raised {type(exc).__name__}: {exc}"
    kind = method(op)
    if isinstance(exc, (ValueError, TypeError)) or what is not None:
        detail = f"valid input refused: {raised}"
        if kind == "append_message" and what in (None, "content"):
            detail += (f"\n{Guarantee.DURABILITY}: the append of valid content was not "
                       "accepted")
        return GuaranteeViolation(Guarantee.INPUTS, detail, log, user=op.user_id, op=kind)
    return GuaranteeViolation(
        Guarantee.ERRORS, f"{raised} (a valid call on a healthy store must not fail)",
        log, user=op.user_id, op=kind)

def guarantee_key(guarantee: Guarantee) -> str:
    return f"G{guarantee.number}" if guarantee.number else "Inputs"


def guarantee_keys(names: Iterable[str]) -> list[str]:
    """``["G4 search", "Inputs"]`` -> ``["G4", "Inputs"]``, each once."""
    return list(dict.fromkeys(n.split()[0] for n in names))


@contextmanager
def replay_hint(seed: int) -> Iterator[None]:
    """Add "replay with --nomnesia-seed N" to any violation raised inside the block."""
    try:
        yield
    except GuaranteeViolation as exc:
        hint = f"(seed {seed}: replay with --nomnesia-seed {seed})"
        raise exc.again(f"{exc.detail} {hint}") from exc


@contextmanager
def reframed(guarantee: Guarantee, context: str) -> Iterator[None]:
    """Report any violation inside the block as part of ``guarantee``, after ``context``.

    An interruption test that finds a lost entry broke G10 first, G1 second:
    the message reads ``G10 interruption: after <context>: G1 durability: ...``.
    """
    try:
        yield
    except GuaranteeViolation as exc:
        if exc.guarantee is guarantee:
            raise
        raise exc.again(f"after {context}: {exc.guarantee}: {exc.detail}", guarantee) from exc
    except Exception as exc:
        violation = store_error(exc)
        if violation is None:
            raise
        raise violation.again(f"after {context}: {violation.detail}", guarantee) from exc


