"""The seed's scenario, as a team writes it with nomnesia.testing (docs/testing.md)."""

import asyncio
import contextlib

from nomnesia.testing import check, eventually, record

USER = "ann"


async def scenario(open_store, fault, engine):
    async with open_store() as raw:
        store = record(raw)

        async def writer(name, first, last):
            for i in range(first, last):  # a call the fault fails is indeterminate (recorded)
                with contextlib.suppress(Exception):
                    await store.append_message(USER, "user", f"{name} note {i}")

        async with fault(engine):  # held while both write and a compaction runs
            await asyncio.gather(writer("a", 0, 3), writer("b", 0, 3),
                                 store.compact(USER), return_exceptions=True)
        await asyncio.gather(writer("a", 3, 6), writer("b", 3, 6), store.compact(USER))

        async def answers():  # G10: once healed, the store answers again
            await store.recover()
            return await store.get_history(USER, 100) is not None

        await eventually(answers, timeout=10, what="G10 the store answers again")
        verdict = check(store)
        assert verdict, str(verdict)  # each anomaly names its guarantee, with the smallest history
        await eventually(lambda: store.consistent_state(USER), timeout=10,
                         what="G11 quiescent consistency")


def test_two_writers_and_a_compaction_under_a_fault(open_store, nomnesia_fault, index_engine):
    asyncio.run(scenario(open_store, nomnesia_fault, index_engine))
