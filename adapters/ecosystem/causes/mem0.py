"""mem0 (``mem0ai``): ``AsyncMemory`` with ``infer=False`` on local Qdrant."""

from __future__ import annotations

from . import Cause
from .shared import invalid

__all__ = ["CAUSES"]

M = ("mem0", "mem0-memory")
"""The full-profile adapter, and mem0 through the suite's ``--mem0-memory`` mapping."""
FULL = ("mem0",)
"""Causes only the full profile can show: message ids, compaction, ``consistent_state``."""
_TRIMMED = (r"(?:'(?:(?: |\\[ntr])[^'\n]*|[^'\n]*(?: |\\[ntr]))'"
            r'|"(?:(?: |\\[ntr])[^"\n]*|[^"\n]*(?: |\\[ntr]))")')
"""A quoted user id (as the suite prints it: its repr, in double quotes when it holds a
single quote) with leading or trailing whitespace."""
_VALIDATE = "mem0.memory.main:_validate_and_trim_entity_id"
_VALIDATE_DOC = ("_validate_and_trim_entity_id's docstring: 'Coerces non-string values ... to "
                 "str; Trims leading/trailing whitespace; Rejects empty or whitespace-only "
                 "strings; Rejects strings containing internal whitespace'")

CAUSES: tuple[Cause, ...] = (
    Cause("mem0-wildcard-delete-all", M, ("G8", "G9"), "data loss",
          "AsyncMemory.delete_all (user_id='*' passes _validate_and_trim_entity_id, becomes "
          "filters={'user_id': '*'}, which Qdrant._build_field_condition drops)",
          "delete_all(user_id='*') deletes every user's memories: '*' is a plain id argument, "
          "nothing documents a wildcard there, and it passes the id check",
          "await m.delete_all(user_id='*')  # every user's memories are gone",
          "the Qdrant vector store (its _build_field_condition turns '*' into no condition)",
          documented=None,
          functions=("mem0.memory.main:AsyncMemory.delete_all",
                     "mem0.vector_stores.qdrant:Qdrant._build_field_condition"),
          match=(r"^G9 isolation: user id '\*': [^\n]*\bforget",), probe="wildcard_forget",
          shows=r"deleted every user's memories"),
    Cause("mem0-wildcard-filter", M, ("G9",), "hazard",
          "Qdrant._build_field_condition ('*' in filters is dropped: matches every memory)",
          "filters={'user_id': '*'} is documented as 'field exists', so get_all/search return "
          "every user's memories; the Qdrant adapter drops the condition altogether, so it "
          "also returns memories that have no user_id at all",
          "await m.get_all(filters={'user_id': '*'})  # every user's memories",
          "a user id taken from input reaches filters= unchecked; the Qdrant vector store",
          documented="docs.mem0.ai/open-source/features/metadata-filtering ('*' matches any "
                     "value / field exists), cited in Qdrant._build_field_condition's docstring",
          functions=("mem0.vector_stores.qdrant:Qdrant._build_field_condition",),
          match=(r"^G9 isolation: user id '\*': (?![^\n]*\bforget)",), probe="wildcard_read",
          shows=r"returned memories of"),
    Cause("mem0-wildcard-metadata", FULL, ("G6", "Inputs"), "hazard",
          "Qdrant._build_field_condition ('*' matches any value)",
          "a metadata filter with the value '*' matches every memory, so looking up "
          "message id '*' finds another message",
          "await m.get_all(filters={'user_id': 'ann', 'nomnesia_id': '*'})  # every memory",
          "a metadata value taken from input is '*'",
          documented="docs.mem0.ai/open-source/features/metadata-filtering",
          functions=("mem0.vector_stores.qdrant:Qdrant._build_field_condition",),
          match=(r"message_id='\*'\) raised ValueError",), shows=r"matched \d+ memories"),
    Cause("mem0-trims-user-ids", M, ("G9",), "hazard",
          "_validate_and_trim_entity_id (str.strip)",
          "user ids are trimmed, so 'ann ' and 'ann' share memories",
          "await m.add('x', user_id='ann ', infer=False); "
          "await m.get_all(filters={'user_id': 'ann'})  # returns it",
          "user ids that differ only in leading or trailing whitespace",
          documented=_VALIDATE_DOC, functions=(_VALIDATE,),
          match=(rf"^G9 isolation: (?:user id {_TRIMMED}: |.*written for user {_TRIMMED})",),
          probe="trimmed_user_id", shows=r"'ann' sees the memory of 'ann '"),
    Cause("mem0-refuses-whitespace-ids", M, ("Inputs",), "hazard",
          "_validate_and_trim_entity_id",
          "a user id with inner whitespace, or only whitespace, is refused (ValueError)",
          "await m.add('x', user_id='say \"hi\"', infer=False)  # ValueError",
          "a user id with inner whitespace", documented=_VALIDATE_DOC, functions=(_VALIDATE,),
          match=(r"\A[^\n]*raised ValueError: Invalid user_id: cannot (?:contain whitespace|"
                 r"be empty)",),
          probe="whitespace_user_id", shows=r"ValueError: Invalid user_id"),
    Cause("mem0-drops-system", M, ("G1", "G3", "G4", "G6", "G7"), "hazard",
          "AsyncMemory._add_to_vector_store (with infer=False, messages of role system are "
          "skipped)",
          "a system message is dropped silently: add() returns normally, nothing is stored",
          "await m.add([{'role': 'system', 'content': 'x'}], user_id='u', infer=False)  "
          "# {'results': []}",
          "infer=False and a message of role 'system'",
          documented="intended (an explicit `if message_dict['role'] == 'system': continue` in "
                     "AsyncMemory._add_to_vector_store), but add()'s docstring does not say so",
          functions=("mem0.memory.main:AsyncMemory._add_to_vector_store",),
          # G6 under concurrency: the retry of a dropped system message finds nothing.
          match=(r"^G(?:[1347] [a-z ]+:|6 idempotent appends: (?:retry append|append \d+ and "
                 r"append))", r"'system'"),
          probe="system_dropped", shows=r"stored nothing"),
    Cause("mem0-refuses-empty-query", M, ("Inputs",), "hazard",
          "AsyncMemory.search",
          "searching for '' (or whitespace) raises ValueError",
          "await m.search('', filters={'user_id': 'u'})  # ValueError",
          "the query is empty or whitespace",
          documented="the ValueError's message, 'Invalid query: cannot be empty' (deliberate)",
          functions=("mem0.memory.main:AsyncMemory.search",),
          match=(r"raised ValueError: Invalid query: cannot be empty",),
          shows=r"ValueError: Invalid query"),
    Cause("mem0-history-keeps-forgotten", FULL, ("G8", "G11"), "hazard",
          "AsyncMemory._delete_memory (SQLiteManager.add_history)",
          "delete_all() removes the vectors but writes the old content into the SQLite "
          "history as a DELETE row, where it stays",
          "await m.delete_all(user_id='u'); await m.history(memory_id)  # old content",
          "the history database is enabled (the default)",
          documented="the history API (AsyncMemory.history) is an audit trail by design; "
                     "delete_all's docstring does not say deleted content stays in it",
          functions=("mem0.memory.main:AsyncMemory._delete_memory",),
          match=(r"^G(?:8 forget: consistent_state is falsy|11 quiescent consistency)",),
          probe="history_keeps_forgotten", shows=r"history still holds"),
    Cause("mem0-not-atomic", M, ("G10",), "contract gap",
          "AsyncMemory.add / AsyncMemory.delete / AsyncMemory.delete_all (one memory at a time)",
          "there is no batch or transaction: an interrupted compaction or forget leaves half "
          "of it done", "task = create_task(m.delete_all(user_id='u')); <cancel>  "
          "# some memories deleted", "a task is cancelled during a multi-memory call",
          match=(r"^G10 interruption:",), kind="mapping",
          yields_to=("mem0-add-partial-batch",)),
    Cause("mem0-add-partial-batch", ("mem0-memory",), ("G10",), "hazard",
          "AsyncMemory._add_to_vector_store (infer=False: one _create_memory per message)",
          "add() of several messages stores them one at a time: when one cannot be stored "
          "(its payload cannot be serialized), add raises after the messages before it were "
          "stored, so the caller's retry of the batch stores those twice",
          "await m.add([{'role': 'user', 'content': 'a'}, {'role': 'user', 'content': 'b', "
          "'name': object()}], user_id='u', infer=False)  # raises; get_all: 'a' is stored",
          "infer=False and a batch of two or more messages, one of which cannot be stored",
          documented="add's docstring says nothing of a batch being stored whole or not at all",
          functions=("mem0.memory.main:AsyncMemory._add_to_vector_store",),
          match=(r"AsyncMemory\.add\(\[[^\n]*Unserializable[^\n]*\bpartial",),
          shows=r"raised \w+: .* and stored \d+ of them"),
    Cause("mem0-accepts-k-zero", ("mem0-memory",), ("Inputs",), "contract gap",
          "_validate_search_params (top_k must be non-negative)",
          "search(top_k=0) is accepted and returns nothing, where SPEC's k is at least 1 and "
          "0 is refused with ValueError (the full-profile adapter checks k itself)",
          "await m.search('x', top_k=0, filters={'user_id': 'u'})  # accepted: no results",
          "always",
          documented="_validate_search_params's docstring: 'top_k: Number of results to "
                     "return (must be non-negative integer)'",
          functions=("mem0.memory.main:_validate_search_params",),
          match=(r"^Inputs: .*" + invalid("k") + r"0 was accepted",)),
    Cause("mem0-coerces-ids", M, ("Inputs",), "hazard",
          "_validate_and_trim_entity_id (str(value)); for None, "
          "mem0.memory.utils.process_telemetry_filters (None.encode)",
          "a non-str user id is coerced with str(): 1 and '1' are the same user (and None "
          "crashes with AttributeError or pydantic's ValidationError, not TypeError)",
          "await m.add('x', user_id=1, infer=False)  # stored for user '1'",
          "a user id that is not a str", documented=_VALIDATE_DOC, functions=(_VALIDATE,),
          match=(r"^Inputs: .*" + invalid("user_id")
                 + r"(?:(?:1|1\.5|b'ann'|\['ann'\]) was accepted|"
                 r"None raised \w+, not ValueError or TypeError)",),
          probe="coerced_user_id", shows=r"user '1' sees the memory of user 1"),
    Cause("mem0-threads-local-qdrant", M, ("G12",), "availability",
          "AsyncMemory (asyncio.to_thread) over qdrant_client local mode and SQLiteManager",
          "AsyncMemory runs vector-store and history calls in worker threads with no lock; "
          "neither qdrant-client's local mode nor mem0's SQLiteManager is thread-safe, so "
          "concurrent calls race (IndexError in calculate_payload_mask, sqlite3 "
          "OperationalError). The adapter's factory serialises the vector store only",
          "await asyncio.gather(*(m.add('x', user_id='u', infer=False) for _ in range(50)), "
          "*(m.get_all(filters={'user_id': 'u'}) for _ in range(50)))",
          "concurrent calls on one AsyncMemory over Qdrant's local mode (path= or :memory:)",
          functions=("mem0.memory.main:AsyncMemory.add",),
          probe="threads_local_qdrant", racy=True, shows=r"concurrent calls raised"),
)
