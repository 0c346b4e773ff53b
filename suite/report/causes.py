"""Causes: one root cause (a store that trims user ids) behind a dozen red tests, said once.

The dozen messages differ only in the ids and numbers they quote. A cause's *key* is
the guarantee, the kind of the first wrong operation, and the message with
every quoted value, id and number blanked out: the same bug in another test,
or for another input, gives the same key. The key only groups: what a person reads is
one of the group's own messages, with its real values (``2**64``, ``'ann '``), since a
blanked ``N**N`` tells nobody which input broke. A concurrency failure's causes are
the checker's own stable anomaly kinds (``lost``, ``torn``...).

One defect is one cause, however many tests trip on it:

- every invalid input a store accepted is one cause ("invalid input accepted", the inputs
  listed), since the store has no validation at all far more often than one gap per
  argument;
- a failure reframed under another guarantee (``G10: after get_history was cancelled ...:
  G5 ...``) whose symptom also fails a test of its own is attached to that test's cause
  ("also seen after an interruption, 4 tests"), not counted again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..contract import Guarantee
from ..core.fresh import scrub
from .labels import GUARANTEE_KEYS, failed_guarantees, guarantee_key

__all__ = ["ACCEPTED_KEY", "CAUSE_WIDTH", "cause", "cause_key", "group_causes",
           "guarantee_of_text", "normalise", "violation_causes"]

_CALLS = ("append_message", "get_history", "search", "compact", "forget", "consistent_state",
          "recover")
_HISTORY_CALLS = {"append": "append_message", "read": "get_history"}
_CALL = re.compile(r"\b(" + "|".join(_CALLS) + r")\b")
# A Python repr of a string, whole or as the suite shortens it ('abc...(300 chars)').
# An apostrophe inside a word ("user's") opens nothing.
_QUOTED = re.compile(r"""(?<!\w)'(?:[^'\\\n]|\\.)*?(?:'|\\?\.\.\.\(\d+ chars\))"""
                     r"""|(?<!\w)"(?:[^"\\\n]|\\.)*?(?:"|\\?\.\.\.\(\d+ chars\))""")
_BRACKETED = re.compile(r"\[[^\[\]\n]*\]|\{[^{}\n]*\}|<[^<>\n]*>")
_HEXISH = re.compile(r"\b(?=[0-9a-f-]*\d)[0-9a-f][0-9a-f-]{7,}\b")
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?s?\b")
_HINT = re.compile(r"\s*\((?:seed \d+: replay|replay with)[^)]*\)")
# "user_id=' ann' was accepted", "an invalid role 'bot' was accepted, not refused"
_ACCEPTED = re.compile(r"^(?:an invalid )?(.{1,100}?) was accepted\b")
ACCEPTED_KEY = "Inputs -: invalid input accepted"
# "append_message.role=1 raised UnreadableResult, not ValueError or TypeError"
_WRONG_ERROR = re.compile(r"^(.{1,100}?) raised (\w+), not ValueError or TypeError")
CAUSE_WIDTH = 140


def normalise(text: str) -> str:
    """A message's first line with the values blanked: what stays the same across inputs."""
    line = next((ln.strip() for ln in text.strip().splitlines() if ln.strip()), "")
    line = scrub(line)  # a fresh id's token (fresh.Namespace), if a store's message quotes it
    line = _HINT.sub("", line)
    line = _QUOTED.sub("…", line)
    for _ in range(3):  # nested brackets, innermost first
        line = _BRACKETED.sub(lambda m: m.group(0)[0] + "…" + m.group(0)[-1], line)
    line = _HEXISH.sub("…", line)
    line = _NUMBER.sub("N", line)
    line = re.sub(r"…(?:, …)+(?: \.\.\.)?", "…", line)  # a list of blanked values is one
    line = re.sub(r"\s+", " ", line).strip(" :")
    return line if len(line) <= CAUSE_WIDTH else line[:CAUSE_WIDTH - 1] + "…"


def cause_key(guarantee: str, op: str | None, detail: str) -> str:
    """``G9 get_history: get_history(…) returned an entry of user …``: stable across inputs.

    ``op`` is the kind of the first wrong operation: the first store method the
    message names, else the last call before the check failed.
    """
    named = _CALL.search(detail.strip().splitlines()[0] if detail.strip() else "")
    kind = named.group(1) if named else (op or "-")
    return f"{guarantee} {kind}: {normalise(detail)}"


def cause(guarantee: Guarantee | str, op: str | None, detail: str,
          label: str | None = None) -> dict[str, Any]:
    """One cause as the JSON report keeps it: key, guarantee, the kind of call, the message
    (its real values), and the input if any."""
    key = guarantee_key(guarantee) or "unlabelled"
    first = (detail.strip().splitlines() or [""])[0]
    named = _CALL.search(first)
    found = {"key": cause_key(key, op, detail), "guarantee": key,
             "op": named.group(1) if named else (op or "-"), "message": first[:500]}
    accepted = _ACCEPTED.match(first) if key == "Inputs" else None
    wrong = _WRONG_ERROR.match(first) if key == "Inputs" else None
    if accepted:
        found["key"] = ACCEPTED_KEY
        found["summary"] = ("accepted (the profile promises to refuse invalid input: one "
                            "cause, not one per input)")
        label = label or accepted.group(1)
    elif wrong:  # one cause per exception type, whichever invalid value raised it
        found["key"] = f"Inputs -: invalid input raised {wrong.group(2)}, not ValueError or " \
                       "TypeError"
        found["summary"] = f"raised {wrong.group(2)}, not ValueError or TypeError"
        label = label or wrong.group(1)
    if label:
        found["input"] = label
    return found


def violation_causes(exc: BaseException) -> list[dict[str, Any]]:
    """The causes of a suite failure: one per failing input, anomaly kind, or the failure."""
    guarantee = getattr(exc, "guarantee", None)
    if not isinstance(guarantee, Guarantee):
        return [cause(guarantee_of_text(str(exc)), None, f"{type(exc).__name__}: {exc}")]
    parts = getattr(exc, "parts", None) or []
    if parts:
        return [cause(v.guarantee, v.op, v.detail, label) for label, v in parts]
    anomalies = [a for a in getattr(exc, "anomalies", None) or []
                 if isinstance(getattr(a, "guarantee", None), Guarantee)]
    if anomalies:  # a concurrency failure: one cause per kind of anomaly in the history
        return [_anomaly_cause(a) for a in anomalies]
    found = cause(guarantee, getattr(exc, "op", None), str(getattr(exc, "detail", exc)))
    within = getattr(exc, "within", None)
    if within is not None and within.guarantee is not guarantee:
        symptom = violation_causes(within)
        if len(symptom) == 1:  # the reframed failure's own cause, to attach it to
            found["within"] = symptom[0]["key"]
    return [found]


def _anomaly_cause(anomaly: Any) -> dict[str, Any]:
    """The checker's own stable kind (``missing``, ``search-miss``...) is the cause: its
    messages quote history indexes and short ids that no blanking makes equal."""
    key = guarantee_key(anomaly.guarantee) or "unlabelled"
    kind = str(getattr(anomaly, "kind", "") or "").split(":", 1)[0]
    found = cause(anomaly.guarantee, _anomaly_op(anomaly), str(anomaly.message))
    if kind:
        found["key"] = f"{key} {_anomaly_op(anomaly) or '-'}: {kind}"
        found["kind"] = kind
    return found


def _anomaly_op(anomaly: Any) -> str | None:
    ops = getattr(anomaly, "ops", None) or []
    f = getattr(ops[-1], "f", None) if ops else None
    return _HISTORY_CALLS.get(str(f), str(f)) if f else None


def guarantee_of_text(text: str) -> str:
    """The first guarantee a failure's text names, else ``unlabelled``."""
    named = failed_guarantees(text)
    return named[0] if named else "unlabelled"


def group_causes(failures: Iterable[tuple[str, Iterable[Mapping[str, Any]]]]
                 ) -> list[dict[str, Any]]:
    """Failures (nodeid, causes) grouped by cause, the cause with most tests first.

    A reframed failure (``within``) joins the cause of its symptom when that symptom also
    failed a test directly: it is listed there under ``also`` (guarantee -> tests).
    """
    failures = [(nodeid, list(causes)) for nodeid, causes in failures]
    direct = {str(f.get("key", "")) for _, causes in failures for f in causes
              if not f.get("within")}
    groups: dict[str, dict[str, Any]] = {}
    attached: list[tuple[str, Mapping[str, Any]]] = []
    for nodeid, causes in failures:
        for found in causes:
            if found.get("within") in direct:
                attached.append((nodeid, found))
                continue
            key = str(found.get("key", ""))
            group = groups.setdefault(key, {
                "cause": key, "guarantee": found.get("guarantee", "unlabelled"),
                "op": found.get("op", "-"), "example": found.get("message", ""),
                "tests": [], "inputs": []})
            for field in ("kind", "summary"):  # the checker's kind; how many inputs did what
                if found.get(field):
                    group[field] = found[field]
            if nodeid not in group["tests"]:
                group["tests"].append(nodeid)
            if found.get("input") and found["input"] not in group["inputs"]:
                group["inputs"].append(found["input"])
    for nodeid, found in attached:
        also = groups[str(found["within"])].setdefault("also", {})
        tests = also.setdefault(str(found.get("guarantee", "unlabelled")), [])
        if nodeid not in tests:
            tests.append(nodeid)
    return sorted(groups.values(), key=lambda g: (-len(g["tests"]), -len(g["inputs"]),
                                                  _order(g["guarantee"]), g["cause"]))


def _order(key: str) -> int:
    return GUARANTEE_KEYS.index(key) if key in GUARANTEE_KEYS else len(GUARANTEE_KEYS)
