"""``--pydantic-ai-conversations`` (issue 46 item 2): the suite judges pydantic-ai's own
``InMemoryConversationStore`` with no interface error, takes the store's documented
``ConversationConflict`` for the answer it is, and catches each planted defect
(``tests/pydantic_ai_stores.py``) under its guarantee.

Mutant checks (each done by hand, each made the named test fail):

- the ``ConversationConflict`` retry in ``ConversationStoreHistory._save`` removed (the
  conflict raised to the suite): ``test_conflicting_saves_are_retried_as_documented``
  fails, G12 "raised ConversationConflict" on the concurrency tests;
- the planted ``one_turn`` removed from ``RevisionIgnored.write_record``: the save's own
  revision check runs with nothing in between, no message is lost, and
  ``test_a_save_that_skips_the_revision_check_loses_a_message`` finds nothing;
- the two stale saves of ``_conversation_checks.stale_saves`` made one after the other
  instead of at once: the base ``save`` checks the revision itself, so ``RevisionIgnored``
  loses nothing and ``test_the_store_promises_catch_each_planted_defect[revision_ignored
  -G1]`` fails;
- ``role_and_text`` reading the last part instead of the first:
  ``test_an_agent_run_saved_reads_back_as_its_messages`` fails (a run's request of a system
  prompt and a user prompt reads as ``user`` holding both, not ``system``).
"""

from __future__ import annotations

import asyncio
import re

import pytest
from interface_runs import SUITE, findings_only, quiet_ini  # tests/ is on sys.path

pytest.importorskip("pydantic_ai.conversation_store")

pytest_plugins = ("pytester",)

_findings_only = findings_only
"""This file's runs: findings only."""

OPTION = "--pydantic-ai-conversations"
IN_MEMORY = "pydantic_ai.conversation_store:InMemoryConversationStore"


@pytest.fixture(autouse=True)
def _quiet_ini(pytester: pytest.Pytester) -> None:
    quiet_ini(pytester)


def _guarantees(failures: dict[str, str]) -> set[str]:
    return {m.group(1) for text in failures.values()
            for m in re.finditer(r"^\s*(G\d{1,2}) ", text, re.MULTILINE)}


def test_in_memory_store_is_judged_with_no_interface_error(pytester: pytest.Pytester) -> None:
    """The history profile on ``InMemoryConversationStore``: every test it can reach passes."""
    result = pytester.inline_run(*SUITE, OPTION, IN_MEMORY)
    assert not _findings_only(result)
    passed, _, _ = result.listoutcomes()
    assert len(passed) >= 30, [r.nodeid for r in passed]


def test_profile_line(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*SUITE, OPTION, IN_MEMORY, "-k", "test_unknown_user_is_empty")
    result.stdout.fnmatch_lines(["*nomnesia profile history (declared)*"])
    result.assert_outcomes(passed=1)


def test_conflicting_saves_are_retried_as_documented(pytester: pytest.Pytester) -> None:
    """The real store with a turn of the loop before each read (as on an engine): concurrent
    appends to one conversation do conflict, the store raises ``ConversationConflict`` and
    writes nothing, and the mapping loads and saves again as pydantic-ai's docs say, so
    nothing is found (the conflict is the store's correct answer, never a finding)."""
    result = pytester.inline_run(*SUITE, OPTION, "pydantic_ai_stores:yielding", "-k",
                                 "test_concurrent")
    assert not _findings_only(result)
    passed, _, _ = result.listoutcomes()
    assert len(passed) >= 3, [r.nodeid for r in passed]


def test_the_yielding_store_does_conflict() -> None:
    """The control for the test above: on ``Yielding`` two appends that load at once do
    conflict (a first save of each, then a second from the same revision)."""
    from pydantic_ai.conversation import Conversation
    from pydantic_ai.conversation_store import ConversationConflict
    from pydantic_ai_stores import Yielding

    from nomnesia.suite.interfaces.pydantic_ai_conversations import message

    async def body() -> tuple[object, ...]:
        store = Yielding()
        await store.save(await _conversation(store, "ann", "first"))
        one, two = (await _conversation(store, "ann", "a"), await _conversation(store, "ann", "b"))
        return tuple(await asyncio.gather(store.save(one), store.save(two),
                                          return_exceptions=True))

    async def _conversation(store: Yielding, user: str, text: str) -> Conversation:
        from pydantic_ai.conversation import Conversation

        found = await store.load(user) or Conversation(conversation_id=user)
        found.messages.append(message("user", text))
        return found

    outcomes = asyncio.run(body())
    assert sum(isinstance(o, ConversationConflict) for o in outcomes) == 1, outcomes


def test_a_save_that_skips_the_revision_check_loses_a_message(
        pytester: pytest.Pytester) -> None:
    """``RevisionIgnored``: a stale save moves the head past another save's message (G1)."""
    result = pytester.inline_run(*SUITE, OPTION, "pydantic_ai_stores:revision_ignored", "-k",
                                 "test_concurrent_mixed_workload")
    failures = _findings_only(result)
    assert failures
    assert "G1" in _guarantees(failures), failures


def test_a_save_that_stores_the_history_again_fails_g2(pytester: pytest.Pytester) -> None:
    """``WholeHistory``: every save stores the conversation's messages again (G2)."""
    result = pytester.inline_run(*SUITE, OPTION, "pydantic_ai_stores:whole_history", "-k",
                                 "test_users_are_isolated")
    failures = _findings_only(result)
    assert len(failures) == 1, failures
    assert next(iter(failures.values())).lstrip().startswith("G2 "), failures


def test_a_delete_that_keeps_the_conversation_fails_g8(pytester: pytest.Pytester) -> None:
    """``DeleteKeepsRecord``: a deleted conversation still loads (G8)."""
    result = pytester.inline_run(*SUITE, OPTION, "pydantic_ai_stores:delete_keeps_record",
                                 "-k", "test_forget_removes_everything")
    failures = _findings_only(result)
    assert len(failures) == 1, failures
    assert next(iter(failures.values())).lstrip().startswith("G8 "), failures


PROMISES = "test_a_stale_save or test_each_message_is_stored_once or test_a_fork_and"


@pytest.mark.parametrize(("factory", "guarantee"), [
    ("revision_ignored", "G1"),  # two saves at once both return, one message lost
    ("whole_history", "G2"),  # the stored messages stored again
    ("delete_shared_entries", "G9"),  # deleting the parent takes the fork's history
])
def test_the_store_promises_catch_each_planted_defect(
        pytester: pytest.Pytester, factory: str, guarantee: str) -> None:
    """``test_interface_promises.py``'s conversation-store checks: each planted defect fails
    exactly one of them, under its guarantee (the real store passes all three, above)."""
    result = pytester.inline_run(*SUITE, OPTION, f"pydantic_ai_stores:{factory}", "-k",
                                 PROMISES)
    failures = _findings_only(result)
    assert len(failures) == 1, failures
    assert next(iter(failures.values())).lstrip().startswith(f"{guarantee} "), failures
    passed, _, _ = result.listoutcomes()
    assert len(passed) == 2, [r.nodeid for r in passed]


def test_the_store_promises_are_not_applicable_to_a_checkpointer_and_back(
        pytester: pytest.Pytester) -> None:
    """A conversation store is not judged by the checkpointer's promise tests, nor the
    reverse: each family's tests skip the other as not applicable, never pass it."""
    result = pytester.runpytest(*SUITE, OPTION, IN_MEMORY, "-k",
                                f"{PROMISES} or test_checkpoints_are_listed", "-rs")
    result.assert_outcomes(passed=3, skipped=1)
    result.stdout.fnmatch_lines(["*a LangGraph checkpointer has them*"])
    pytest.importorskip("langgraph.checkpoint.memory")
    result = pytester.runpytest(*SUITE, "--langgraph-checkpointer",
                                "langgraph.checkpoint.memory:InMemorySaver", "-k", PROMISES,
                                "-rs")
    result.assert_outcomes(skipped=3)
    result.stdout.fnmatch_lines(["*a pydantic-ai ConversationStore has them*"])


def test_an_agent_run_saved_reads_back_as_its_messages() -> None:
    """A real ``Agent`` run (``FunctionModel``, no network) saved as pydantic-ai's docs show
    reads back through the mapping as the run's messages, in order: its request of a system
    prompt and a user prompt, its response; then the mapping's append lands after them."""
    from pydantic_ai import Agent
    from pydantic_ai.conversation import Conversation
    from pydantic_ai.conversation_store import InMemoryConversationStore
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from nomnesia.suite.interfaces import pydantic_ai_conversations as mapping

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(content="hello, ann")])

    agent = Agent(FunctionModel(reply), system_prompt="be brief")
    store = InMemoryConversationStore()

    async def body() -> list[dict[str, str]]:
        conversation = await store.load("ann") or Conversation(conversation_id="ann")
        result = await agent.run("hi", conversation=conversation)
        await store.save(result)
        async with mapping.open_store(lambda: store) as history:
            await history.append_message("ann", "user", "and again")
            read: list[dict[str, str]] = await history.get_history("ann", 10)
            return read

    assert asyncio.run(body()) == [{"role": "system", "content": "be briefhi"},
                                   {"role": "assistant", "content": "hello, ann"},
                                   {"role": "user", "content": "and again"}]
