"""What each audited library gets wrong, traced to the function responsible.

A *cause* is one root defect: the guarantees it breaks, the library function
responsible, a one-line reproduction, and how to recognise it in a suite
failure (``match``: regular expressions that must *all* be found in the failure's
text). ``report`` groups every failing test under the causes that match it; a
failure no cause matches is reported as ``unclassified`` and counts as a
finding of its own, so nothing is explained away. ``kind`` says whose the
defect is: ``library`` (the library does it), or ``mapping`` (the library lacks
what the contract needs, and the obvious mapping a team writes over it shows
the gap). A ``racy`` cause shows only under concurrent timing: a run that
misses it does not count it as fixed.

Some causes have a ``probe`` (``probes.py``): a targeted check run on the
library through the adapter. Probes confirm the suite's findings in a few
calls, catch racy ones a run may miss, and show what the adapters guard
against, which no suite test can reach (``unreachable``: huge ``limit``/``k``
passed straight to a library, which the adapters clamp as SPEC.md asks).

The suite reports every failing input of a test (and every anomaly of a
concurrency run) as a block of its own, headed by its guarantee; ``report``
classifies each block on its own (``report.failure_parts``), so ``match``
patterns see one violation at a time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["CAUSES", "Cause", "causes_for", "classify"]


@dataclass(frozen=True)
class Cause:
    key: str
    audits: tuple[str, ...]
    guarantees: tuple[str, ...]
    function: str
    what: str
    reproduction: str
    match: tuple[str, ...] = ()
    probe: str | None = None
    kind: str = "library"
    racy: bool = False
    """Shown only by concurrent timing, so a run may miss it: its absence is no fix."""
    unreachable: str | None = None
    """Why no suite test can show it (the adapter guards against it): only its probe does."""

    def matches(self, text: str) -> bool:
        return bool(self.match) and all(re.search(p, text, re.M) for p in self.match)


_LG = ("langgraph-memory", "langgraph-postgres")
_ALL = ("langgraph-memory", "langgraph-postgres", "langchain-postgres", "mem0",
        "llama-index-redis", "llama-index-postgres")
_CHATS = ("langchain-postgres", "llama-index-redis", "llama-index-postgres")
_LLAMA = ("llama-index-redis", "llama-index-postgres")
_TRIMMED = (r"(?:'(?:(?: |\\[ntr])[^'\n]*|[^'\n]*(?: |\\[ntr]))'"
            r'|"(?:(?: |\\[ntr])[^"\n]*|[^"\n]*(?: |\\[ntr]))")')
"""A quoted user id (as the suite prints it: its repr, in double quotes when it holds a
single quote) with leading or trailing whitespace."""
_WRONG = r"(?:was accepted|raised \w+, not ValueError or TypeError)"
"""How the suite reports an invalid value that went through, or crashed with a library error."""


def _invalid(fields: str) -> str:
    """Where the suite names an invalid value of ``fields`` (a regex alternation).

    The input tests write ``append_message.content=None``; the model test
    (suite/test_model.py) writes ``an invalid content None``, its repr cut at 60
    characters, then the shrunk call sequence.
    """
    return rf"(?:\b\w+\.(?:{fields})=|\ban invalid (?:{fields}) )"



CAUSES: tuple[Cause, ...] = (
    # --- shared by every library: what none of them has -------------------------------
    Cause("covered-retry", _ALL, ("G6",),
          "no record of deleted items (BaseStore.adelete, AsyncMemory.delete, "
          "aclear/aset_messages)",
          "a message covered by a summary is gone from the library, so a retry with its "
          "message_id appends it again",
          "append(u, 'user', 'x', message_id='m1'); compact(u); "
          "append(u, 'user', 'x', message_id='m1')  # appended twice",
          # Under concurrency: a retry (or a conflicting reuse of its message_id) after a
          # compaction covered the first append is taken as new.
          (r"^G6 idempotent appends: (?:a retry of a covered message|retry append \d+ of "
           r"append \d+ returned seq|append \d+ and append \d+ reuse message_id .* both "
           r"succeed)",), kind="mapping"),
    Cause("contract-limits", _ALL, ("Inputs",),
          "no length limit on keys or values (aput, add, aadd_messages, async_add_message)",
          "user ids over 256 and contents over 65,536 code points are stored; the contract "
          "rejects them", "append('u' * 257, 'user', 'x')  # accepted",
          (r"^Inputs: .*" + _invalid("user_id|content") + r"'(?:u|x|🧠){20,}.* was accepted",),
          kind="mapping"),
    Cause("unchecked-surrogates", _ALL, ("Inputs",),
          "no check that a str is valid Unicode (aput, aadd_messages, async_add_message, "
          "AsyncMemory.add; PostgreSQL's text input)",
          "a lone surrogate in a user id or content is not refused with ValueError: it is "
          "stored as given, or PostgreSQL refuses it with its own error "
          "(InvalidTextRepresentation, DBAPIError)",
          "append('\\ud800', 'user', 'x')  # accepted, or a driver error",
          (r"^Inputs: .*" + _invalid("user_id|content")
           + r"'[^'\n]*\\ud[89a-f][0-9a-f]{2}[^'\n]*' " + _WRONG,), kind="mapping"),
    Cause("unchecked-content-type", _ALL, ("Inputs",),
          "BaseStore.aput (any JSON value); AsyncMemory._add_to_vector_store (None stored, "
          "1.split raises AttributeError); llama-index ChatMessage (bytes kept); "
          "PGVectorStore.aadd_texts's embedder (bytes.encode raises AttributeError)",
          "content that is not a str (None, 1, b'text') is stored, or crashes inside the library "
          "(AttributeError), instead of raising TypeError",
          "append('u', 'user', None)  # accepted",
          (r"^Inputs: .*" + _invalid("content") + r"(?:None|1|b'text') " + _WRONG,),
          kind="mapping"),
    Cause("unchecked-nul-user-id", ("mem0", *_CHATS), ("Inputs",),
          "no check of NUL in keys (Qdrant payload, Redis key, PostgreSQL text)",
          "a user id with NUL is not refused with ValueError: it is stored as given (Qdrant, "
          "Redis), or PostgreSQL refuses it with DataError/DBAPIError",
          "append('a\\x00b', 'user', 'x')  # accepted, or a driver error",
          (r"^Inputs: .*" + _invalid("user_id") + r"'a?\\x00b?' " + _WRONG,), kind="mapping"),
    Cause("search-filter-any-type", _CHATS, ("Inputs",),
          "the metadata filter takes any value (PGVectorStore.asimilarity_search(filter=), "
          "MetadataFilters/ExactMatchFilter)",
          "a user id that is not a str goes into the vector store's filter unchecked: search "
          "accepts None, 1 or ['ann'] (or the driver raises ProgrammingError)",
          "search(None, 'x')  # returns [] instead of TypeError",
          (r"^Inputs: .*\bsearch\.user_id=(?:None|1|1\.5|b'ann'|\['ann'\]) " + _WRONG,),
          kind="mapping"),
    # --- LangGraph ------------------------------------------------------------------------
    Cause("langgraph-dot-in-namespace", _LG, ("Inputs",),
          "langgraph.store.base._validate_namespace_labels",
          "a namespace label may not contain '.', so a user id with a period is refused",
          "await InMemoryStore().aput(('mem', 'a.b'), 'k', {})  # InvalidNamespaceError",
          (r"raised InvalidNamespaceError: Invalid namespace label",),
          probe="dot_in_user_id"),
    Cause("langgraph-no-conditional-write", _LG, ("G5", "G7"),
          "BaseStore.abatch (no compare-and-set)",
          "a write cannot be made conditional on what is stored, so two concurrent compactions "
          "both replace the same prefix: two summaries with one seq",
          "await asyncio.gather(compact(u), compact(u))  # two live summaries",
          (r"^G(?:5 order: .* share seq|7 atomic compaction: .* shows \d+ summaries)",), racy=True),
    Cause("langgraph-postgres-jsonb-nul", ("langgraph-postgres",), ("Inputs", "G1"),
          "AsyncPostgresStore.abatch (value column is jsonb)",
          "PostgreSQL jsonb cannot hold \\u0000, so content with NUL is refused",
          "await store.aput(('ns',), 'k', {'content': '\\x00'})  # UntranslatableCharacter",
          (r"raised UntranslatableCharacter",), probe="nul_content"),
    Cause("langgraph-postgres-limit-bigint", ("langgraph-postgres",), ("Inputs",),
          "langgraph.store.postgres.base.BasePostgresStore._prepare_batch_search_queries "
          "(LIMIT %s; with a query, limit * 2 * vectors per doc + 1)",
          "the limit goes into SQL LIMIT as a bigint: 2**64 and 10**30 raise "
          "NumericValueOutOfRange, and a vector search over-fetches, so even 2**63-1 does",
          "await store.asearch(('ns',), query='x', limit=2**63 - 1)  # bigint out of range",
          probe="huge_limits", unreachable="the adapter clamps limit and k, as SPEC.md asks"),
    # --- langchain-postgres ---------------------------------------------------------------
    Cause("langchain-clear-then-add", ("langchain-postgres",),
          ("G1", "G3", "G4", "G5", "G6", "G7", "G8", "G10", "G11"),
          "PostgresChatMessageHistory.aclear + aadd_messages",
          "the only way to replace messages is aclear() then aadd_messages(), two commits: a "
          "reader between them sees an empty history, an append between them is lost, a "
          "cancel between them wipes the session; a compaction that read before a forget "
          "writes the forgotten messages back, and an append it overwrites stays in the index",
          "await h.aclear(); <cancelled here>  # every message of the session is gone",
          # G11: the append a compaction overwrote is gone from the chat, not from the index.
          (r"^G(?:1 durability|3 read your writes|5 order|7 atomic compaction|"
           r"8 forget: read \d+ .* written before forget|"
           r"10 interruption: an interrupted compaction|"
           r"11 quiescent consistency: [^\n]*(?:\n[^\n]*)*?\bextra in PGVectorStore)",)),
    Cause("langchain-jsonb-nul", ("langchain-postgres",), ("Inputs", "G1"),
          "PostgresChatMessageHistory.aadd_messages (message column is jsonb)",
          "PostgreSQL jsonb cannot hold \\u0000, so content with NUL is refused",
          "await h.aadd_messages([HumanMessage('\\x00')])  # UntranslatableCharacter",
          (r"UntranslatableCharacter|InFailedSqlTransaction",), probe="nul_content"),
    Cause("langchain-no-rollback", ("langchain-postgres",), ("G12",),
          "PostgresChatMessageHistory.aadd_messages (no rollback on error)",
          "a failed insert leaves the caller's connection in an aborted transaction, so every "
          "later call on it fails with InFailedSqlTransaction",
          "await h.aadd_messages([HumanMessage('\\x00')]); await h.aget_messages()  "
          "# InFailedSqlTransaction", (r"InFailedSqlTransaction",), probe="nul_poisons"),
    Cause("langchain-k-bigint", ("langchain-postgres",), ("Inputs",),
          "langchain_postgres.v2.async_vectorstore.AsyncPGVectorStore.__query_collection "
          "(LIMIT :dense_limit)",
          "k goes into SQL LIMIT as a bigint: k=2**64 or 10**30 raises DataError "
          "(NumericValueOutOfRange)",
          "await vectors.asimilarity_search('x', k=2**64)  # bigint out of range",
          probe="huge_limits", unreachable="the adapter clamps limit and k, as SPEC.md asks"),
    # --- chat store + vector index: two components, no transaction between them -----------
    Cause("two-writes-no-transaction", _CHATS, ("G10", "G11"),
          "chat history and vector store are separate writes "
          "(aadd_messages + aadd_texts, async_add_message + ainsert_nodes)",
          "nothing ties the chat write to the index write, so an interrupted append or "
          "forget leaves the two disagreeing",
          "task = create_task(append(u, 'user', 'x')); <cancel after the chat write>  "
          "# in the chat, not in the index",
          (r"^G10 interruption: after (?:append|compact|forget) was cancelled",
           r"consistent_state\(.*\) is falsy")),
    Cause("chat-accepts-empty-key", _CHATS, ("Inputs",),
          "no check of the session key (uuid5 of it, RedisChatStore/PostgresChatStore keys)",
          "an empty user id is stored like any other",
          "append('', 'user', 'x')  # accepted",
          (r"^Inputs: .*" + _invalid("user_id") + "'' was accepted",)),
    # --- llama-index ----------------------------------------------------------------------
    Cause("llama-refused-content-half-written", _LLAMA, ("Inputs", "G11"),
          "async_add_message stores ChatMessage(content=None), then TextNode(text=None) raises "
          "(two writes, the chat first)",
          "content None or 1 is stored in the chat, then refused by the index: the append "
          "raises, but the chat already holds it",
          "append(u, 'user', None)  # raises ValidationError, the chat holds the message",
          (r"^Inputs: .*\b(?:rejecting append_message\.content=\S+ changed the store's state|"
           r"a call rejected for its content changed the history)",),
          kind="mapping"),
    Cause("llama-set-messages-not-atomic", _LLAMA,
          ("G1", "G3", "G4", "G5", "G7", "G8", "G10"),
          "RedisChatStore.aset_messages (DELETE then RPUSH) / PostgresChatStore.aset_messages "
          "(whole-array overwrite)",
          "the only rewrite replaces the whole chat: on Redis a reader between DELETE and "
          "RPUSH sees nothing and a cancel between them wipes the chat; on both an append "
          "that lands between the read and the overwrite is lost, and a forget that lands there is "
          "undone (the overwrite writes the forgotten messages back)",
          "await chats.aset_messages(key, kept)  # concurrent async_add_message is lost",
          (r"^G(?:1 durability|3 read your writes|4 search|5 order|7 atomic compaction|"
           r"8 forget: read \d+ .* written before forget|"
           r"10 interruption: an interrupted compaction)",), racy=True),
    Cause("llama-retry-race", _LLAMA, ("G6",),
          "BaseChatStore has no conditional append",
          "an idempotent retry reads the chat and appends, so two concurrent retries both "
          "append", "await asyncio.gather(append(u, 'user', 'x', message_id='m'), "
          "append(u, 'user', 'x', message_id='m'))",
          (r"^G6 idempotent appends: retry append",), kind="mapping", racy=True),
    Cause("llama-empty-query", _LLAMA, ("Inputs",),
          "VectorIndexRetriever.aretrieve (empty query string)",
          "searching for '' raises TypeError instead of returning results",
          "await index.as_retriever().aretrieve('')  # TypeError: NoneType * float",
          (r"search\([^)]*, '', k=\d+\) raised TypeError",)),
    # --- mem0 -----------------------------------------------------------------------------
    Cause("mem0-wildcard-user-id", ("mem0",), ("G8", "G9"),
          "mem0.vector_stores.qdrant.Qdrant._build_field_condition ('*' matches any value)",
          "user id '*' is a wildcard: get_all/search with user_id '*' return every user's "
          "memories, and delete_all(user_id='*') deletes every user's",
          "await m.delete_all(user_id='*')  # every user's memories are gone",
          # The wildcard read breaks G9; the wildcard forget breaks G8 too (forget must
          # affect exactly its user) though the suite files forget('*') wiping other users
          # under G9: the probe (delete_all(user_id='*')) puts the cause in both columns.
          (r"^G9 isolation: user id '\*': ",), probe="wildcard_user_id"),
    Cause("mem0-wildcard-metadata", ("mem0",), ("G6", "Inputs"),
          "mem0.vector_stores.qdrant.Qdrant._build_field_condition ('*' matches any value)",
          "a metadata filter with the value '*' matches every memory, so looking up "
          "message id '*' finds another message",
          "await m.get_all(filters={'user_id': 'ann', 'nomnesia_id': '*'})  # every memory",
          (r"message_id='\*'\) raised ValueError",)),
    Cause("mem0-trims-user-ids", ("mem0",), ("G9",),
          "mem0.memory.main._validate_and_trim_entity_id (str.strip)",
          "user ids are trimmed, so 'ann ' and 'ann' share memories",
          "await m.add('x', user_id='ann ', infer=False); "
          "await m.get_all(filters={'user_id': 'ann'})  # returns it",
          (rf"^G9 isolation: (?:user id {_TRIMMED}: |.*written for user {_TRIMMED})",),
          probe="trimmed_user_id"),
    Cause("mem0-refuses-whitespace-ids", ("mem0",), ("Inputs",),
          "mem0.memory.main._validate_and_trim_entity_id",
          "a user id with inner whitespace, or only whitespace, is refused (ValueError)",
          "await m.add('x', user_id='say \"hi\"', infer=False)  # ValueError",
          (r"raised ValueError: Invalid user_id: cannot (?:contain whitespace|be empty)",),
          probe="whitespace_user_id"),
    Cause("mem0-drops-system", ("mem0",), ("G1", "G3", "G4", "G6", "G7"),
          "mem0.memory.main.AsyncMemory._add_to_vector_store (infer=False skips role system)",
          "a system message is dropped silently: add() returns normally, nothing is stored",
          "await m.add([{'role': 'system', 'content': 'x'}], user_id='u', infer=False)  "
          "# {'results': []}",
          # G6 under concurrency: the retry of a dropped system message finds nothing.
          (r"^G(?:[1347] [a-z ]+:|6 idempotent appends: (?:retry append|append \d+ and append))",
           r"'system'"),
          probe="system_dropped"),
    Cause("mem0-refuses-empty-query", ("mem0",), ("Inputs",),
          "mem0.memory.main.AsyncMemory.search",
          "searching for '' (or whitespace) raises ValueError",
          "await m.search('', filters={'user_id': 'u'})  # ValueError",
          (r"raised ValueError: Invalid query: cannot be empty",)),
    Cause("mem0-history-keeps-forgotten", ("mem0",), ("G8", "G11"),
          "mem0.memory.main.AsyncMemory._delete_memory (SQLiteManager.add_history)",
          "delete_all() removes the vectors but writes the old content into the SQLite "
          "history as a DELETE row, where it stays",
          "await m.delete_all(user_id='u'); m.db.get_history(memory_id)  # old content",
          (r"^G(?:8 forget: consistent_state is falsy|11 quiescent consistency)",),
          probe="history_keeps_forgotten"),
    Cause("mem0-not-atomic", ("mem0",), ("G10",),
          "AsyncMemory.add / AsyncMemory.delete / AsyncMemory.delete_all (one memory at a time)",
          "there is no batch or transaction: an interrupted compaction or forget leaves half "
          "of it done", "task = create_task(m.delete_all(user_id='u')); <cancel>  "
          "# some memories deleted", (r"^G10 interruption:",)),
    Cause("mem0-coerces-ids", ("mem0",), ("Inputs",),
          "mem0.memory.main._validate_and_trim_entity_id (str(value)); for None, "
          "mem0.memory.utils.process_telemetry_filters (None.encode)",
          "a non-str user id is coerced with str(): 1 and '1' are the same user (and None "
          "crashes with AttributeError or pydantic's ValidationError, not TypeError)",
          "await m.add('x', user_id=1, infer=False)  # stored for user '1'",
          (r"^Inputs: .*" + _invalid("user_id") + r"(?:(?:1|1\.5|b'ann'|\['ann'\]) was accepted|"
           r"None raised \w+, not ValueError or TypeError)",),
          probe="coerced_user_id"),
    Cause("mem0-threads-local-qdrant", ("mem0",), ("G12",),
          "AsyncMemory (asyncio.to_thread) over qdrant_client local mode and SQLiteManager",
          "AsyncMemory runs vector-store and history calls in worker threads with no lock; "
          "neither qdrant-client's local mode nor mem0's SQLiteManager is thread-safe, so "
          "concurrent calls race (IndexError in calculate_payload_mask, sqlite3 "
          "OperationalError). The adapter's factory serialises the vector store only",
          "await asyncio.gather(*(m.add('x', user_id='u', infer=False) for _ in range(50)), "
          "*(m.get_all(filters={'user_id': 'u'}) for _ in range(50)))",
          probe="threads_local_qdrant", racy=True),
)


def causes_for(audit: str) -> list[Cause]:
    return [c for c in CAUSES if audit in c.audits]


def classify(audit: str, text: str) -> list[str]:
    """Keys of the causes of ``audit`` whose patterns all occur in a failure's text."""
    return [c.key for c in causes_for(audit) if c.matches(text)]
