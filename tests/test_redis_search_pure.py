"""The parts of the RediSearch index that build syntax, tested without an engine.

No Redis query engine runs here (it needs Docker or Redis Stack), so what can
go wrong without one is checked here: TAG escaping, the FT.CREATE schema, the
KNN query and reply parsing. The live path is in tests/test_indexes.py and
runs when NOMNESIA_REDIS_SEARCH_URL is set.
"""

from __future__ import annotations

import re
import struct

import pytest

from nomnesia.adapters.indexes._common import user_key
from nomnesia.adapters.indexes.redis_search import (
    doc_key,
    escape_tag,
    knn_query,
    parse_search,
    schema_args,
)

ADVERSARIAL = ['" or user_id != "', "ann", "anna", "*", "{}", "\\", "@user_id:{*}",
               "a b", "a,b", "x|y", "-neg", "$p", "😀" * 256, "a" * 256, "'", "%", "}{"]


def _unescape(escaped: str) -> str:
    return re.sub(r"\\(.)", r"\1", escaped, flags=re.DOTALL)


@pytest.mark.parametrize("value", ADVERSARIAL)
def test_escape_tag_leaves_no_bare_special(value: str) -> None:
    escaped = escape_tag(value)
    assert _unescape(escaped) == value
    # Outside of escape pairs only [A-Za-z0-9_] and non-ASCII remain: RediSearch reads
    # non-ASCII as word characters, and an escaped one matches nothing (test_engines_new.py).
    assert re.fullmatch(r"(?:\\.|[A-Za-z0-9_]|[^\x00-\x7f])*", escaped, flags=re.DOTALL)


def test_escape_tag_keeps_plain_words() -> None:
    assert escape_tag("abc_123") == "abc_123"
    assert escape_tag("a-b c") == "a\\-b\\ c"
    assert escape_tag("{*}") == "\\{\\*\\}"


def test_schema_is_a_case_sensitive_tag_and_a_cosine_vector() -> None:
    args = schema_args("nm_abc", 384)
    assert args[:7] == ["FT.CREATE", "nm_abc:idx", "ON", "HASH", "PREFIX", 1, "nm_abc:s:"]
    assert args[args.index("user") + 1: args.index("user") + 3] == ["TAG", "CASESENSITIVE"]
    assert args[args.index("vec") + 1: args.index("vec") + 4] == ["VECTOR", "FLAT", 6]
    assert args[args.index("DIM") + 1] == 384
    assert args[args.index("DISTANCE_METRIC") + 1] == "COSINE"
    assert schema_args("nm_abc", 8, "HNSW")[args.index("vec") + 2] == "HNSW"
    with pytest.raises(ValueError):
        schema_args("nm_abc", 8, "IVF")


@pytest.mark.parametrize("user_id", ADVERSARIAL)
def test_knn_query_holds_only_the_hashed_user(user_id: str) -> None:
    blob = struct.pack("<4f", 1, 0, 0, 0)
    args = knn_query("nm_abc", user_id, blob, 7)
    query = args[2]
    assert isinstance(query, str)
    assert query == f"(@user:{{{user_key(user_id)}}})=>[KNN $k @vec $blob AS dist]"
    params = args[args.index("PARAMS"): args.index("PARAMS") + 6]
    assert params == ["PARAMS", 4, "k", 7, "blob", blob]
    assert args[-2:] == ["DIALECT", 2]
    assert args[args.index("LIMIT") + 1: args.index("LIMIT") + 3] == [0, 7]


@pytest.mark.parametrize("bad", [0, -3])
def test_knn_query_rejects_bad_k(bad: int) -> None:
    with pytest.raises(ValueError):
        knn_query("nm_abc", "u", b"", bad)


def test_doc_keys_are_hex_and_distinct() -> None:
    keys = {doc_key("nm_abc", u, e) for u in ADVERSARIAL for e in ("e1", "e\x00", "*")}
    assert len(keys) == len(ADVERSARIAL) * 3
    assert all(re.fullmatch(r"nm_abc:s:[0-9a-f]{64}:[0-9a-f]{64}", k) for k in keys)


def test_parse_search_keeps_only_the_users_rows() -> None:
    reply: list[object] = [
        3,
        b"k1", [b"dist", b"0", b"uid", b"anna", b"eid", b"e1"],
        b"k2", [b"uid", b"ann", b"eid", b"e2"],
        b"k3", [b"eid", "é".encode(), b"uid", b"anna"],
    ]
    assert parse_search(reply, "anna") == ["e1", "é"]
    assert parse_search([0], "anna") == []
