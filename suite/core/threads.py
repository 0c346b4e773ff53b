"""Which worker threads are still running a call: a cancelled sync call does not stop.

A store whose ``async`` methods hand a synchronous client to ``asyncio.to_thread`` (or
``run_in_executor``) can be cancelled only on the event loop's side: the awaiting task
ends at once, while the call itself runs on in its worker thread, and may still write
after the suite has moved on. A G10 failure after such a cancel reads as the store's
defect either way, but the fix differs (a transaction the thread commits or rolls back
whole, instead of a cancel-safe await), so the message names the thread.

A ``concurrent.futures`` worker is busy when its stack holds a work item's ``run``; an
idle one waits in its queue. Reading other threads' frames (``sys._current_frames``) is
what ``faulthandler`` and py-spy's Python mode do; it needs no cooperation from the store.
"""

from __future__ import annotations

import sys
import threading
from types import FrameType

__all__ = ["busy_workers"]

_THREAD_MODULE = "concurrent/futures/thread.py"


def busy_workers() -> list[str]:
    """The names of the executor threads now running a work item (not idle in the queue)."""
    names = {t.ident: t.name for t in threading.enumerate()}
    busy = []
    for ident, frame in sys._current_frames().items():
        if ident == threading.get_ident():
            continue
        walk: FrameType | None = frame
        while walk is not None:
            code = walk.f_code
            if code.co_name == "run" and code.co_filename.replace("\\", "/").endswith(
                    _THREAD_MODULE):
                busy.append(names.get(ident, f"thread {ident}"))
                break
            walk = walk.f_back
    return sorted(busy)
