"""Stores on Redis with RediSearch: langgraph-checkpoint-redis's ``AsyncRedisStore``.

``AsyncRedisStore`` keeps each item as a JSON document whose namespace is the
string ``".".join(namespace)``, escaped by redisvl's ``TokenEscaper``, in a
RediSearch *TEXT* field (``prefix``). Every read and write finds a namespace's
documents by a full-text query on that field, ``@prefix:<escaped>*`` (search)
or ``@prefix:<escaped> @key:{<key>}`` (the delete that precedes every put and
every delete), and the results are never compared with the namespace asked
for. A TEXT field is tokenised, case-folded and matched by word prefix, so the
namespace identity the ``BaseStore`` interface promises is lost three ways:
other namespaces match (the first cause), some namespaces match nothing (the
second), and some make the query a syntax error (the third).
"""

from __future__ import annotations

from . import Cause

__all__ = ["CAUSES"]

LGR = ("langgraph-redis", "langgraph-redis-index")
_SEARCH = "langgraph.store.redis.base:BaseRedisStore._get_batch_search_queries"
_SEARCH_OPS = "langgraph.store.redis.aio:AsyncRedisStore._batch_search_ops"
_PUT_OPS = "langgraph.store.redis.aio:AsyncRedisStore._batch_put_ops"
_TO_TEXT = "langgraph.store.redis.base:_namespace_to_text"
_INIT = "langgraph.store.redis.base:BaseRedisStore.__init__"
_PREPARE_PUT = "langgraph.store.redis.aio:AsyncRedisStore._aprepare_batch_PUT_queries"

CAUSES: tuple[Cause, ...] = (
    Cause("langgraph-redis-namespace-text-match", LGR, ("G8", "G9"), "data loss",
          "BaseRedisStore._get_batch_search_queries (@prefix:<ns>* on a TEXT field), "
          "AsyncRedisStore._batch_search_ops (no check of the returned namespace), "
          "AsyncRedisStore._batch_put_ops (deletes @prefix:<ns> @key:{k} before each put "
          "and delete)",
          "a namespace is found by a case-folded full-text prefix query, never compared "
          "with the namespace asked for: asearch(('m', 'ann')) also returns the items of "
          "('m', 'anna'), ('m', 'Ann'), ('m', 'ann:1'), and a label of only escaped "
          "punctuation ('\\\\') returns every namespace's items; a put or delete in "
          "('m', 'Bob') deletes the item with the same key in ('m', 'bob')",
          "await s.aput(('m', 'anna'), 'k', {}); await s.asearch(('m', 'ann'))  # anna's item; "
          "await s.aput(('m', 'Bob'), 'k', {})  # deletes ('m', 'bob')/'k'",
          "always, for namespaces whose last label is a word prefix of another's, or equal "
          "to it up to case (Unicode case folding: 'ß' and 'SS'); deletion needs the same "
          "key in both namespaces (forgetting a user through the keys asearch listed "
          "deletes the other user's items)",
          documented=None,
          functions=(_SEARCH, _SEARCH_OPS, _PUT_OPS),
          # Every user-facing G9 block: a read that returns another user's entry, or a forget
          # that changes another user's history (that user's reads listed the forgotten
          # user's items, and a forget through them deletes the same keys of a case variant).
          # Under concurrency, an acknowledged item gone (G1) or unfindable (G4) is this
          # deletion, or a conflicting retry that aput accepted as an overwrite (the contract
          # gap langgraph-store-put-overwrites): the block's text cannot tell them apart, and
          # the histories showed both, so the worse is named.
          # A forget judged against the other users (its own G1 block since issue 44): the
          # forget of 'anna' through the keys asearch listed deletes 'ann''s items.
          match=(r"^G(?:9 isolation: |1 durability: '[^\n]*' was (?:acknowledged|returned by "
                 r"read \d+ \(limit \d+\)), then read|"
                 r"1 durability: forget\([^\n]*\) changed another user's history|"
                 r"4 search: search \d+ \(k \d+\) for the exact content)",),
          yields_to=("langgraph-redis-namespace-unmatched", "langgraph-redis-key-tag-folded"),
          shows=r"returned the items of|deleted the item of"),
    Cause("langgraph-redis-namespace-unmatched", LGR, ("G1",), "data loss",
          "_namespace_to_text (redisvl TokenEscaper escapes ASCII punctuation only), read by "
          "the TEXT-field queries of BaseRedisStore._get_batch_search_queries",
          "items stored under a label that RediSearch tokenises into terms the query does not "
          "spell (a tab or control character, an emoji, a ZWJ sequence, 'İ', a label of 255 "
          "characters) are written and acknowledged, but asearch never finds them",
          "await s.aput(('m', '🧠'), 'k', {}); await s.asearch(('m', '🧠'))  # []",
          "a namespace label with whitespace other than a space, control characters, emoji, "
          "some non-ASCII letters, or a very long label",
          documented=None, functions=(_TO_TEXT, _SEARCH),
          # Under concurrency, only a loss in a namespace whose label holds such a character
          # (its append's line names the user): the workloads' other users lose contents to
          # conflicting retries that aput accepted (langgraph-store-put-overwrites).
          match=(r"^G1 durability: (?:user id .*: acknowledged appends are not live|"
                 r"'[^\n]*' was acknowledged, then read \d+ \(limit \d+\) does not return it"
                 r"[^\n]*\n\s*\d+ p\d+\s+invoke append\s+[\"'](?=[^\n]*?(?:[^\x00-\x7f]|"
                 r"\\[tnrx]|[^'\"\n]{200})[^\n]*?[\"'] \('(?:user|assistant|system|tool)'))",),
          shows=r"asearch found nothing"),
    Cause("langgraph-redis-namespace-syntax-error", LGR, ("Inputs",), "availability",
          "_namespace_to_text (redisvl TokenEscaper does not escape '|', '`', newline, "
          "DEL...), whose result is put into RediSearch query strings by "
          "BaseRedisStore._get_batch_search_queries and AsyncRedisStore._batch_put_ops",
          "a label holding a query operator or control character the escaper leaves alone "
          "makes the query a syntax error: aput (its delete-before-put query) or asearch "
          "raises RedisSearchError",
          "await s.aput(('m', 'ann || true'), 'k', {})  # RedisSearchError: Syntax error",
          "a namespace label containing '|', '`', '\\n', '\\r' or '\\x7f'; the same for an "
          "item key (a message id) in the @key:{...} part of the delete-before-put query "
          "('ann || true', '\\n', '\\x7f', and a key of only '_')",
          documented=None, functions=(_TO_TEXT, _PUT_OPS),
          # The block's first line: a G1 block's operation list may show a refused append.
          match=(r"\A[^\n]*raised RedisSearchError: Error while searching: Syntax error",),
          shows=r"RedisSearchError"),
    Cause("langgraph-redis-key-tag-folded", LGR, ("G1", "G6"), "data loss",
          "BaseRedisStore.__init__ (the item key is a RediSearch TAG field with the defaults: "
          "case-insensitive), read by AsyncRedisStore._batch_put_ops (deletes "
          "@prefix:<ns> @key:{<key>} before every put and delete)",
          "item keys that differ only in case, or in leading/trailing whitespace (which "
          "RediSearch trims from tag values; a newline is not escaped in the query either), "
          "match one tag, so a put of key 'Ann' first deletes the item 'ann' of the same "
          "namespace (and its vector), and a delete of 'ANN' deletes both",
          "await s.aput(ns, 'ann', {'t': 1}); await s.aput(ns, 'Ann', {'t': 2}); "
          "await s.aget(ns, 'ann')  # None",
          "two keys (here: message ids) of one namespace equal up to ASCII/Unicode case or "
          "surrounding whitespace; with the namespace text match, also across case-variant "
          "namespaces",
          documented=None, functions=(_INIT, _PUT_OPS),
          # The user holding every adversarial message id lost its case/whitespace variants.
          match=(r"\AG1 durability: user '[^\n]*' holding every message id: acknowledged "
                 r"appends are not live",),
          shows=r"deleted the item with key"),
    Cause("langgraph-redis-put-resets-created-at", LGR, ("G5",), "corruption",
          "AsyncRedisStore._aprepare_batch_PUT_queries (created_at=now for every put), "
          "AsyncRedisStore._batch_put_ops (deletes the stored document, loads a new one)",
          "a put of an existing key is a delete and a fresh insert: the item gets a new "
          "created_at (and a new document id), so an update or an idempotent retry moves it "
          "after every item written since; AsyncPostgresStore keeps created_at on upsert",
          "await s.aput(ns, 'a', v); await s.aput(ns, 'b', v); await s.aput(ns, 'a', v); "
          "sorted by created_at: ['b', 'a']",
          "a second put of a key (an update, a retry with the same message id)",
          documented=None, functions=(_PREPARE_PUT, _PUT_OPS),
          # An order failure after an append retried with the same message id.
          match=(r"\AG5 order: [^\n]*live entries are not in the order their appends were "
                 r"acknowledged",
                 r"message_id=('[^'\n]+')\)[\s\S]*message_id=\1\)"),
          shows=r"created_at moved"),
    Cause("langgraph-redis-limit-over-million", ("langgraph-redis-index",), ("Inputs",),
          "availability",
          "AsyncRedisStore._batch_search_ops (limit goes into FT.SEARCH LIMIT and KNN as given)",
          "asearch passes limit straight to RediSearch, whose result cap (MAXSEARCHRESULTS, "
          "1,000,000 by default) refuses a larger LIMIT: the call raises RedisSearchError "
          "'LIMIT exceeds maximum of 1000000' instead of returning what there is",
          "await s.asearch(ns, query='x', limit=2**31)  # RedisSearchError: LIMIT exceeds "
          "maximum of 1000000",
          "asearch with limit > 1,000,000 (RediSearch's default MAXSEARCHRESULTS)",
          documented="RediSearch's MAXSEARCHRESULTS configuration (Redis docs); not in "
                     "langgraph-checkpoint-redis",
          functions=(_SEARCH_OPS,),
          match=(r"\A[^\n]*huge values broke the page", r"LIMIT exceeds maximum of"),
          shows=r"LIMIT exceeds maximum"),
    Cause("langgraph-store-put-overwrites", LGR, ("G6",), "contract gap",
          "BaseStore.aput (an upsert; the mapping's append with a message_id is one aput)",
          "aput overwrites the item of an existing key, so a retry whose content or role "
          "differs from the first append replaces it instead of raising ValueError",
          "await s.aput(ns, 'req-1', {'content': 'pay rent'}); "
          "await s.aput(ns, 'req-1', {'content': 'pay RENT'})  # accepted, overwritten",
          "a message id is reused with other content or role",
          match=(r"\AG6 idempotent appends: conflicting retry [^\n]*did not raise ValueError",),
          kind="mapping"),
    Cause("langgraph-redis-unchecked-search-args", ("langgraph-redis-index",), ("Inputs",),
          "contract gap",
          "AsyncRedisStore._batch_search_ops / BaseStore.asearch (limit and query unchecked)",
          "asearch does not check limit or query: k=0, '5' or None is accepted, -1, True, "
          "2.5 or -2**63 reach RediSearch (RedisSearchError), a query that is not a str "
          "reaches the embedder (AttributeError)",
          "await s.asearch(ns, query='x', limit=-1)  # RedisSearchError",
          "always",
          match=(r"\AInputs: [^\n]*\bsearch\.(?:k|query)=[^\n]* (?:was accepted|raised "
                 r"\w+, not ValueError or TypeError)",),
          kind="mapping"),
    Cause("langgraph-store-offset-pages", LGR, ("G2", "G8"), "contract gap",
          "BaseStore.asearch (offset paging only, no snapshot or cursor); "
          "AsyncRedisStore._batch_search_ops (FT.SEARCH without SORTBY: document order)",
          "BaseStore has no delete of a namespace, so forget lists the namespace in pages "
          "(asearch limit/offset) and deletes what it listed; a document of the result set "
          "deleted between two pages (a concurrent forget, every put of an existing key, which "
          "is a delete and a re-insert, and, through the namespace text match, other users' "
          "writes) shifts the rest, so the next page skips items and they survive the forget",
          "page 1 = asearch(ns, limit=100); <another task deletes one listed item>; "
          "page 2 = asearch(ns, limit=100, offset=100)  # one item never listed",
          "a forget of a namespace larger than one page while any item of its result set is "
          "deleted or re-put",
          # A concurrent forget that left an item written before it began.
          # G2: the same paging, the other way: an insert shifts an item onto the next page
          # too, and the read lists it twice.
          match=(r"\A(?:G8 forget: read \d+ \(limit \d+\) returns [^\n]*, written before "
                 r"forget \d+ began|G2 exactly once: read \d+ \(limit \d+\) returned [^\n]* "
                 r"twice)",),
          kind="mapping", racy=True),
    Cause("langgraph-store-forget-one-by-one", LGR, ("G10",), "contract gap",
          "BaseStore (no delete of a namespace; the mapping's forget is one adelete per item)",
          "BaseStore cannot delete a namespace in one call, so a forget that is cancelled "
          "part-way leaves some of the user's items",
          "task = create_task(forget(u)); <cancel after the first adelete>  # items remain",
          "a forget is cancelled (a client timeout, a shutdown)",
          match=(r"^G10 interruption: an interrupted forget left part of the history",),
          kind="mapping"),
)
