"""Fresh ids: every user and message id a test writes is new (SPEC.md, "What the suite may
assume").

A team points the suite at its own factory, and that factory often opens the team's
real, persistent database (``SQLiteSession(sid, "app.db")``, one file for the run).
With fixed ids (``ann``, ``Ann`` ...) every test would read what earlier tests, or an
earlier run, wrote under the same ids, and report it as the store's defect. So every
store the suite opens gets a :class:`Namespace`: one token, unique to that opening of that
test of that run, that ``LoggedStore`` applies to every user and message id on its way to
the store.

The token is applied the same way to every id of the store, so an adversarial id keeps its
shape and its relationships with the others (``ann`` stays a prefix of ``anna`` and a case
variant of ``Ann``; ``ann*`` still matches ``anna`` as a glob; ``" ann"`` still trims to
``ann``):

- it goes in front of the id, after any leading whitespace or format characters (so a
  leading space stays leading, and a wildcard or a ``LIKE`` pattern can only reach ids
  of the same test);
- a whitespace-only id stays whitespace-only: its token is spelled in Unicode spaces;
- an id that the token would push past SPEC's length limit keeps its length instead (the
  token replaces as many characters right after it), so ``"u" * 256`` is still exactly
  at the limit;
- an invalid id (empty, too long, not a ``str`` ...) is passed unchanged: it must stay
  invalid, and the store must refuse it.

The operation log (``History``) records the ids as the store received them, and every
report prints that log; the tests themselves, and their failure messages, speak of the
suite's own ids (``ann``), so that the same defect reads the same in every run. An entry's
``user_id``, ``id`` and ``covers`` come back from the store in the store's terms and are
read back through :meth:`Namespace.back`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import secrets
import string
import time
import unicodedata
from collections.abc import Iterable
from typing import Any

from ..contract import MAX_MESSAGE_ID, MAX_USER_ID, Entry, EntryLike

__all__ = ["RUN", "Namespace", "scrub"]

_ALPHABET = string.digits + string.ascii_lowercase
RUN = "".join(secrets.choice(_ALPHABET) for _ in range(8))
"""This process's part of every token: random, so that no two runs (nor two xdist workers)
share one, whatever seed they replay."""
_COUNTER = itertools.count(1)

_SPACES = "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u3000" \
          "\u205f\u202f\u1680\u2028"
"""Sixteen whitespace characters (``str.isspace``): a whitespace-only id's token, one per
hex digit."""

_TOKEN = re.compile(re.escape(RUN) + r"[0-9a-z]+_")
_SPACED = re.compile(f"[{_SPACES}]{{12,}}")


def _base36(n: int) -> str:
    out = ""
    while True:
        n, d = divmod(n, 36)
        out = _ALPHABET[d] + out
        if not n:
            return out


def _valid(value: object, limit: int, *, nul: bool) -> bool:
    """A valid id per SPEC.md: a non-empty str of at most ``limit`` code points without a
    lone surrogate, and without NUL unless ``nul`` (a message id may hold one)."""
    if not isinstance(value, str) or not value or len(value) > limit:
        return False
    if not nul and "\x00" in value:
        return False
    return not any("\ud800" <= c <= "\udfff" for c in value)


def _lead(value: str) -> int:
    """Where the token goes: after the leading whitespace and format characters."""
    n = 0
    while n < len(value) and (value[n].isspace() or unicodedata.category(value[n]) == "Cf"):
        n += 1
    return n


def scrub(text: str) -> str:
    """``text`` without this process's tokens: a report's cause must read the same in
    every run, and a store's own message may quote an id unquoted."""
    return _SPACED.sub("", _TOKEN.sub("", text))


class Namespace:
    """The ids of one store opened by one test: each suite id and the id the store gets."""

    def __init__(self, token: str) -> None:
        self.token = token
        digest = secrets.token_hex(6)
        self.spaced = "".join(_SPACES[int(d, 16)] for d in digest)
        """The token of a whitespace-only id: twelve Unicode spaces."""
        self._out: dict[str, dict[str, str]] = {"user": {}, "message": {}}
        self._back: dict[str, dict[str, str]] = {"user": {}, "message": {}}
        self.written: dict[str, None] = {}
        """Store user ids appended to, in order: what :meth:`clean` forgets."""

    @classmethod
    def new(cls) -> Namespace:
        """A namespace no other store of any run gets."""
        return cls(f"{RUN}{_base36(next(_COUNTER))}_")

    def __repr__(self) -> str:
        return f"Namespace({self.token!r})"

    def _fresh(self, value: str, limit: int, kind: str) -> str:
        known = self._out[kind].get(value)
        if known is not None:
            return known
        if value in self._back[kind]:  # already the store's (an op's user, in a report)
            return value
        at = _lead(value)
        token = self.spaced if at == len(value) else self.token
        lead, core = value[:at], value[at:]
        if len(value) + len(token) > limit:  # keep SPEC's limit: the token replaces
            drop = len(token)                # as many characters, right after it
            take = min(drop, len(core))
            core, drop = core[take:], drop - take
            lead = lead[:len(lead) - drop]
        made = lead + token + core
        other = self._back[kind].get(made)
        if other is not None and other != value:  # pragma: no cover - needs crafted ids
            raise RuntimeError(f"nomnesia: ids {other!r} and {value!r} got the same fresh id")
        self._out[kind][value] = made
        self._back[kind][made] = value
        return made

    def user(self, value: Any) -> Any:
        """The user id the store gets for the suite's ``value`` (an invalid one unchanged)."""
        return (self._fresh(value, MAX_USER_ID, "user")
                if _valid(value, MAX_USER_ID, nul=False) else value)

    def message(self, value: Any) -> Any:
        """The message id the store gets for ``value`` (``None`` and invalid ones unchanged)."""
        return (self._fresh(value, MAX_MESSAGE_ID, "message")
                if _valid(value, MAX_MESSAGE_ID, nul=True) else value)

    def back(self, value: Any, kind: str = "user") -> Any:
        """The suite's id for a user (``kind``) or message id the store returned; one the
        suite never sent loses this namespace's token (a store that changed an id is judged
        on the change alone)."""
        if not isinstance(value, str):
            return value
        known = self._back[kind].get(value)
        if known is not None:
            return known
        if self.token in value:
            return value.replace(self.token, "", 1)
        if self.spaced in value:
            return value.replace(self.spaced, "", 1)
        return value

    def entry(self, e: EntryLike) -> EntryLike:
        """``e`` as the suite reads it: the same object unless one of its ids was ours."""
        try:
            user, eid, covers = e.user_id, e.id, tuple(e.covers)
        except Exception:
            return e  # not an entry: the tests judge it as it is
        back = self.back
        new_user, new_id = back(user), back(eid, "message")
        new_covers = tuple(back(c, "message") for c in covers)
        if new_user is user and new_id is eid and all(a is b for a, b in zip(new_covers, covers,
                                                                             strict=True)):
            return e
        return Entry(new_id, new_user, e.seq, e.role, e.content, new_covers)

    def entries(self, found: Iterable[EntryLike]) -> list[EntryLike]:
        return [self.entry(e) for e in found]

    def wrote(self, user: Any) -> None:
        if isinstance(user, str):
            self.written[user] = None

    async def clean(self, store: Any, within: float) -> None:
        """Forget every user this namespace wrote to, on ``store`` (the store as the suite
        calls it), within ``within`` seconds: best effort, never a finding.

        A team's database keeps no test data once a test ends. Nothing here is recorded or
        judged: the test's verdict is already made, and a store that hangs or raises here
        has been (or will be) judged by the tests that call ``forget``.
        """
        forget = getattr(store, "forget", None)
        if not callable(forget) or not self.written:
            return
        deadline = time.monotonic() + within
        for user in list(self.written):
            left = deadline - time.monotonic()
            if left <= 0:
                return
            with contextlib.suppress(Exception):
                await asyncio.wait_for(forget(user), left)
        self.written.clear()
