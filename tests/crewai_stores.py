"""Planted defects (and one planted fix) behind ``--crewai-storage`` and ``--crewai-memory``
(issue 46, items 2 and 3): CrewAI's real classes with one thing changed, so that the
options' tests can show what the suite catches and what it passes.

- :func:`delete_ignored`: ``LanceDBStorage`` whose ``delete`` deletes nothing and says so
  (``0``): what a user asked to forget is still returned (G8);
- :func:`search_unscoped`: ``LanceDBStorage`` whose ``search`` drops ``scope_prefix``: a
  search returns other scopes' records (G9);
- :func:`memory_forget_drains`: CrewAI's ``Memory`` whose ``forget`` first waits for the
  pending ``remember_many`` saves (``drain_writes()``), as ``reset`` has since crewAI
  PR #6195 and as the open PR #7291 proposes for ``forget``: the control, on which the
  forget-after-writes tests pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from crewai.memory.storage.lancedb_storage import LanceDBStorage
from crewai.memory.unified_memory import Memory

from nomnesia.suite import examples


class DeleteIgnored(LanceDBStorage):
    def delete(self, *args: Any, **kwargs: Any) -> int:
        return 0


class SearchUnscoped(LanceDBStorage):
    def search(self, query_embedding: list[float], scope_prefix: str | None = None,
               *args: Any, **kwargs: Any) -> list[Any]:
        return super().search(query_embedding, None, *args, **kwargs)


class ForgetDrains(Memory):
    def forget(self, *args: Any, **kwargs: Any) -> int:
        self.drain_writes()
        return super().forget(*args, **kwargs)


@contextmanager
def _storage(kind: type[LanceDBStorage]) -> Iterator[LanceDBStorage]:
    with examples.crewai_lancedb() as real:
        yield kind(path=real._path)


@contextmanager
def delete_ignored() -> Iterator[LanceDBStorage]:
    with _storage(DeleteIgnored) as storage:
        yield storage


@contextmanager
def search_unscoped() -> Iterator[LanceDBStorage]:
    with _storage(SearchUnscoped) as storage:
        yield storage


@contextmanager
def memory_forget_drains() -> Iterator[Memory]:
    with examples.crewai_memory() as real:
        fixed = ForgetDrains(llm=real.llm, embedder=real.embedder, storage=real._storage)
        try:
            yield fixed
        finally:
            fixed.close()
