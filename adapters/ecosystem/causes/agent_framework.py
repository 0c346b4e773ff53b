"""Microsoft Agent Framework (``agent-framework-redis``, ``agent-framework-core``)."""

from __future__ import annotations

from . import Cause

__all__ = ["CAUSES"]

CAUSES: tuple[Cause, ...] = (
    Cause("agent-framework-drops-repeated-turn", ("agent-framework-redis",), ("G1",),
          "data loss",
          "RedisHistoryProvider.save_messages drops what filter_new_messages (agent-framework-"
          "core) takes for a replay: incoming messages whose hashes continue the stored tail",
          "a message equal to the last stored one (same role and text, no message id) is "
          "dropped silently unless its role is user: save_messages returns normally and stores "
          "nothing, so a tool that answers 'OK' twice, or an assistant that repeats itself, "
          "loses the second turn",
          "await p.save_messages(s, [Message(role='tool', contents=['OK'])]) twice; "
          "await p.get_messages(s)  # one 'OK'",
          "the message has no message_id (hashes then cover role and contents) and its role is "
          "not user; it equals the last stored message",
          documented="filter_new_messages's docstring says it handles 'full transcript replay' "
                     "and 'preserves legitimate duplicate turns'; it keeps a repeated user "
                     "message without id, but not a repeated assistant, tool or system one",
          functions=("agent_framework_redis:RedisHistoryProvider.save_messages",
                     "agent_framework._sessions:filter_new_messages"),
          probe="repeated_turn_dropped", shows=r"stored \d+ of the 2 acknowledged"),
)
