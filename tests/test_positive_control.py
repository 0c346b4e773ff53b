"""Positive controls: the suite fails the seed's fragile store and passes the oracle.

If a change to the suite ever lets FragileMemoryStore pass, the suite has gone
blind; if it ever fails InMemoryStore, it raises false alarms. Both are run
in-process with pytester, and every failure must name a guarantee first.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

pytest_plugins = ("pytester",)

GUARANTEE_FIRST = re.compile(r"^(G(\d{1,2}) [a-z ]+|Inputs): ")
SUITE = ("--pyargs", "nomnesia.suite", "-p", "no:cacheprovider", "-p", "no:randomly")


def _failures(reprec: pytest.HookRecorder) -> dict[str, str]:
    return {r.nodeid: r.longreprtext for r in reprec.getreports("pytest_runtest_logreport")
            if r.failed}


def test_suite_passes_on_the_in_memory_oracle(pytester: pytest.Pytester) -> None:
    reprec = pytester.inline_run(*SUITE, "--store", "nomnesia.adapters.memory:InMemoryStore")
    failures = _failures(reprec)
    assert not failures, "\n\n".join(f"{k}\n{v}" for k, v in failures.items())
    passed, skipped, _ = reprec.listoutcomes()
    assert len(passed) >= 40
    # Only the failpoint tests may skip (the oracle declares none).
    assert all("failpoints" in r.nodeid for r in skipped), [r.nodeid for r in skipped]


def test_suite_fails_the_fragile_store_naming_guarantees(pytester: pytest.Pytester) -> None:
    reprec = pytester.inline_run(*SUITE, "--store",
                                 "nomnesia.adapters.fragile:FragileMemoryStore")
    failures = _failures(reprec)
    assert len(failures) >= 10
    named = set()
    for nodeid, text in failures.items():
        match = GUARANTEE_FIRST.match(text)
        assert match, f"{nodeid}: failure does not start with a guarantee:\n{text[:300]}"
        named.add(match.group(1).split()[0] if match.group(2) else "Inputs")
    # The fragile store's documented bugs: duplicates on retry, covered entries in
    # search, prefix leaks, stale index, no validation, lost state on cancel.
    assert {"G6", "G4", "G9", "G10", "G11", "Inputs"} <= named, named


def test_failures_show_the_operations(pytester: pytest.Pytester) -> None:
    reprec = pytester.inline_run(
        *SUITE, "--store", "nomnesia.adapters.fragile:FragileMemoryStore",
        "-k", "test_retry_with_same_message_id_returns_same_entry")
    (text,) = _failures(reprec).values()
    assert text.startswith("G6 idempotent appends: ")
    assert "operations, oldest first:" in text
    assert "append_message('ann', 'user', 'pay rent', message_id='req-1')" in text


# --------------------------------------------------------------------------- no false alarms


class LiberalStore:
    """A correct store that uses every freedom SPEC.md allows, to catch false alarms.

    Wraps the oracle: seq values with gaps and an offset, opaque ids of its own
    format for store-made ids, a ranking that puts the best match last (still
    within the top k), search that lags appends by up to ``search_staleness``,
    and whatever ``keep_last`` it is given.
    """

    def __init__(self, *, keep_last: int = 4, lag: float = 0.0) -> None:
        from nomnesia.adapters.memory import InMemoryStore

        self.inner = InMemoryStore(keep_last=keep_last)
        self.keep_last = keep_last
        self.search_staleness = lag
        self._born: dict[tuple[str, str], float] = {}

    async def __aenter__(self) -> LiberalStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _out(self, entry: Any) -> Any:
        from dataclasses import replace

        return replace(entry, seq=entry.seq * 7 + 1_000_003)

    async def append_message(self, user_id: str, role: str, content: str, *,
                             message_id: str | None = None) -> Any:
        import time
        import uuid

        if message_id is None and isinstance(user_id, str) and isinstance(content, str):
            message_id = f"urn:liberal:{uuid.uuid4()}/{{*}}'"
        entry = await self.inner.append_message(user_id, role, content, message_id=message_id)
        self._born.setdefault((user_id, entry.id), time.monotonic())
        return self._out(entry)

    async def get_history(self, user_id: str, limit: int = 10) -> list[Any]:
        return [self._out(e) for e in await self.inner.get_history(user_id, limit)]

    async def search(self, user_id: str, query: str, k: int = 5) -> list[Any]:
        import time

        hits = await self.inner.search(user_id, query, k)
        now = time.monotonic()
        visible = [e for e in hits
                   if now - self._born.get((user_id, e.id), 0.0) >= self.search_staleness]
        return [self._out(e) for e in reversed(visible)]

    async def compact(self, user_id: str) -> Any:
        summary = await self.inner.compact(user_id)
        return None if summary is None else self._out(summary)

    async def forget(self, user_id: str) -> None:
        await self.inner.forget(user_id)
        self._born = {key: t for key, t in self._born.items() if key[0] != user_id}

    async def consistent_state(self, user_id: str) -> Any:
        return await self.inner.consistent_state(user_id)

    async def recover(self) -> None:
        await self.inner.recover()

    async def aclose(self) -> None:
        await self.inner.aclose()


def keep_one() -> LiberalStore:
    return LiberalStore(keep_last=1)


def keep_seven_lagging() -> LiberalStore:
    return LiberalStore(keep_last=7, lag=0.05)


@pytest.mark.parametrize("factory", ["keep_one", "keep_seven_lagging"])
def test_no_false_alarms_on_a_store_using_specs_freedoms(pytester: pytest.Pytester,
                                                         factory: str) -> None:
    reprec = pytester.inline_run(*SUITE, "--store", f"{__name__}:{factory}")
    failures = _failures(reprec)
    assert not failures, "\n\n".join(f"{k}\n{v[:3000]}" for k, v in failures.items())


def tiered_in_memory() -> Any:
    """The project's tiered store over in-process tiers: it declares failpoints."""
    from nomnesia.adapters.archive import InMemoryArchive
    from nomnesia.adapters.memory_tiers import InMemoryIndex, InMemoryLog
    from nomnesia.adapters.tiered import TieredMemoryStore

    return TieredMemoryStore(log=InMemoryLog(), index=InMemoryIndex(), archive=InMemoryArchive())


def test_failpoint_sweeps_run_on_a_store_that_declares_failpoints(
        pytester: pytest.Pytester) -> None:
    reprec = pytester.inline_run(*SUITE, "--store", f"{__name__}:tiered_in_memory",
                                 "-k", "interruption")
    failures = _failures(reprec)
    assert not failures, "\n\n".join(f"{k}\n{v[:3000]}" for k, v in failures.items())
    passed, skipped, _ = reprec.listoutcomes()
    assert not skipped
    assert sum("failpoints" in r.nodeid for r in passed) == 6
