"""Input validation every store can reuse, so that bad input never reaches a backend.

SPEC.md: anything outside the allowed inputs is rejected with ``ValueError`` or
``TypeError`` *before anything is written*. Running these checks first, in one
place, is the cheapest way to keep that promise in every store.
"""

from __future__ import annotations

from . import MAX_CONTENT, MAX_MESSAGE_ID, MAX_USER_ID, ROLES

__all__ = [
    "validate_append",
    "validate_content",
    "validate_limit",
    "validate_message_id",
    "validate_query",
    "validate_role",
    "validate_user_id",
]


def _has_lone_surrogate(text: str) -> bool:
    # A str holding U+D800..U+DFFF cannot be encoded as UTF-8 by any backend;
    # checking with encode() is the fastest exact test CPython offers.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _require_str(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    return value


def validate_user_id(user_id: object) -> str:
    """A non-empty str of at most 256 code points, without NUL or lone surrogates."""
    text = _require_str("user_id", user_id)
    if not text:
        raise ValueError("user_id must not be empty")
    if len(text) > MAX_USER_ID:
        raise ValueError(f"user_id has {len(text)} code points; at most {MAX_USER_ID} allowed")
    if "\x00" in text:
        raise ValueError("user_id must not contain NUL")
    if _has_lone_surrogate(text):
        raise ValueError("user_id must not contain lone surrogates")
    return text


def validate_role(role: object) -> str:
    text = _require_str("role", role)
    if text not in ROLES:
        allowed = ", ".join(sorted(ROLES))
        raise ValueError(f"role must be one of {allowed} (summary is written only by compact), "
                         f"not {text!r}")
    return text


def validate_content(content: object) -> str:
    """Any str of at most 65,536 code points; empty and NUL allowed, lone surrogates not."""
    text = _require_str("content", content)
    if len(text) > MAX_CONTENT:
        raise ValueError(f"content has {len(text)} code points; at most {MAX_CONTENT} allowed")
    if _has_lone_surrogate(text):
        raise ValueError("content must not contain lone surrogates")
    return text


def validate_message_id(message_id: object) -> str | None:
    if message_id is None:
        return None
    text = _require_str("message_id", message_id)
    if not text:
        raise ValueError("message_id must not be empty (pass None to let the store choose)")
    if len(text) > MAX_MESSAGE_ID:
        raise ValueError(
            f"message_id has {len(text)} code points; at most {MAX_MESSAGE_ID} allowed")
    if _has_lone_surrogate(text):
        # SPEC.md is silent here; no backend can store one, and the suite
        # accepts either answer (docs/contract.md records the choice).
        raise ValueError("message_id must not contain lone surrogates")
    return text


def validate_query(query: object) -> str:
    """Any str: SPEC.md sets no bound on a search query, only its type."""
    return _require_str("query", query)


def validate_limit(name: str, value: object) -> int:
    """An int >= 1; bool is refused although it is an int subclass."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, not {value}")
    return value


def validate_append(user_id: object, role: object, content: object,
                    message_id: object) -> tuple[str, str, str, str | None]:
    """Validate every argument of ``append_message`` before a store touches a backend."""
    return (validate_user_id(user_id), validate_role(role), validate_content(content),
            validate_message_id(message_id))
