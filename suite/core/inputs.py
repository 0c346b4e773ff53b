"""Adversarial and invalid inputs, shared by the suite and by anyone fuzzing a store.

The valid ones are what SPEC.md allows and what breaks stores in practice: a
user id spliced into a filter expression (Redis TAG syntax, RediSearch query
language, Milvus/Qdrant filters, SQL), ids that differ only in case or are
prefixes of each other (prefix scans, case-insensitive collations), and
contents that a backend or driver may mangle (NUL, normalisation, trimming,
size limits). The invalid ones are just outside each limit.
"""

from __future__ import annotations

import random

from ..contract import MAX_CONTENT, MAX_MESSAGE_ID, MAX_USER_ID

__all__ = [
    "ADVERSARIAL_CONTENTS",
    "ADVERSARIAL_USER_IDS",
    "INVALID_CONTENTS",
    "INVALID_KS",
    "INVALID_MESSAGE_IDS",
    "INVALID_ROLES",
    "INVALID_USER_IDS",
    "random_user_ids",
]

ADVERSARIAL_USER_IDS: tuple[str, ...] = (
    # plain, case variants, prefixes of each other
    "ann", "Ann", "ANN", "anna", "ann:", "ann ", " ann", "ann\n", "an", "a",
    # quotes and escapes
    "o'brien", 'say "hi"', "back\\slash", "\\", "\\\\", "`tick`",
    # wildcards and pattern syntax
    "*", "ann*", "%", "ann%", "_", "?", "[a-z]", ".*", "^ann$",
    # key separators and path-like ids
    ":", "::", "user:ann", "ann:1", "ann/1", "../ann", "ann\x1fb", "ann\tb",
    # braces: Redis hash tags, RediSearch TAG syntax, JSON
    "{}", "{ann}", "@user_id:{*}", "@user_id:{ann}", "-@user_id:{ann}", '{"$ne": null}',
    # filter expressions of Milvus, Qdrant, pgvector/SQL
    '" or user_id != "', "' or '1'='1", 'user_id == "ann" || true', "ann' OR 1=1 --",
    "'; DROP TABLE x; --", "ann\") or (1==1", "ann || true", "$ann", "${ann}", "%(ann)s",
    # unicode: accents, combining marks, emoji (astral), RTL, zero width
    "Zoë", "Zoe\u0308", "ß", "SS", "İstanbul", "🧠", "👩\u200d👩\u200d👧", "\u202eann",
    "ann\u200b", "\u00a0", "中文用户",
    # whitespace-only and control characters
    " ", "\n", "\r\n", "\x7f",
    # length limit: exactly 256 code points, astral ones included
    "u" * MAX_USER_ID, "🧠" * MAX_USER_ID, "u" * (MAX_USER_ID - 1),
)
"""Valid user ids that must each round-trip exactly and never see each other's entries."""

ADVERSARIAL_CONTENTS: tuple[str, ...] = (
    "", " ", "\n", "\x00", "a\x00b", "\x00" * 5, "trailing ", " leading", "\ttabbed\t",
    "line\r\nbreaks\n", "e\u0301", "\u00e9", "Zoe\u0308 and Zoë", "🧠💾", "👩\u200d👩\u200d👧",
    "\u202etxet desrever", "zero\u200bwidth", "null \\u0000 text", "'; DROP TABLE x; --",
    '{"json": [1, 2, {"a": null}]}', "@user_id:{*}", "%s %d %%", "<script>x</script>",
    "\U0010ffff", "x" * MAX_CONTENT, "🧠" * MAX_CONTENT,
)
"""Valid contents that must each round-trip exactly (no trimming, normalising or truncation)."""

_LONE_SURROGATES = ("\ud800", "a\udfffb", "\udc00")

INVALID_USER_IDS: tuple[object, ...] = (
    "", "u" * (MAX_USER_ID + 1), "🧠" * (MAX_USER_ID + 1), "a\x00b", "\x00", *_LONE_SURROGATES,
    None, 1, b"ann", ["ann"], 1.5,
)
"""User ids every method must reject with ValueError or TypeError, before any effect."""

INVALID_ROLES: tuple[object, ...] = (
    "summary", "User", "USER", " user", "user ", "", "bot", None, 1, b"user",
)
INVALID_CONTENTS: tuple[object, ...] = (
    "x" * (MAX_CONTENT + 1), "🧠" * (MAX_CONTENT + 1), *_LONE_SURROGATES, None, 1, b"text",
)
INVALID_MESSAGE_IDS: tuple[object, ...] = (
    "", "m" * (MAX_MESSAGE_ID + 1), 1, b"m", ["m"], True,
)
INVALID_KS: tuple[object, ...] = (0, -1, True, False, 1.0, 2.5, "5", None, -(2**63))
"""Invalid ``limit`` and ``k`` values (``bool`` is refused although it is an ``int``)."""


def random_user_ids(seed: int, count: int = 24) -> list[str]:
    """Random valid user ids from a hostile alphabet; the same seed gives the same ids."""
    rng = random.Random(seed)
    alphabet = [*"aA:*%{}\\'\"@|-_ .\n\t/", "é", "e\u0301", "🧠", "\u200b", "ß", "中"]
    ids: list[str] = []
    while len(ids) < count:
        size = rng.choice((1, 2, 3, 5, 8, 40, MAX_USER_ID))
        candidate = "".join(rng.choice(alphabet) for _ in range(size))[:MAX_USER_ID]
        if candidate not in ids:
            ids.append(candidate)
    return ids
