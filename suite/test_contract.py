"""The sequential contract (placeholder while being written)."""

from __future__ import annotations

from ._run import StoreFactory, StoreTests, expect, recorded, suite_test
from .contract import Guarantee


class TestContract(StoreTests):
    """Every method, one call at a time."""

    @suite_test
    async def test_append_then_history(self, store: StoreFactory) -> None:
        """An acknowledged append is in the history at once.

        Troubleshooting: get_history must read the tier append wrote to.
        """
        async with recorded(store) as s:
            e = await s.append_message("ann", "user", "hello")
            h = await s.get_history("ann")
            expect([x.id for x in h] == [e.id], Guarantee.READ_YOUR_WRITES,
                   "append not in history", s.log)
