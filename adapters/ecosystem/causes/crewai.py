"""Causes of the CrewAI audits: ``LanceDBStorage`` through ``--crewai-storage`` and the unified
``Memory`` on it through ``--crewai-memory`` (crewai 1.15.44).

``Memory.remember_many`` saves on a background executor and returns at once; ``recall``,
``reset`` and ``close`` wait for the queued saves (``drain_writes``), ``forget`` does not.
And ``LanceDBStorage`` makes its table from the first record it saves.
"""

from __future__ import annotations

from . import Cause

__all__ = ["CAUSES"]

BOTH = ("crewai-lancedb", "crewai-memory")
MEMORY = ("crewai-memory",)
_M = "crewai.memory.unified_memory:Memory"
_L = "crewai.memory.storage.lancedb_storage:LanceDBStorage"

CAUSES: tuple[Cause, ...] = (
    Cause("crewai-forget-races-remember-many", MEMORY, ("G2", "G8"), "corruption",
          "Memory.forget deletes from the storage at once (self._storage.delete), without "
          "drain_writes(); Memory.remember_many has only queued its save on _save_pool "
          "(_submit_save), which lands after the delete",
          "a memory remembered with remember_many just before forget() is saved after the "
          "delete: the next recall (which drains first) or list_records returns what the "
          "user asked to forget. reset() and reset_all() drain first (crewAI PR #6195 fixed "
          "the same race there); forget() does not",
          "memory.remember_many(['card 4111'], scope='/user/ann', categories=[], "
          "importance=0.5); memory.forget(scope='/user/ann'); memory.drain_writes(); "
          "memory.list_records(scope='/user/ann')  # ['card 4111']",
          "a forget while a remember_many save of that scope is still queued (one worker "
          "saves in order, each save embeds and searches first, so a burst of remember_many "
          "is queued for a while); any storage",
          documented=None,
          issues=("https://github.com/crewAIInc/crewAI/issues/7290 (open): forget() does not "
                  "wait for pending remember_many saves",
                  "https://github.com/crewAIInc/crewAI/pull/7291 (open): forget drains first",
                  "https://github.com/crewAIInc/crewAI/pull/6195 (merged): reset drains first"),
          functions=(f"{_M}.forget", f"{_M}.remember_many", f"{_M}._submit_save"),
          # After the forget the suite's model holds nothing of the user, so a resurrected
          # memory reads as forgotten (G8) in the concurrency checker and as a phantom entry
          # (G2) where every third hostile user id is forgotten right after its appends.
          match=(r"^(?:G8 forget: (?:read|search) \d+ [^\n]*written before forget \d+ began"
                 r"|G2 exactly once: user id [^\n]*: phantom entry)",),
          racy=True,
          shows=r"forgotten memory came back"),
    Cause("crewai-empty-first-memory-fixes-dim", MEMORY, ("G1",), "data loss",
          "embed_texts leaves empty and whitespace-only content unembedded ([]); "
          "LanceDBStorage.save then makes the table with _ensure_table(vector_dim=None), "
          "which falls back to DEFAULT_VECTOR_DIM (3072); later saves raise "
          "EmbeddingDimensionMismatchError in Memory's background save",
          "when the first memory a LanceDB store saves is empty or whitespace, the table is "
          "made 3072 wide; with any embedder of another size every later memory fails to "
          "save, and remember_many, which has already returned, reports it only as a "
          "MemorySaveFailedEvent: acknowledged memories are gone",
          "memory.remember_many([''], ...); memory.remember_many(['ann likes jazz'], ...); "
          "memory.drain_writes(); memory.list_records()  # [''] only",
          "a new LanceDB store whose first memory is empty or whitespace, with an embedder "
          "that is not 3072 wide (text-embedding-3-small, Ollama, a custom callable); "
          "OpenAI's default text-embedding-3-large happens to fit",
          documented="drain_writes's docstring: background save failures 'are already "
                     "reported through MemorySaveFailedEvent and should not fail the task'; "
                     "nothing says an empty memory fixes the table's width",
          functions=("crewai.memory.types:embed_texts", f"{_L}.save", f"{_L}._ensure_table",
                     f"{_M}.remember_many"),
          # the content the suite names is empty or whitespace only ('', ' ', '\n')
          match=(r"^G1 durability: content #\d+ '(?:\s|\\[nrt])*': acknowledged appends "
                 r"are not live",),
          shows=r"later memories lost"),
    Cause("crewai-lancedb-k-overflow", BOTH, ("Inputs",), "availability",
          "LanceDBStorage.search and list_records hand limit to LanceDB's query builder as "
          "given (query.limit(limit)); Memory.recall passes its limit through",
          "a search (or recall) with k of 2**32 or more raises OverflowError ('out of range "
          "integral type conversion attempted') instead of returning every match",
          "storage.search(vector, scope_prefix='/user/ann', limit=2**32)  # OverflowError",
          "a limit of 2**32 or more (2**31 works)",
          functions=(f"{_L}.search", f"{_L}.list_records", f"{_M}.recall"),
          match=(r"raised OverflowError: out of range integral type conversion attempted",),
          shows=r"OverflowError"),
    Cause("crewai-unchecked-inputs", BOTH, ("Inputs",), "contract gap",
          "no check of scope, content or limit values (MemoryRecord accepts any str; "
          "LanceDBStorage escapes scopes for LIKE and stores them as given)",
          "user ids and contents outside the contract (empty, over 256 or 65,536 code points, "
          "NUL, lone surrogates) and k of 0 or less are stored or searched as given, not "
          "refused with ValueError",
          "memory.remember_many(['x' * 70000], scope='/user/')  # stored", "always",
          match=(r"^Inputs: [^\n]*=[^\n]* was accepted",), kind="mapping"),
)
