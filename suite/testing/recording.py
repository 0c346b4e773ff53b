"""``record(store)`` and ``check(history)``: the suite's recorder and checker on a team's own
scenario.

``record`` wraps a store in the suite's recorder (``core.recorder.LoggedStore``): every call,
from any number of coroutines, becomes an invoke and an ok / fail / info in one history, and
every fault held meanwhile (``nomnesia.testing.faults``) becomes a window in it. A store of
a smaller profile (the seed's four methods, a chat history) is read through the suite's
keyed view, as the suite itself reads it. ``check`` judges the history with the suite's
checker and returns a ``core.verdict.Verdict``.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from nomnesia.suite.core import history_format
from nomnesia.suite.core.history import History, Op
from nomnesia.suite.core.profiles import ProfileError, Resolved, resolve
from nomnesia.suite.core.recorder import LoggedStore, declared_of
from nomnesia.suite.core.verdict import Verdict, judge
from nomnesia.suite.core.view import view_of

__all__ = ["Recorded", "check", "note_all", "read_history", "record", "stop_all"]

_active: list[History] = []
"""The histories being recorded now (``record`` until ``stop``): where a fault notes its
window. The plugin empties it after every test (``stop_all``), so a history never hears of
another test's faults."""
_lock = threading.Lock()


def note_all(phase: str, what: str, engine: str, effect: str = "") -> None:
    """Note a fault window's start or end in every history being recorded."""
    text = history_format.fault_note(phase, what, engine, effect)
    with _lock:
        logs = list(_active)
    for log in logs:
        log.note(text)


def stop_all() -> None:
    """Stop noting faults in any history (the plugin calls it after each test)."""
    with _lock:
        _active.clear()


class Recorded(LoggedStore):
    """A store whose every call is recorded in :attr:`history`; call it as the store itself.

    It has the four methods of the seed (``append_message``, ``get_history``, ``compact``,
    ``consistent_state``) and every other method of the protocol the store has. A smaller
    profile is read through the keyed view: results come back as entries (``role``,
    ``content``, ``seq``) whatever the store returned.
    """

    def __init__(self, store: Any, resolved: Resolved | None) -> None:
        self.store = store
        inner = store if resolved is None else view_of(store, resolved)
        super().__init__(inner, History())
        with _lock:
            _active.append(self.log)

    @property
    def history(self) -> History:
        """The recorded events (``str(history)`` lists them)."""
        return self.log

    def stop(self) -> None:
        """Stop noting faults here (the calls made through it are still recorded)."""
        with _lock:
            if any(log is self.log for log in _active):
                _active.remove(self.log)

    def check(self, **declared: Any) -> Verdict:
        """``check(self, ...)``: the verdict on what was recorded so far."""
        return check(self, **declared)

    def write(self, path: str | Path, **meta: Any) -> Path:
        """Write the history as a history file (``docs/history-format.md``)."""
        return history_format.write(path, self.log.ops, **self._declared(), meta=meta or None)

    def _declared(self) -> dict[str, Any]:
        return declared_of(self.store, self.resolved)

    async def aclose(self) -> None:
        """Stop recording faults here and close the store (its ``aclose``, if it has one)."""
        self.stop()
        close = getattr(self.store, "aclose", None)
        if callable(close):
            await close()

    def __getattr__(self, name: str) -> Any:
        """Anything else of the store (``keep_last``, its own methods) unrecorded."""
        if name.startswith("_") or name == "store":
            raise AttributeError(name)
        return getattr(self.store, name)


def record(store: Any) -> Recorded:
    """Wrap ``store`` in the suite's recorder; every call through the result is recorded.

    ``store`` is any store of any profile SPEC.md names (full, memory, history, seed).
    Faults held while it records (``with stall("redis"):``) are windows in its history.
    """
    try:
        resolved = resolve(store)
    except ProfileError:
        resolved = None  # judged as full: a missing method fails where it is called
    return Recorded(store, None if resolved is None or not resolved.keyed else resolved)


def check(history: Recorded | History | list[Op] | str | Path, *,
          keep_last: int | None = None, search_staleness: float | None = None,
          profile: str | None = None) -> Verdict:
    """Judge a history with the suite's checker: a recorded store, a ``History``, or a
    history file (``docs/history-format.md``). The store's own ``keep_last`` and
    ``search_staleness`` (or the file's header) are used unless given here."""
    if isinstance(history, Recorded):
        declared = history._declared()
        return judge(history.log, keep_last=keep_last if keep_last is not None
                     else declared["keep_last"],
                     search_staleness=search_staleness if search_staleness is not None
                     else declared["search_staleness"],
                     profile=profile or declared["profile"], compact=declared["compact"],
                     recover=declared["recover"])
    if isinstance(history, (str, Path)):
        read = read_history(history)
        return judge(read.history, keep_last=keep_last if keep_last is not None
                     else read.keep_last,
                     search_staleness=search_staleness if search_staleness is not None
                     else read.search_staleness,
                     profile=profile or read.profile, compact=read.compact,
                     recover=read.recover, source=str(history))
    return judge(history, keep_last=keep_last, search_staleness=search_staleness,
                 profile=profile or "full")


def read_history(path: str | Path) -> history_format.HistoryFile:
    """A history file of any version this nomnesia reads."""
    return history_format.load(path)
