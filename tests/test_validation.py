"""Input validation: every argument rejected with the right error type, allowed inputs pass."""

from __future__ import annotations

import pytest

from nomnesia.suite.contract.validation import (
    validate_append,
    validate_content,
    validate_limit,
    validate_message_id,
    validate_user_id,
)


@pytest.mark.parametrize("user_id", ["a", "x" * 256, "ann:*{}%\\'\"", "emoji 🧠", "\n", "a\u0301"])
def test_allowed_user_ids(user_id: str) -> None:
    assert validate_user_id(user_id) == user_id


@pytest.mark.parametrize(
    ("user_id", "error"),
    [("", ValueError), ("x" * 257, ValueError), ("a\x00b", ValueError), ("\ud800", ValueError),
     (None, TypeError), (b"ann", TypeError), (1, TypeError)],
)
def test_rejected_user_ids(user_id: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        validate_user_id(user_id)


def test_content_bounds() -> None:
    assert validate_content("") == ""
    assert validate_content("a\x00b") == "a\x00b"
    assert validate_content("x" * 65_536)
    with pytest.raises(ValueError):
        validate_content("x" * 65_537)
    with pytest.raises(ValueError):
        validate_content("\udfff")
    with pytest.raises(TypeError):
        validate_content(None)


@pytest.mark.parametrize("value", [True, False, 1.0, "3", None])
def test_limit_type(value: object) -> None:
    with pytest.raises(TypeError):
        validate_limit("limit", value)


@pytest.mark.parametrize("value", [0, -1])
def test_limit_value(value: int) -> None:
    with pytest.raises(ValueError):
        validate_limit("k", value)


def test_message_id() -> None:
    assert validate_message_id(None) is None
    assert validate_message_id("m" * 128) == "m" * 128
    for bad in ("", "m" * 129):
        with pytest.raises(ValueError):
            validate_message_id(bad)
    with pytest.raises(TypeError):
        validate_message_id(5)


def test_summary_role_is_not_appendable() -> None:
    with pytest.raises(ValueError, match="summary"):
        validate_append("u", "summary", "x", None)
    with pytest.raises(ValueError):
        validate_append("u", "User", "x", None)
