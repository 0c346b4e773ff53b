"""What each audited library gets wrong, traced to the function responsible, graded.

A *cause* is one root defect or hazard: the guarantees it breaks, how bad it
is (:data:`SEVERITIES`), the library functions responsible (checked at run
time by :func:`attribute`, so a cause cannot name the wrong distribution),
whether the library documents the behaviour, the conditions under which it
happens, a one-line reproduction, and how to recognise it in a suite failure
(``match``: regular expressions that must *all* be found in the failure's text).

``report`` groups every failing test under the causes that match it; a
failure no cause matches is reported as ``unclassified`` and counts as a
finding of its own, so nothing is explained away. ``kind`` says whose the
defect is: ``library`` (the library does it), or ``mapping`` (the library
lacks what the contract needs, and the obvious mapping a team writes over it
shows the gap). A ``racy`` cause shows only under concurrent timing: a run
that misses it does not count it as fixed.

Every cause that is not a *contract gap* has a standalone reproduction,
``docs/ecosystem/repro/<key>.py``: the library's public API and an engine, no
nomnesia import. It prints what happened and exits 1 while the defect is
present, printing a line that matches the cause's ``shows``; ``repro.py`` runs
them all in ``nox -s audits``.

Some causes also have a ``probe`` (``probes.py``): the same check run through
the suite's adapter, which shows what the adapter guards against
(``unreachable``: huge ``limit``/``k`` passed straight to a library).

The causes of each library family live in a module of this package; this
module only defines the model and joins them, in report order.
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import inspect
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

__all__ = ["CAUSES", "SEVERITIES", "Attribution", "Cause", "attribute", "causes_for",
           "classify", "repro_dir"]

SEVERITIES: dict[str, str] = {
    "data loss": "an acknowledged write is gone, or another user's data is deleted",
    "leak": "another user's data is returned",
    "corruption": "duplicates, wrong order, or a half-applied write",
    "availability": "a valid call fails, or the store is unusable after an error",
    "hazard": "documented behaviour that breaks a common assumption",
    "contract gap": "the library leaves it to the caller (no tombstones, no input limits...)",
}
"""The severity classes, worst first: the report orders every summary this way."""


@dataclass(frozen=True)
class Cause:
    key: str
    audits: tuple[str, ...]
    guarantees: tuple[str, ...]
    severity: str
    """One of :data:`SEVERITIES`."""
    function: str
    """Where it happens, in prose (may name several call sites)."""
    what: str
    reproduction: str
    conditions: str
    """When it happens: settings, engines, sizes ("always" when nothing else is needed)."""
    documented: str | None = None
    """Where the library documents this behaviour (docstring, docs page); None: nowhere found."""
    issues: tuple[str, ...] = ()
    """The library's own tracker entries about it, each ``URL (state): what it says``; a fixed
    one names the version that fixed it. Empty: none cited."""
    functions: tuple[str, ...] = ()
    """``module:qualname`` of each function responsible, imported and attributed at run time."""
    match: tuple[str, ...] = ()
    probe: str | None = None
    kind: str = "library"
    racy: bool = False
    """Shown only by concurrent timing, so a run may miss it: its absence is no fix."""
    unreachable: str | None = None
    """Why no suite test can show it (the adapter guards against it): only its probe does."""
    shows: str | None = None
    """A regex the reproduction script prints while the defect is present."""
    yields_to: tuple[str, ...] = ()
    """Causes that explain a block this one also matches, better: when one of them matches,
    this one does not (so every violation is traced to exactly one cause)."""

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"cause {self.key}: severity {self.severity!r} is not one of "
                             f"{', '.join(SEVERITIES)}")
        if self.severity != "contract gap" and not (self.functions and self.shows):
            raise ValueError(f"cause {self.key}: a {self.severity} cause names its functions "
                             "and what its reproduction script shows")

    def matches(self, text: str) -> bool:
        return bool(self.match) and all(re.search(p, text, re.M) for p in self.match)

    @property
    def repro(self) -> str | None:
        """The reproduction script's file name (in :func:`repro_dir`), for non-contract-gaps."""
        return None if self.severity == "contract gap" else f"{self.key}.py"

    @property
    def rank(self) -> int:
        return list(SEVERITIES).index(self.severity)


@dataclass(frozen=True)
class Attribution:
    """A function, found where it is installed: the distribution that ships its file."""

    function: str
    distribution: str
    version: str

    def __str__(self) -> str:
        return f"{self.distribution} {self.version} `{self.function}`"


@cache
def _file_owners() -> dict[Path, tuple[str, str]]:
    """Every installed file → (distribution, version), from the distributions' RECORDs."""
    owners: dict[Path, tuple[str, str]] = {}
    for dist in md.distributions():
        name = dist.metadata["Name"]
        for file in dist.files or ():
            if file.suffix == ".py":
                owners[Path(str(dist.locate_file(file))).resolve()] = (name, dist.version)
    return owners


def attribute(function: str) -> Attribution:
    """Import ``module:qualname`` and name the distribution whose files hold it.

    Raises ``LookupError`` when the function does not exist or its file belongs
    to no installed distribution: a cause that names a function must name a
    real one, in the distribution that really ships it (``langgraph.store.base``
    is ``langgraph-checkpoint``'s, not ``langgraph``'s).
    """
    module_name, _, qualname = function.partition(":")
    try:
        obj: object = importlib.import_module(module_name)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise LookupError(f"{function}: {type(exc).__name__}: {exc}") from exc
    target = inspect.unwrap(obj) if callable(obj) else obj
    try:
        source = inspect.getsourcefile(target)  # type: ignore[arg-type]
    except TypeError:
        source = None
    if source is None:
        raise LookupError(f"{function}: no source file")
    owner = _file_owners().get(Path(source).resolve())
    if owner is None:
        raise LookupError(f"{function}: {source} belongs to no installed distribution")
    return Attribution(function, *owner)


def repro_dir() -> Path:
    """``docs/ecosystem/repro`` of the checkout this package runs from."""
    return Path(__file__).resolve().parents[3] / "docs" / "ecosystem" / "repro"


def _join() -> tuple[Cause, ...]:
    modules = ("shared", "langgraph", "langchain", "llama_index", "mem0", "openai_agents",
               "adk", "llama_memory", "redis_stores", "langchain_community", "langchain_redis",
               "agent_framework", "agno", "autogen", "strands")
    causes: list[Cause] = []
    for name in modules:
        causes += importlib.import_module(f"{__name__}.{name}").CAUSES
    keys = [c.key for c in causes]
    duplicated = {k for k in keys if keys.count(k) > 1}
    if duplicated:
        raise ValueError(f"causes defined twice: {sorted(duplicated)}")
    return tuple(causes)


CAUSES: tuple[Cause, ...] = _join()


def causes_for(audit: str) -> list[Cause]:
    return [c for c in CAUSES if audit in c.audits]


def classify(audit: str, text: str) -> list[str]:
    """Keys of the causes of ``audit`` whose patterns all occur in a failure's text, less
    those that yield to another cause found there."""
    found = [c for c in causes_for(audit) if c.matches(text)]
    keys = {c.key for c in found}
    return [c.key for c in found if not keys.intersection(c.yields_to)]
