"""Seeded synthetic histories of a keyed store (``seed``/``history``/``memory`` profiles).

The keyed checker's differential test and its benchmark need histories that are large,
concurrent and reproducible, with anomalies when asked for: recording the workload
against a real store takes minutes for 150k events and never breaks on purpose. This
simulates one instead: processes that overlap in time, several users, appends, limited
reads, searches, compactions that leave a summary, forgets, interrupted calls and
``recover``. A call takes effect at its completion, so with ``faults=0`` the history is
linearizable and a correct checker finds nothing in it; ``faults`` is the chance that a
read or an append misbehaves (loses, reorders, repeats, leaks, resurrects), so the
checkers have something to disagree about.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from nomnesia.suite.core.history import Op, Rec

SUMMARY = "summary"


@dataclass
class _Log:
    """One user's store: summaries (oldest first), then live messages (oldest first)."""

    summaries: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    forgotten: list[str] = field(default_factory=list)


@dataclass
class _Pending:
    f: str
    user: str
    arg: Any


def generate(seed: int, events: int, *, users: int = 3, processes: int = 6,
             faults: float = 0.0, forgets: bool = True, recover: bool = True) -> list[Op]:
    """About ``events`` ops (never fewer; calls still open at the end stay open)."""
    rng = random.Random(seed)
    ops: list[Op] = []
    logs = {f"u{i}": _Log() for i in range(users)}
    pending: dict[int, _Pending] = {}
    counter = 0
    summaries = 0

    def emit(p: int, type_: str, f: str, user: str | None, value: Any,
             error: str | None = None) -> None:
        ops.append(Op(len(ops), p, type_, f, user, value, len(ops) * 10**6, error))

    def entries(log: _Log, user: str) -> list[Rec]:
        out = [Rec(s, n, SUMMARY, (), user) for n, s in enumerate(log.summaries)]
        base = len(out)
        out += [Rec(m, base + n, "user", (), user) for n, m in enumerate(log.messages)]
        return out

    def corrupt(result: list[Rec], user: str) -> list[Rec]:
        """One misbehaviour in a read's result (only with probability ``faults``)."""
        if not result or rng.random() >= faults:
            return result
        result = list(result)
        kind = rng.randrange(7)
        i = rng.randrange(len(result))
        if kind == 0:  # lose one, often the newest (no read has ordered it yet)
            del result[-1 if rng.random() < 0.5 else i]
        elif kind == 1 and i + 1 < len(result):  # swap two neighbours
            result[i], result[i + 1] = result[i + 1], result[i]
        elif kind == 2:  # repeat one
            result.insert(i, result[i])
        elif kind == 3:  # another user's message
            other = rng.choice([u for u in logs if u != user] or [user])
            if logs[other].messages:
                m = rng.choice(logs[other].messages)
                result.insert(i, Rec(m, -1, "user", (), rng.choice([user, other])))
        elif kind == 4:  # a forgotten message back
            if logs[user].forgotten:
                result.insert(i, Rec(rng.choice(logs[user].forgotten), -1, "user", (), user))
        elif kind == 5:  # a summary after a message
            result.insert(i, Rec(f"phantom#{rng.randrange(10**6)}", -1, SUMMARY, (), user))
        else:  # drop the oldest half (a torn compaction)
            del result[: len(result) // 2]
        return result

    while len(ops) < events or not ops:
        p = rng.randrange(processes)
        call = pending.pop(p, None)
        if call is None:
            user = rng.choice(list(logs))
            roll = rng.random()
            if roll < 0.45:
                counter += 1
                call = _Pending("append", user, f"m{counter}-{user}")
                emit(p, "invoke", "append", user, ("user", call.arg, None))
            elif roll < 0.80:
                call = _Pending("read", user, rng.choice([3, 5, 10, 50, 1000]))
                emit(p, "invoke", "read", user, call.arg)
            elif roll < 0.88:
                query = rng.choice(logs[user].messages or ["nothing"])
                call = _Pending("search", user, (query, rng.choice([1, 3, 10])))
                emit(p, "invoke", "search", user, call.arg)
            elif roll < 0.95:
                call = _Pending("compact", user, None)
                emit(p, "invoke", "compact", user, None)
            elif roll < 0.97 and forgets:
                call = _Pending("forget", user, None)
                emit(p, "invoke", "forget", user, None)
            elif recover and roll < 0.975:
                call = _Pending("recover", "", None)
                emit(p, "invoke", "recover", None, None)
            else:
                continue
            pending[p] = call
            continue
        user = call.user
        log = logs.get(user)
        if call.f == "recover":
            emit(p, "ok", "recover", None, None)
            continue
        assert log is not None
        interrupted = rng.random() < 0.01
        if call.f == "append":
            rejected = rng.random() < 0.005
            if rejected:
                emit(p, "fail", "append", user, None, "ValueError")
                continue
            lost = rng.random() < faults / 4
            if not lost and (not interrupted or rng.random() < 0.5):
                log.messages.append(call.arg)
            if interrupted:
                emit(p, "info", "append", user, None, "CancelledError")
            else:
                emit(p, "ok", "append", user, Rec(call.arg, -1, "user", (), user))
        elif call.f == "read":
            result = entries(log, user)[-call.arg:]
            emit(p, "ok", "read", user, tuple(corrupt(result, user)))
        elif call.f == "search":
            query, k = call.arg
            live = entries(log, user)
            hits = [r for r in live if r.id == query] + rng.sample(live, min(len(live), k))
            seen: dict[str, Rec] = {}
            for r in hits:
                seen.setdefault(r.id, r)
            emit(p, "ok", "search", user, tuple(list(seen.values())[:k]))
        elif call.f == "compact":
            keep = rng.choice([1, 2, 4])
            if len(log.messages) > keep and (not interrupted or rng.random() < 0.5):
                summaries += 1
                log.summaries = [f"summary#{summaries}"]
                log.messages = log.messages[-keep:]
            if interrupted:
                emit(p, "info", "compact", user, None, "CancelledError")
            else:
                emit(p, "ok", "compact", user, None)
        elif call.f == "forget":
            log.forgotten += log.messages
            log.summaries, log.messages = [], []
            emit(p, "ok", "forget", user, None)
    return ops
