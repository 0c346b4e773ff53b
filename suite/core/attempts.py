"""Try every input of a test on its own, and report every one that breaks SPEC.md.

One violation never hides another (SPEC.md "What the suite may assume"): a store that
refuses one odd user id must still be caught leaking another.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from .history import short_repr
from .recorder import LoggedStore, StoreFactory, recorded
from .violations import GuaranteeViolation, guarantee_key, store_error, trying

__all__ = ["Attempts"]

S = TypeVar("S")
V = TypeVar("V")


class Attempts:
    """Try every input of a test on its own; report every one that breaks SPEC.md.

    One violation never hides another (SPEC.md): a store that refuses one odd
    user id must still be caught leaking another. Each ``with attempts(value):``
    block catches the violation (or store error) its input causes and moves
    on; ``check()`` then raises one failure that lists every failing input,
    each with its own operations, headed by the first in input order::

        attempts = Attempts("user id", len(users))
        for user in users:
            with attempts(user):
                await check_user(s, m, user)
        attempts.check()
    """

    def __init__(self, what: str, total: int | None = None, *,
                 name: Callable[[Any], str] | None = None, odd: bool = True) -> None:
        self.what = what
        self.total = total
        self.odd = odd
        """The inputs are odd but valid (hostile ids, NUL contents): any error a block
        raises is that input refused (Inputs), not a sick store (G12)."""
        self.name = name or (lambda value: short_repr(value, 60))
        """How an input reads in the report (default: a short repr)."""
        self.failures: list[tuple[str, GuaranteeViolation]] = []

    def label(self, value: object) -> str:
        return f"{self.what} {self.name(value)}"

    def failed(self, value: object) -> bool:
        """Whether ``value`` failed already (later phases leave it out)."""
        label = self.label(value)
        return any(known == label for known, _ in self.failures)

    def add(self, label: str, violation: GuaranteeViolation) -> None:
        self.failures.append((label, violation))

    @contextmanager
    def __call__(self, value: object, *, label: str | None = None) -> Iterator[None]:
        """Run the block for ``value``; a violation or store error is recorded, not raised.

        ``label`` replaces "<what> <value>" in the report, for a step that is
        about all inputs at once (its errors are no one input's refusal).
        """
        token = trying.set(self.what if self.odd and label is None else None)
        try:
            yield
        except GuaranteeViolation as exc:
            self.add(label or self.label(value), exc)
        except Exception as exc:
            violation = store_error(exc)
            if violation is None:
                raise
            self.add(label or self.label(value), violation)
        finally:
            trying.reset(token)

    def violation(self) -> GuaranteeViolation | None:
        """Every failure as one violation (None if none): the first heads, all are listed."""
        if not self.failures:
            return None
        parts = list(self.failures)
        first_label, first = parts[0]
        count = len(parts)
        among = f" among {self.total} {self.what}s" if self.total is not None else ""
        detail = f"{first_label}: {first.detail}"
        if count > 1:
            listed = ", ".join(f"{label.removeprefix(self.what + ' ')} "
                               f"({guarantee_key(exc.guarantee)})" for label, exc in parts)
            detail += (f"\n({count} failures{among}, "
                       f"each tried on its own and shown below with its own operations: "
                       f"{listed})")
        blocks = [first.evidence] if first.evidence else []
        for label, exc in parts[1:]:
            block = f"{exc.guarantee}: {label}: {exc.detail}"
            blocks.append(block + (f"\n\n{exc.evidence}" if exc.evidence else ""))
        return GuaranteeViolation(first.guarantee, detail, evidence="\n\n".join(blocks),
                                  op=first.op, parts=parts)

    async def each(self, factory: StoreFactory, values: Iterable[V],
                   setup: Callable[[LoggedStore], Awaitable[S]],
                   body: Callable[[LoggedStore, S, V], Awaitable[None]], *,
                   finish: Callable[[LoggedStore, S], Awaitable[None]] | None = None
                   ) -> None:
        """``body(s, state, value)`` for every value, on a store that ``setup`` prepared.

        After a failure the store may be poisoned (an accepted invalid value, a
        refused one that broke the connection), so the values after it get a
        fresh store, set up again: each failure is its input's own. ``finish``
        runs on the last store if its last value passed (a final full check).
        """
        todo = list(values)
        while todo:
            async with recorded(factory) as s:
                state = await setup(s)
                failed = False
                while todo and not failed:
                    value = todo.pop(0)
                    known = len(self.failures)
                    with self(value):
                        await body(s, state, value)
                    failed = len(self.failures) > known
                if finish is not None and not todo and not failed:
                    with self(None, label=f"every {self.what} in turn"):
                        await finish(s, state)

    def check(self) -> None:
        """Raise every failure so far (see ``violation``)."""
        __tracebackhide__ = True
        violation = self.violation()
        if violation is not None:
            raise violation


