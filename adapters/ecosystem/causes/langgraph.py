"""LangGraph's stores: ``InMemoryStore`` and ``AsyncPostgresStore`` (langgraph-checkpoint*)."""

from __future__ import annotations

from . import Cause

__all__ = ["CAUSES"]

LG = ("langgraph-memory", "langgraph-postgres")
LG_ALL = (*LG, "langgraph-redis", "langgraph-redis-index")
"""Every BaseStore audited: langgraph-checkpoint-redis validates namespaces the same way."""

CAUSES: tuple[Cause, ...] = (
    Cause("langgraph-dot-in-namespace", LG_ALL, ("Inputs",), "hazard",
          "langgraph.store.base._validate_namespace_labels (langgraph-checkpoint, called by every "
          "BaseStore method)",
          "a namespace label may not contain '.', so a user id with a period is refused",
          "await InMemoryStore().aput(('mem', 'a.b'), 'k', {})  # InvalidNamespaceError",
          "a namespace label (here: the user id) contains '.', e.g. an e-mail address",
          documented="BaseStore.put/get/search docstrings, under Raises: 'InvalidNamespaceError: "
                     "If a namespace label is empty, is not a string, or contains a period'",
          functions=("langgraph.store.base:_validate_namespace_labels",),
          # The block's first line: the words also appear in other blocks' operations.
          match=(r"\A[^\n]*raised InvalidNamespaceError: Invalid namespace label",),
          probe="dot_in_user_id", shows=r"InvalidNamespaceError"),
    Cause("langgraph-postgres-jsonb-nul", ("langgraph-postgres",), ("Inputs", "G1"),
          "availability", "AsyncPostgresStore.abatch (the value column is jsonb)",
          "PostgreSQL jsonb cannot hold \\u0000, so a value with NUL in a string is refused "
          "with the driver's UntranslatableCharacter, not stored",
          "await store.aput(('ns',), 'k', {'content': 'a\\x00b'})  # UntranslatableCharacter",
          "a string in the value contains U+0000",
          documented="PostgreSQL's manual (JSON types: jsonb rejects \\u0000); not in LangGraph's",
          functions=("langgraph.store.postgres.aio:AsyncPostgresStore.abatch",),
          match=(r"raised UntranslatableCharacter",), probe="nul_content",
          shows=r"UntranslatableCharacter"),
    Cause("langgraph-postgres-limit-bigint", ("langgraph-postgres",), ("Inputs",),
          "availability",
          "BasePostgresStore._prepare_batch_search_queries (LIMIT %s; with a query the inner "
          "LIMIT is limit * vectors_per_doc * 2 + 1)",
          "the limit goes into SQL LIMIT as a bigint: a plain listing fails from 2**63, and a "
          "vector search over-fetches (limit * vectors per document * 2 + 1), so it fails "
          "from about 2**62 / the number of indexed fields with NumericValueOutOfRange",
          "await store.asearch(('ns',), query='x', limit=2**62)  # bigint out of range",
          "a search with query= and limit >= (2**63 - 1) / (2 * indexed fields); without a "
          "query, limit >= 2**63",
          functions=("langgraph.store.postgres.base:BasePostgresStore."
                     "_prepare_batch_search_queries",),
          probe="huge_limits", unreachable="the adapter clamps limit and k, as SPEC.md asks",
          shows=r"NumericValueOutOfRange|out of range"),
    # Found by the partial-failure test (suite/test_faults.py): a reset connection.
    Cause("langgraph-postgres-closed-connection-wedges", ("langgraph-postgres",), ("G10",),
          "availability",
          "AsyncPostgresStore.from_conn_string (without pool_config: one psycopg "
          "AsyncConnection for the store's whole life)",
          "without pool_config the store holds one connection and never replaces it: once "
          "PostgreSQL closes it (a restart, a failover, an idle timeout, a reset), every "
          "later call fails with 'the connection is closed' until the store is rebuilt",
          "async with AsyncPostgresStore.from_conn_string(dsn) as s: "
          "<pg_terminate_backend(its pid)>; await s.aget(ns, k)  # OperationalError, forever",
          "from_conn_string's default (no pool_config) and any closed connection; with "
          "pool_config={'min_size': 1, ...} psycopg_pool discards the broken connection and "
          "the store answers again after a failed call or two (the audit's adapter with "
          "pool_config={'min_size': 1, 'max_size': 4} passes the partial-failure test)",
          documented=None,
          issues=("https://github.com/langchain-ai/langgraph/issues/7304 (open): the same "
                  "'the connection is closed' on the sibling AsyncPostgresSaver, whose "
                  "from_conn_string has no pool_config; it names the store's pool_config as "
                  "the workaround",
                  "https://github.com/langchain-ai/langgraph/pull/6107 (open): reconnect a "
                  "dead single connection in the Postgres checkpointer; none found for the "
                  "store itself"),
          functions=("langgraph.store.postgres.aio:AsyncPostgresStore.from_conn_string",),
          match=(r"^G10 interruption: every fault had healed, yet [^\n]* kept failing for "
                 r"[^\n]*the connection is closed",),
          shows=r"never answered again"),
)
