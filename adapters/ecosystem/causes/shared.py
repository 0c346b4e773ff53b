"""Causes every chat-plus-index library shares: what none of them has (contract gaps)."""

from __future__ import annotations

from . import Cause

__all__ = ["CAUSES", "CHATS", "WRONG", "invalid"]

ALL = ("langgraph-memory", "langgraph-postgres", "langchain-postgres", "mem0",
       "llama-index-redis", "llama-index-postgres")
CHATS = ("langchain-postgres", "llama-index-redis", "llama-index-postgres")
INPUTS = (*ALL, "langgraph-redis-index", "mem0-memory")
"""Stores the suite judges on invalid inputs too (the memory and full profiles)."""
WRONG = r"(?:was accepted|raised \w+, not ValueError or TypeError)"
"""How the suite reports an invalid value that went through, or crashed with a library error."""


def invalid(fields: str) -> str:
    """Where the suite names an invalid value of ``fields`` (a regex alternation).

    The input tests write ``append_message.content=None``; the model test
    (suite/test_model.py) writes ``an invalid content None``, its repr cut at 60
    characters, then the shrunk call sequence.
    """
    return rf"(?:\b\w+\.(?:{fields})=|\ban invalid (?:{fields}) )"


CAUSES: tuple[Cause, ...] = (
    Cause("covered-retry", ALL, ("G6",), "contract gap",
          "no record of deleted items (BaseStore.adelete, AsyncMemory.delete, "
          "aclear/aset_messages)",
          "a message covered by a summary is gone from the library, so a retry with its "
          "message_id appends it again",
          "append(u, 'user', 'x', message_id='m1'); compact(u); "
          "append(u, 'user', 'x', message_id='m1')  # appended twice",
          "a retry arrives after a compaction removed the message it retries",
          # Under concurrency: a retry (or a conflicting reuse of its message_id) after a
          # compaction covered the first append is taken as new.
          match=(r"^G6 idempotent appends: (?:a retry of a covered message|retry append \d+ of "
                 r"append \d+ returned seq|append \d+ and append \d+ reuse message_id .* both "
                 r"succeed)",), kind="mapping",
          # mem0 drops system messages, so their retries find nothing to match.
          yields_to=("mem0-drops-system",)),
    Cause("contract-limits", INPUTS, ("Inputs",), "contract gap",
          "no length limit on keys or values (aput, add, aadd_messages, async_add_message)",
          "user ids over 256 and contents over 65,536 code points are stored; the contract "
          "rejects them", "append('u' * 257, 'user', 'x')  # accepted", "always",
          match=(r"^Inputs: .*" + invalid("user_id|content") + r"'(?:u|x|🧠){20,}.* was accepted",),
          kind="mapping"),
    Cause("unchecked-surrogates", INPUTS, ("Inputs",), "contract gap",
          "no check that a str is valid Unicode (aput, aadd_messages, async_add_message, "
          "AsyncMemory.add; PostgreSQL's text input)",
          "a lone surrogate in a user id or content is not refused with ValueError: it is "
          "stored as given, or PostgreSQL refuses it with its own error "
          "(InvalidTextRepresentation, DBAPIError)",
          "append('\\ud800', 'user', 'x')  # accepted, or a driver error", "always",
          match=(r"^Inputs: .*" + invalid("user_id|content")
                 + r"'[^'\n]*\\ud[89a-f][0-9a-f]{2}[^'\n]*' " + WRONG,), kind="mapping"),
    Cause("unchecked-content-type", INPUTS, ("Inputs",), "contract gap",
          "BaseStore.aput (any JSON value); AsyncMemory._add_to_vector_store (None stored, "
          "1.split raises AttributeError); llama-index ChatMessage (bytes kept); "
          "PGVectorStore.aadd_texts's embedder (bytes.encode raises AttributeError)",
          "content that is not a str (None, 1, b'text') is stored, or crashes inside the library "
          "(AttributeError), instead of raising TypeError",
          "append('u', 'user', None)  # accepted", "always",
          match=(r"^Inputs: .*" + invalid("content") + r"(?:None|1|b'text') " + WRONG,),
          kind="mapping"),
    Cause("unchecked-nul-user-id", ("mem0", "mem0-memory", *CHATS), ("Inputs",), "contract gap",
          "no check of NUL in keys (Qdrant payload, Redis key, PostgreSQL text)",
          "a user id with NUL is not refused with ValueError: it is stored as given (Qdrant, "
          "Redis), or PostgreSQL refuses it with DataError/DBAPIError",
          "append('a\\x00b', 'user', 'x')  # accepted, or a driver error", "always",
          match=(r"^Inputs: .*" + invalid("user_id") + r"'a?\\x00b?' " + WRONG,), kind="mapping"),
    Cause("search-filter-any-type", CHATS, ("Inputs",), "contract gap",
          "the metadata filter takes any value (PGVectorStore.asimilarity_search(filter=), "
          "MetadataFilters/ExactMatchFilter)",
          "a user id that is not a str goes into the vector store's filter unchecked: search "
          "accepts None, 1 or ['ann'] (or the driver raises ProgrammingError)",
          "search(None, 'x')  # returns [] instead of TypeError", "always",
          match=(r"^Inputs: .*\bsearch\.user_id=(?:None|1|1\.5|b'ann'|\['ann'\]) " + WRONG,),
          kind="mapping"),
    Cause("no-conditional-write", ("langgraph-memory", "langgraph-postgres", "mem0"),
          ("G2", "G5", "G7"), "contract gap",
          "BaseStore.abatch, AsyncMemory.add/delete (no compare-and-set)",
          "a write cannot be made conditional on what is stored, so two concurrent compactions "
          "both replace the same prefix: two summaries with one seq, or a summary whose "
          "compaction was overwritten",
          "await asyncio.gather(compact(u), compact(u))  # two live summaries",
          "two writers rewrite one user's memories at once, with no lock of the caller's",
          match=(r"^G(?:2 exactly once: .* returned summary .* that no append or compact "
                 r"produced|5 order: .* share seq|7 atomic compaction: )",), kind="mapping",
          racy=True, yields_to=("mem0-drops-system",)),
    Cause("two-writes-no-transaction", CHATS, ("G10", "G11"), "contract gap",
          "chat history and vector store are separate writes "
          "(aadd_messages + aadd_texts, async_add_message + ainsert_nodes)",
          "nothing ties the chat write to the index write, so an interrupted append or "
          "forget leaves the two disagreeing",
          "task = create_task(append(u, 'user', 'x')); <cancel after the chat write>  "
          "# in the chat, not in the index",
          "a task is cancelled (a client timeout, a shutdown) between the two writes",
          match=(r"^G10 interruption: after (?:append|compact|forget) was cancelled",
                 r"consistent_state\(.*\) is falsy"), kind="mapping"),
    Cause("chat-accepts-empty-key", CHATS, ("Inputs",), "contract gap",
          "no check of the session key (uuid5 of it, RedisChatStore/PostgresChatStore keys)",
          "an empty user id is stored like any other",
          "append('', 'user', 'x')  # accepted", "always",
          match=(r"^Inputs: .*" + invalid("user_id") + "'' was accepted",), kind="mapping"),
)
