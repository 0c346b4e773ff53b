"""The messages a pydantic-ai run makes, for SPEC's roles, and read back as SPEC's role and
content: shared by the ``--pydantic-ai-conversations`` mapping and the checks of its store's
own promises (``_conversation_checks``)."""

from __future__ import annotations

import uuid
from typing import Any

from ._base import contract_role, text_of

__all__ = ["ROLE_OF", "TOOL", "message", "role_and_text"]

TOOL = "nomnesia"
"""The tool name a ``tool`` message's ``ToolReturnPart`` carries."""

ROLE_OF = {"user-prompt": "user", "system-prompt": "system", "tool-return": "tool",
           "text": "assistant"}
"""SPEC's role of a message, by its first part's ``part_kind``."""


def message(role: str, content: str, poison: Any = None) -> Any:
    """The message a run makes for SPEC's ``role`` holding ``content`` (``poison``, if any, in
    its ``metadata``, application-only data the store keeps with it)."""
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        TextPart,
        ToolReturnPart,
        UserPromptPart,
    )

    role = contract_role(role)
    metadata = None if poison is None else {"value": poison}
    if role == "assistant":
        return ModelResponse(parts=[TextPart(content=content)], metadata=metadata)
    part: Any
    if role == "user":
        part = UserPromptPart(content=content)
    elif role == "system":
        part = SystemPromptPart(content=content)
    else:
        part = ToolReturnPart(tool_name=TOOL, content=content, tool_call_id=str(uuid.uuid4()))
    return ModelRequest(parts=[part], metadata=metadata)


def role_and_text(found: Any) -> dict[str, str]:
    """A stored message as SPEC's role and content: its first part's kind, its parts' text
    (a message a run made may hold several parts, a system prompt before a user prompt)."""
    parts = list(getattr(found, "parts", ()) or ())
    kind = str(getattr(parts[0], "part_kind", "")) if parts else ""
    role = ROLE_OF.get(kind, kind or str(getattr(found, "kind", "")))
    return {"role": role, "content": "".join(text_of(getattr(p, "content", "")) for p in parts)}
