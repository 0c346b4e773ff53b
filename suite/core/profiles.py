"""Profiles: stores that implement less are judged on what they have (SPEC.md, "Profiles").

Many real stores implement part of the protocol: the seed's four-method store,
chat-history and session stores (append, read, clear), vector memories without
compaction. The suite reads which methods a store has, picks the largest
profile it implements (the way LangGraph's checkpoint conformance suite detects
a saver's capabilities from the methods it overrides), and says so before the
first test. Each suite test declares the *features* it needs
(``@pytest.mark.needs("search")``, in the manner of SQLAlchemy's
``requirements.py``); a test whose features the profile lacks is reported *not
applicable*, with the guarantees it would have judged: never a pass, never a
failure.

A store may declare its profile (``nomnesia_profile = "seed"``, or the run's
``--nomnesia-profile seed``); it is then held to it, and a missing method is a
clear error that names it, instead of the largest profile the methods allow.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest

from ..contract import G1, G2, G3, G4, G5, G6, G7, G8, G9, G10, G11, G12, INPUTS, Guarantee

__all__ = [
    "FEATURES",
    "FULL",
    "HISTORY",
    "ITEM_PROFILE",
    "MEMORY",
    "METHODS",
    "NOT_APPLICABLE",
    "PROFILES",
    "SEED",
    "SESSION_PROFILE",
    "Profile",
    "ProfileError",
    "Resolved",
    "by_name",
    "features_of",
    "not_applicable",
    "resolve",
    "static_full",
]

METHODS: tuple[str, ...] = ("append_message", "get_history", "search", "compact", "forget",
                            "consistent_state", "recover", "aclose")
"""The protocol's eight methods, in SPEC order: "4 of 8 methods" counts these."""

FEATURES: dict[str, str] = {
    "append": "append_message(user_id, role, content)",
    "message_id": "append_message(..., message_id=...)",
    "read": "get_history(user_id, limit)",
    "search": "search(user_id, query, k)",
    "compact": "compact(user_id)",
    "forget": "forget(user_id)",
    "consistent": "consistent_state(user_id)",
    "recover": "recover()",
    "entries": "entry ids, seqs and covers (the full profile)",
    "rejects": "promise to refuse invalid input (the full and memory profiles make it)",
}
"""What a test can need, and how a not-applicable message names it."""

_METHOD_OF = {"append": "append_message", "read": "get_history", "search": "search",
              "compact": "compact", "forget": "forget", "consistent": "consistent_state",
              "recover": "recover"}


class ProfileError(Exception):
    """The store implements no profile, or lacks a method of the profile it declares."""


@dataclass(frozen=True)
class Profile:
    """One row of SPEC.md's profile table: what a store has, and what it is judged on."""

    name: str
    required: frozenset[str]
    """Features every store of this profile has."""
    optional: frozenset[str]
    """Features judged when the store has them (G6 needs ``message_id``)."""
    judged: tuple[Guarantee, ...]
    """The guarantees SPEC.md judges this profile on (INPUTS: at least valid inputs)."""
    implied: frozenset[str] = field(default_factory=frozenset)
    """Features that come with the profile rather than a method (``rejects`` for full)."""

    def __str__(self) -> str:
        return self.name


FULL = Profile("full", frozenset({"append", "message_id", "read", "search", "compact", "forget",
                                  "consistent", "recover", "entries"}), frozenset(),
               (G1, G2, G3, G4, G5, G6, G7, G8, G9, G10, G11, G12, INPUTS),
               frozenset({"rejects"}))
MEMORY = Profile("memory", frozenset({"append", "read", "search", "forget"}),
                 frozenset({"message_id", "recover"}),
                 (G1, G2, G3, G4, G5, G6, G8, G9, G10, G12, INPUTS), frozenset({"rejects"}))
SEED = Profile("seed", frozenset({"append", "read", "compact", "consistent"}), frozenset(),
               (G1, G2, G3, G5, G7, G9, G10, G11, G12, INPUTS))
HISTORY = Profile("history", frozenset({"append", "read", "forget"}), frozenset(),
                  (G1, G2, G3, G5, G8, G9, G10, G12, INPUTS))
PROFILES: tuple[Profile, ...] = (FULL, MEMORY, SEED, HISTORY)
"""Largest first: detection picks the first whose required features the store has."""


def by_name(name: str) -> Profile:
    for profile in PROFILES:
        if profile.name == name:
            return profile
    raise ProfileError(f"unknown profile {name!r}: choose one of "
                       f"{', '.join(p.name for p in PROFILES)}")


@dataclass(frozen=True)
class Resolved:
    """A store's profile, the features the suite may use on it, and how it was chosen."""

    profile: Profile
    features: frozenset[str]
    methods: tuple[str, ...]
    """The protocol methods the store has."""
    declared: bool = False

    @property
    def keyed(self) -> bool:
        """Entries known by role and content (SPEC "Profiles"), not by id: every profile
        but full."""
        return "entries" not in self.features

    def has(self, feature: str) -> bool:
        return feature in self.features

    def lacking(self, needs: Iterable[str]) -> list[str]:
        return [n for n in needs if n not in self.features]

    def headline(self) -> str:
        """``seed (4 of 8 methods)``: the line the suite prints before the first test."""
        how = "declared" if self.declared else f"{len(self.methods)} of {len(METHODS)} methods"
        return f"{self.profile.name} ({how})"

    def describe(self) -> str:
        judged = " ".join(_key(g) for g in self.profile.judged)
        missing = [f for f in ("search", "message_id", "compact", "forget", "consistent",
                               "recover") if f not in self.features]
        text = f"profile {self.headline()}; judged on {judged}"
        if "rejects" not in self.features:
            text += " (valid inputs only)"
        if missing:
            text += "; not applicable: tests that need " + ", ".join(missing)
        return text

    def turned_on(self) -> list[str]:
        """What the store's optional methods turned on, in words: a store that gained
        ``search`` is suddenly held to refusing invalid input, and nobody told its author.

        Said only when the profile was read from the methods (a declared profile is the
        author's own choice).
        """
        if self.declared:
            return []
        said = []
        if self.profile is MEMORY:
            said.append("search present: the memory profile, which promises to refuse "
                        "invalid input (SPEC Inputs: ValueError or TypeError before any "
                        "write), judged on G4 search; without search it would be the "
                        "history profile")
        if "message_id" in self.features and self.profile is not FULL:
            said.append("append_message takes message_id: judged on G6 (idempotent "
                        "retries)")
        if "recover" in self.features and self.profile is not FULL:
            said.append("recover present: the interruption tests call it before judging")
        return said

    def to_json(self) -> dict[str, Any]:
        return {"name": self.profile.name, "features": sorted(self.features),
                "methods": list(self.methods), "declared": self.declared,
                "judged": [_key(g) for g in self.profile.judged]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Resolved:
        return cls(by_name(str(data["name"])), frozenset(data["features"]),
                   tuple(data["methods"]), bool(data.get("declared")))


def static_full() -> Resolved:
    """The full profile without looking at a store: the project's own stacks implement it."""
    return Resolved(FULL, FULL.required | FULL.implied, METHODS)


def _key(g: Guarantee) -> str:
    return f"G{g.number}" if g.number else "Inputs"


def _takes_message_id(method: Any) -> bool:
    try:
        params = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        return False
    return any(p.name == "message_id" or p.kind is p.VAR_KEYWORD for p in params)


def features_of(store: object) -> tuple[frozenset[str], tuple[str, ...]]:
    """The features a store object has, read from its methods and attributes; and its methods."""
    methods = tuple(m for m in METHODS if callable(getattr(store, m, None)))
    found = {f for f, m in _METHOD_OF.items() if m in methods}
    if "append" in found and _takes_message_id(getattr(store, "append_message", None)):
        found.add("message_id")
    keep = getattr(store, "keep_last", None)
    lag = getattr(store, "search_staleness", None)
    if isinstance(keep, int) and not isinstance(keep, bool) and isinstance(lag, (int, float)) \
            and not isinstance(lag, bool):
        found.add("entries")
    return frozenset(found), methods


def resolve(store: object, declared: str | None = None) -> Resolved:
    """The store's profile: the one it (or the run) declares, else the largest it implements.

    Raises ``ProfileError`` naming what is missing: the methods of a declared
    profile, or of the smallest profiles when the store implements none.
    """
    found, methods = features_of(store)
    declared = declared or getattr(store, "nomnesia_profile", None)
    if declared is not None:
        profile = by_name(str(declared))
        missing = sorted(profile.required - found)
        if missing:
            raise ProfileError(
                f"the store {type(store).__name__} declares profile {profile.name!r} but has no "
                + "; no ".join(FEATURES[m] for m in missing))
        return Resolved(profile, _active(profile, found), methods, declared=True)
    for profile in PROFILES:
        if profile.required <= found:
            return Resolved(profile, _active(profile, found), methods)
    smallest = (SEED, HISTORY)
    needs = "; or ".join(f"{p.name}: " + ", ".join(FEATURES[f] for f in sorted(p.required - found))
                         for p in smallest)
    raise ProfileError(
        f"the store {type(store).__name__} implements no profile of SPEC.md (its methods: "
        f"{', '.join(methods) or 'none'}). The smallest profiles still need {needs}")


def _active(profile: Profile, found: frozenset[str]) -> frozenset[str]:
    return profile.required | (profile.optional & found) | profile.implied


def not_applicable(resolved: Resolved, lacking: Iterable[str],
                   guarantees: Iterable[str] = ()) -> str:
    """The reason a test is not applicable: what the profile lacks, what it would have judged.

    ``not applicable to profile seed: needs search (search(user_id, query, k)); it would
    judge G4``: reports group by the part before the parenthesis.
    """
    lacking = list(lacking)
    what = "; ".join(FEATURES.get(f, f) for f in lacking)
    judged = " ".join(guarantees)
    tail = f"; it would judge {judged}" if judged else ""
    return (f"{NOT_APPLICABLE} to profile {resolved.profile.name}: needs {', '.join(lacking)} "
            f"({what}){tail}")


NOT_APPLICABLE = "not applicable"
"""How a not-applicable test's skip reason starts: reports tell it from a skip by that."""


SESSION_PROFILE = pytest.StashKey[Resolved]()
"""The profile of the run's store (``--store``, ``--adapter``, an interface option), found
once by the plugin; a subclass that overrides ``store`` is probed on its own."""
ITEM_PROFILE = pytest.StashKey[Resolved]()
"""The profile a suite test ran under: the JSON report credits it only with what that
profile judges."""
