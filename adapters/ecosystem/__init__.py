"""Audits of third-party memory components: the suite run on stores we did not write.

Each module is the thinnest faithful adapter a team would write to put one
library behind the contract (``nomnesia.suite.MemoryStore``), with a
``--store`` factory; its docstring says which behaviour is the library's and
which the adapter's. The libraries come with the ``ecosystem`` extra::

    pip install 'nomnesia[ecosystem]'
    python -m pytest --pyargs nomnesia.suite --store nomnesia.adapters.ecosystem.mem0:factory
    nox -s "audit(mem0)"     # one library: suite + report + findings check
    nox -s audits            # all of them, and docs/ecosystem.md

What the suite finds is a *finding*, not a failure of this project: ``report``
writes ``docs/ecosystem.md`` and fails only when the findings differ from the
checked-in ``expected.json`` (a new failure, or a fixed one).

Importing this package imports no third-party library; :data:`AUDITS` is the
one list the nox sessions, the report and the tests read.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["AUDITS", "Audit"]


@dataclass(frozen=True)
class Audit:
    """One audited library: its ``--store`` factory and the distributions whose versions count."""

    name: str
    factory: str
    distributions: tuple[str, ...]
    title: str

    @property
    def module(self) -> str:
        return self.factory.partition(":")[0]


_P = "nomnesia.adapters.ecosystem"

AUDITS: dict[str, Audit] = {a.name: a for a in (
    Audit("langgraph-memory", f"{_P}.langgraph:memory_factory", ("langgraph",),
          "LangGraph InMemoryStore"),
    Audit("langgraph-postgres", f"{_P}.langgraph:postgres_factory",
          ("langgraph", "langgraph-checkpoint-postgres"),
          "LangGraph AsyncPostgresStore + pgvector"),
    Audit("langchain-postgres", f"{_P}.langchain_postgres:factory", ("langchain-postgres",),
          "langchain-postgres PostgresChatMessageHistory + PGVectorStore"),
    Audit("mem0", f"{_P}.mem0:factory", ("mem0ai", "qdrant-client"),
          "mem0 AsyncMemory (infer=False) on local Qdrant"),
    Audit("llama-index-redis", f"{_P}.llama_index:redis_factory",
          ("llama-index-core", "llama-index-storage-chat-store-redis"),
          "llama-index RedisChatStore + VectorStoreIndex"),
    Audit("llama-index-postgres", f"{_P}.llama_index:postgres_factory",
          ("llama-index-core", "llama-index-storage-chat-store-postgres"),
          "llama-index PostgresChatStore + VectorStoreIndex"),
)}
