"""langchain-postgres: ``PostgresChatMessageHistory`` and ``PGVectorStore``."""

from __future__ import annotations

from . import Cause

__all__ = ["CAUSES"]

LP = ("langchain-postgres",)

CAUSES: tuple[Cause, ...] = (
    Cause("langchain-clear-then-add", LP,
          ("G1", "G3", "G4", "G5", "G6", "G7", "G8", "G10", "G11"), "contract gap",
          "PostgresChatMessageHistory.aclear + aadd_messages (no atomic replace)",
          "the only way to replace messages is aclear() then aadd_messages(), two commits: a "
          "reader between them sees an empty history, an append between them is lost, a "
          "cancel between them wipes the session; a compaction that read before a forget "
          "writes the forgotten messages back, and an append it overwrites stays in the index",
          "await h.aclear(); <cancelled here>  # every message of the session is gone",
          "a team rewrites a session (compaction, summarising) while others write to it",
          # G11: what a compaction overwrote is gone from the chat, not from the index.
          # G2/G6 "twice": a compaction re-adds the messages it kept, and so does another.
          match=(r"^G(?:1 durability|2 exactly once|3 read your writes|4 search|5 order|"
                 r"6 idempotent appends: read \d+ .* twice|7 atomic compaction|"
                 r"8 forget: read \d+ .* written before forget|"
                 r"10 interruption: an interrupted compaction|"
                 r"11 quiescent consistency)",),
          kind="mapping", yields_to=("langchain-jsonb-nul", "langchain-caller-connection")),
    Cause("langchain-jsonb-nul", LP, ("Inputs", "G1"), "availability",
          "PostgresChatMessageHistory.aadd_messages (the message column is jsonb)",
          "PostgreSQL jsonb cannot hold \\u0000, so content with NUL is refused with the "
          "driver's UntranslatableCharacter, not stored",
          "await h.aadd_messages([HumanMessage('a\\x00b')])  # UntranslatableCharacter",
          "a message's content contains U+0000",
          documented="PostgreSQL's manual (JSON types: jsonb rejects \\u0000); not in "
                     "langchain-postgres's",
          functions=("langchain_postgres.chat_message_histories:"
                     "PostgresChatMessageHistory.aadd_messages",),
          match=(r"UntranslatableCharacter|InFailedSqlTransaction",), probe="nul_content",
          shows=r"UntranslatableCharacter"),
    Cause("langchain-no-rollback", LP, ("G12",), "availability",
          "PostgresChatMessageHistory.aadd_messages (executemany, then commit; no rollback "
          "on error)",
          "a failed insert leaves the caller's connection in an aborted transaction, so every "
          "later call of every history sharing that connection fails with "
          "InFailedSqlTransaction until the caller rolls back",
          "await h.aadd_messages([HumanMessage('a\\x00b')]); await h.aget_messages()  "
          "# InFailedSqlTransaction",
          "the connection has autocommit off (psycopg's default for a connection the caller "
          "opens); with autocommit=True each statement is its own transaction and nothing stays "
          "aborted",
          functions=("langchain_postgres.chat_message_histories:"
                     "PostgresChatMessageHistory.aadd_messages",),
          match=(r"InFailedSqlTransaction",), probe="nul_poisons",
          shows=r"InFailedSqlTransaction"),
    Cause("langchain-k-bigint", LP, ("Inputs",), "availability",
          "AsyncPGVectorStore.__query_collection (LIMIT :dense_limit)",
          "k goes into SQL LIMIT as a bigint: k=2**63 or more raises DataError "
          "(NumericValueOutOfRange)",
          "await vectors.asimilarity_search('x', k=2**64)  # bigint out of range",
          "k >= 2**63",
          functions=("langchain_postgres.v2.async_vectorstore:"
                     "AsyncPGVectorStore._AsyncPGVectorStore__query_collection",),
          probe="huge_limits", unreachable="the adapter clamps limit and k, as SPEC.md asks",
          shows=r"NumericValueOutOfRange|out of range"),
    # Found by the partial-failure test (suite/test_faults.py): a reset connection. The
    # library never opens a connection, so this is the caller's to handle, not its defect.
    Cause("langchain-caller-connection", LP, ("G10", "G11"), "contract gap",
          "PostgresChatMessageHistory(async_connection=...) (runs on the caller's one "
          "connection, never opens another)",
          "the history runs on the psycopg connection the caller hands it and leaves "
          "reconnecting to the caller: with one connection for the process, as the README "
          "shows, a connection the server closed fails every later call with 'the connection "
          "is closed'",
          "h = PostgresChatMessageHistory(t, sid, async_connection=conn); "
          "<pg_terminate_backend(conn's pid)>; await h.aget_messages()  # closed, forever",
          "the caller keeps one connection (the README's pattern) and the server closes it: a "
          "restart, a failover, an idle timeout, a reset; a connection taken from a pool per "
          "call does not wedge",
          documented="README (ChatMessageHistory): the caller opens the connection and passes "
                     "it in; nothing says what to do when it closes",
          match=(r"^G1[01] [^\n]*the connection is closed",), kind="mapping"),
)
