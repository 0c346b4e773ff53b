"""langchain-redis: ``RedisChatMessageHistory``.

The history keeps each message as a RedisJSON document under ``<key_prefix><session
id>:<ulid>`` and finds a session's messages through a RediSearch index over them
(redisvl's ``SearchIndex``). Its constructor creates that index if it is missing,
after reading ``FT.INFO`` to warn when an existing index has another key prefix:
that reading is where it breaks, before any message is written.

With a RESP2 client (``protocol=2``, audit ``langchain-redis-resp2``) the index
works, and the session identity is what breaks. ``session_id`` is a RediSearch
*TAG* field made with redisvl's defaults (not case-sensitive, ``,`` separator),
and ``messages`` and ``clear`` find a session's documents with
``@session_id:{<escaped id>}`` (redisvl's ``Tag`` and ``TokenEscaper``), never
comparing the documents' own ``session_id`` with the one asked for. RediSearch
lower-cases and trims tag values when it indexes them, so ids that differ in case
or in surrounding whitespace share one tag (the first cause); the escaper leaves
whitespace other than a space, control characters, ``|`` and the backtick alone,
so some ids match nothing (the second) or make the query a syntax error (the
third). The class has no async methods, so langchain-core's ``aclear`` runs
``clear`` in a thread that a cancellation does not stop (the fourth).
"""

from __future__ import annotations

from . import Cause

__all__ = ["CAUSES"]

LCR = ("langchain-redis",)
_CREATE = "langchain_redis.chat_message_history:RedisChatMessageHistory._create_search_index"
_MESSAGES = "langchain_redis.chat_message_history:RedisChatMessageHistory.messages.fget"
_CLEAR = "langchain_redis.chat_message_history:RedisChatMessageHistory.clear"
_ESCAPE = "redisvl.utils.token_escaper:TokenEscaper.escape"
_TAG_EQ = "redisvl.query.filter:Tag.__eq__"
_ACLEAR = "langchain_core.chat_history:BaseChatMessageHistory.aclear"
RESP2 = ("langchain-redis-resp2",)

CAUSES: tuple[Cause, ...] = (
    Cause("langchain-redis-index-info-dict", LCR,
          ("G1", "G3", "G8", "G9", "G10", "G12", "Inputs"), "availability",
          "RedisChatMessageHistory._create_search_index (called by __init__: parses FT.INFO's "
          "index_definition as the RESP2 flat list, index_definition.index('prefixes'))",
          "every history after the first on an index fails to construct: redis-py 8 speaks "
          "RESP3 by default and returns FT.INFO's index_definition as a dict, which has no "
          ".index(); the AttributeError is not among the exceptions the constructor catches "
          "(ValueError, IndexError, ResponseError, ConnectionError, RedisSearchError), so a "
          "second session, or the same session on the next request, cannot be opened at all",
          "RedisChatMessageHistory('ann', redis_client=r); "
          "RedisChatMessageHistory('bob', redis_client=r)  # AttributeError: 'dict' object "
          "has no attribute 'index'",
          "redis-py 8 with its default protocol (RESP3 on the wire) or protocol=3, the index "
          "already exists, overwrite_index=False (the default); a client with protocol=2 "
          "gets the flat list and works",
          documented=None, functions=(_CREATE,),
          match=(r"AttributeError: 'dict' object has no attribute 'index'",),
          shows=r"AttributeError: 'dict' object has no attribute 'index'"),
    Cause("langchain-redis-session-tag-folded", RESP2, ("G1", "G9"), "data loss",
          "RedisChatMessageHistory._create_search_index (session_id is a TAG field with "
          "redisvl's defaults: case-insensitive), read by RedisChatMessageHistory.messages "
          "and RedisChatMessageHistory.clear (@session_id:{<id>}, the returned documents' "
          "session_id never compared)",
          "sessions whose ids differ only in case, or in leading/trailing whitespace (which "
          "RediSearch trims from tag values when indexing; a newline is not escaped in the "
          "query either), share one tag: RedisChatMessageHistory('Ann').messages returns "
          "'ann''s messages and .clear() deletes them; 'ANN' reads 'ann ''s",
          "RedisChatMessageHistory('ann', redis_client=r).add_messages([HumanMessage('x')]); "
          "RedisChatMessageHistory('Ann', redis_client=r).messages  # ['x']; "
          ".clear()  # deletes ann's 'x'",
          "RESP2 client (protocol=2; with RESP3 no second history can be made), two session "
          "ids equal up to ASCII/Unicode case or surrounding whitespace; under concurrency a "
          "forget of one deletes what the other just appended (its G1 blocks)",
          documented=None, functions=(_CREATE, _MESSAGES, _CLEAR),
          # Every G9 block (a read returning, or a forget changing, a case variant's history),
          # and the concurrency G1 blocks: the runs use only 'ann' and 'Ann', so an
          # acknowledged append that vanished was cleared by the other id's forget.
          # G1: a message acknowledged, or already read back, that a later read misses.
          match=(r"\A(?:G9 isolation: |G1 durability: '[^\n]*' was (?:acknowledged|returned by "
                 r"read \d+ \(limit \d+\)), then read \d+ )",),
          shows=r"returned the messages of|deleted the messages of"),
    Cause("langchain-redis-session-tag-unmatched", RESP2, ("G1",), "data loss",
          "RedisChatMessageHistory.messages (Tag('session_id') == session_id), whose value "
          "redisvl's TokenEscaper.escape escapes for ASCII punctuation and space only",
          "messages of a session id with leading or trailing whitespace (trimmed from the "
          "indexed tag, kept in the query), a tab or other control character, a backtick, "
          "'|' or a zero-width space are written and acknowledged, but messages never finds "
          "them (the query spells another tag, or an OR of tags), and clear never deletes "
          "them",
          "h = RedisChatMessageHistory('ann ', redis_client=r); "
          "h.add_messages([HumanMessage('x')]); h.messages  # []",
          "RESP2 client (protocol=2), a session id with surrounding whitespace, a tab, a "
          "control character, '`', '|' or U+200B",
          documented=None, functions=(_MESSAGES, _TAG_EQ, _ESCAPE),
          match=(r"\AG1 durability: user id [^\n]*: acknowledged appends are not live",),
          shows=r"messages returned nothing"),
    Cause("langchain-redis-session-tag-syntax-error", RESP2, ("Inputs",), "availability",
          "RedisChatMessageHistory.messages and RedisChatMessageHistory.clear "
          "(Tag('session_id') == session_id), through redisvl's TokenEscaper.escape, which "
          "leaves '|', '_' (alone), newline, carriage return and DEL unescaped",
          "a session id that is empty after the query parser drops its whitespace ('\n'), "
          "or holds an unescaped query operator ('ann || true', '_', '\x7f'), makes the "
          "FT.SEARCH query a syntax error: messages (and clear) raise RedisSearchError, "
          "though add_messages stored the messages",
          "RedisChatMessageHistory('ann || true', redis_client=r).messages  "
          "# RedisSearchError: Syntax error",
          "RESP2 client (protocol=2), a session id containing '|' or DEL, or made only of "
          "'_' or of newlines",
          documented=None, functions=(_MESSAGES, _CLEAR, _ESCAPE),
          match=(r"\A[^\n]*raised RedisSearchError: [^\n]*Syntax error",),
          shows=r"RedisSearchError"),
    Cause("langchain-redis-aclear-thread", RESP2, ("G10",), "hazard",
          "BaseChatMessageHistory.aclear (langchain-core: run_in_executor(None, self.clear)); "
          "RedisChatMessageHistory defines no async methods",
          "a cancelled aclear() returns CancelledError at once, but clear() goes on in the "
          "executor thread: a read right after the cancellation still sees the messages, a "
          "later one finds them gone, so a cancelled forget takes effect after its caller "
          "was told it was cancelled (and can delete messages appended in between)",
          "t = create_task(h.aclear()); <cancel>; h.messages  # still there; later: []",
          "RESP2 client (protocol=2), an async caller cancels aclear (a timeout, a shutdown); "
          "the sync API is not affected",
          documented="langchain-core BaseChatMessageHistory docstring ('Async variants all "
                     "have default implementations that call the sync variants'); Python's "
                     "asyncio docs (loop.run_in_executor: cancelling the future does not "
                     "stop the thread)",
          functions=(_ACLEAR,),
          match=(r"\AG10 interruption: after forget was cancelled",),
          shows=r"cleared after the cancellation"),
)
