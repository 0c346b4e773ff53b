"""Sequential model-based tests: Hypothesis chooses the calls, the suite's model judges each answer.

The hand-written sequential tests (``test_contract``) try the call sequences
their authors thought of. Here Hypothesis's stateful testing
(``hypothesis.stateful.RuleBasedStateMachine``) generates sequences of
``append_message`` (fresh, with a ``message_id``, exact retries and
conflicting ones), ``compact``, ``forget``, ``get_history``, ``search``,
``recover`` and invalid calls, over a few users that are adversarial ids from
``nomnesia.suite.core.inputs`` and contents that include NUL, empty and 65,536 code
points. After every call the store is checked against the suite's own model
(``_checks.Model`` and ``check_user``, the same judge the other sequential
tests use) plus what that call must have done to the previous state (a
compaction covers exactly the prefix, a retry changes nothing, a rejected call
writes nothing ...).

On a failure Hypothesis shrinks the sequence to the smallest one it can find
and replays it; the message names the broken guarantee and lists that
sequence, numbered, with what each call returned. The generation is seeded
from the run's seed, so ``--nomnesia-seed N`` replays the same sequences (and
the same shrunk one) on a store that answers the same calls the same way.

Every call runs on one event loop that the test owns (the state machine is
synchronous, stores are async), each example with fresh ids, on the store the
previous example passed on (a fresh one from the factory after any failure, so
shrinking and the reported sequence run on fresh stores). The budget is
``--nomnesia-model-examples`` sequences of at most ``--nomnesia-model-steps``
calls; no example database is written.
"""

from __future__ import annotations

import pytest

from .base import StoreTests
from .contract import G1, G2, G3, G4, G5, G6, G7, G8, G9, G10, G11, G12, INPUTS
from .core.model import DEFAULT_EXAMPLES as DEFAULT_EXAMPLES
from .core.model import DEFAULT_STEPS as DEFAULT_STEPS
from .core.model import ModelViolation as ModelViolation
from .core.model import StoreMachine as StoreMachine
from .core.model import run_model as run_model
from .core.recorder import StoreFactory
from .core.settings import settings

__all__ = ["DEFAULT_EXAMPLES", "DEFAULT_STEPS", "ModelViolation", "StoreMachine", "TestModel",
           "run_model"]


class TestModel(StoreTests):
    """Random call sequences, shrunk to the smallest that breaks a guarantee."""

    @pytest.mark.needs("entries", "rejects")  # the model is the full contract, every call of it
    @pytest.mark.guarantee(G1, G2, G3, G4, G5, G6, G7, G8, G9, G10, G11, G12, INPUTS)
    def test_model_based_call_sequences(self, store: StoreFactory,
                                        request: pytest.FixtureRequest) -> None:
        """G1-G9, G11 and Inputs over call sequences that Hypothesis generates and shrinks.

        Troubleshooting: the message lists the smallest failing sequence, each call
        with what it returned, and the seed; ``--nomnesia-seed N`` replays it. Read
        it as a regression test to write: the failing check is the last call's,
        after the earlier calls built up the state it needs. Raise the budget with
        ``--nomnesia-model-examples`` / ``--nomnesia-model-steps`` to search harder.
        """
        __tracebackhide__ = True
        config = request.config
        examples = config.getoption("nomnesia_model_examples", None) or DEFAULT_EXAMPLES
        steps = config.getoption("nomnesia_model_steps", None) or DEFAULT_STEPS
        run_model(store, seed=settings.seed, examples=int(examples), steps=int(steps))
