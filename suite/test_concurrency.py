"""Concurrency: seeded random workloads, recorded as histories and judged by the checker.

Each test runs several rounds; a round is a fresh store, a few hundred calls
by concurrent clients over several users, then a quiescent phase (recover
twice, full reads, searches, ``consistent_state``). The checker
(``nomnesia.suite.core.checker``) then looks for any history no legal execution
of SPEC.md could produce; a failure shows the smallest part of the history
that proves it, and the seed to replay it.

How many calls: a bug that hits one call in 25 of a kind that makes up a
share ``f`` of the workload, and shows in the history with probability
``d`` when it hits, escapes ``N`` calls with probability ``(1 - f*d/25)**N``.
For the commonest kinds (appends and reads, ``f >= 0.28``, ``d ~ 0.9``)
2,000 calls leave ``e**-20``; measured on deliberately broken stores
(tests/test_workload.py), one round of 100 calls already catches them with
probability 0.58 to 0.88, so 2,000 calls miss with probability below 1e-7.
``NOMNESIA_ROUNDS`` scales the rounds for slow or fast stores.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from .base import StoreTests
from .contract import G1, G2, G3, G4, G5, G6, G7, G8, G9, G11, G12
from .core.loop import suite_test
from .core.recorder import StoreFactory
from .core.settings import settings
from .core.violations import GuaranteeViolation
from .core.workload import Mix, Outcome, Workload, resolve_rounds, resolve_seed, run_rounds

__all__ = ["TestConcurrency"]

_CHECKER_ALL = (G1, G2, G3, G4, G5, G6, G7, G8, G9, G11, G12)
"""What the checker judges in a history with every kind of call (appends with retries,
conflicts and twins, reads, searches, compactions, forgets) over several users, plus
``consistent_state`` at quiescence (G11), and G12: no fault is injected, so a call that
raises (other than a refusal) is a failure (``workload.healthy_errors``)."""
_TIMEOUT = 600.0  # a slow stack at ~1k ops/s needs seconds per round; this is the hang bound
_Body = Callable[..., Coroutine[Any, Any, None]]
_concurrent: Callable[[_Body], Callable[..., None]] = suite_test(timeout=_TIMEOUT)


async def _judge(store: StoreFactory, rounds: int, **workload: Any) -> list[Outcome]:
    seed = resolve_seed(settings.seed)
    outcomes = await run_rounds(store, Workload(seed=seed, **workload), resolve_rounds(rounds))
    last = outcomes[-1]
    if not last and last.guarantee is not None:
        # The message shows --nomnesia-anomalies of them; the report keeps them all.
        raise GuaranteeViolation(last.guarantee, last.detail(settings.anomalies) + _saved(last),
                                 anomalies=last.anomalies, history=last.history)
    return outcomes


def _saved(outcome: Outcome) -> str:
    """With ``NOMNESIA_HISTORY_DIR`` set, keep the whole failing history there as JSON."""
    folder = os.environ.get("NOMNESIA_HISTORY_DIR", "").strip()
    if not folder:
        return ""
    # The test's name too: every test of a session shares the seed, and would overwrite.
    test = os.environ.get("PYTEST_CURRENT_TEST", "").split("::")[-1].split(" ")[0]
    test = re.sub(r"[^A-Za-z0-9_.-]+", "_", test) or "test"
    path = Path(folder) / (f"history-{test}-{outcome.workload.seed}-{outcome.round}-"
                           f"{os.getpid()}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(outcome.history.dumps(), encoding="utf-8")
    return f"\nwhole history: {path} (nomnesia.suite.core.history.History.loads)"


class TestConcurrency(StoreTests):
    """Concurrent clients on one store: G1-G9 from the history, G11 at quiescence."""

    @pytest.mark.guarantee(*_CHECKER_ALL)
    @_concurrent
    async def test_concurrent_mixed_workload(self, store: StoreFactory) -> None:
        """Appends, retries, reads, searches, compactions and forgets over five users at once.

        Troubleshooting: the message names the broken guarantee and shows the
        few calls that prove it, one per line (index, client, invoke/ok/fail/
        info, call, user, arguments or result; entries as ``id@seq``, summaries
        with their covers in braces). Replay it with the printed seed. Typical
        causes: a seq read before an await (G5), a compaction that deletes
        before it writes the summary (G7), a cache not invalidated (G1/G3),
        a retry that appends again (G6), a key-prefix or pattern filter (G9).
        """
        await _judge(store, 4, ops=500)

    @pytest.mark.needs("compact")
    @pytest.mark.guarantee(G1, G2, G3, G4, G5, G6, G7, G9, G11, G12)  # no forget: no G8
    @_concurrent
    async def test_concurrent_compactions(self, store: StoreFactory) -> None:
        """Compactions racing appends, reads and each other on two users.

        Troubleshooting: readers must see the whole old view or the whole new
        one, never a summary beside what it covers nor a hole; an append that
        races a compaction ends up live or covered, once (G7).
        """
        mix = Mix(append=0.4, read=0.3, search=0.05, compact=0.25, forget=0.0)
        await _judge(store, 2, ops=400, users=("ann", "anna"), mix=mix)

    @pytest.mark.needs("forget")
    @pytest.mark.guarantee(*_CHECKER_ALL)
    @_concurrent
    async def test_concurrent_forget(self, store: StoreFactory) -> None:
        """Forgets racing appends, reads, searches and compactions.

        Troubleshooting: after ``forget`` returns, nothing written before it
        started may come back from any method, search included (G8); entries
        appended concurrently may survive.
        """
        mix = Mix(append=0.45, read=0.25, search=0.12, compact=0.08, forget=0.1)
        await _judge(store, 2, ops=400, users=("ann", "anna", "Ann"), mix=mix)

    @pytest.mark.guarantee(*_CHECKER_ALL)
    @_concurrent
    async def test_concurrent_users_stay_apart(self, store: StoreFactory) -> None:
        """Users whose ids are prefixes, case variants and patterns of each other, searched a lot.

        Troubleshooting: a filter by key prefix, glob, LIKE or unescaped query
        syntax returns another user's entries (G9); shared message ids across
        users must stay separate entries.
        """
        mix = Mix(append=0.4, read=0.2, search=0.3, compact=0.08, forget=0.02, twin=0.5)
        users = ("ann", "anna", "Ann", "ann*", "a%", "a_n", "ann:1", "{ann}", "ann\\")
        await _judge(store, 2, ops=400, users=users, mix=mix)
