"""The nemesis's fault kinds as packages of parts (Jepsen's ``nemesis/combined.clj``).

A *kind* (``crash``, ``pause``, ``kill``, ``net``, ``failover``, ``link``) is what a run's
schedule draws; its :class:`Package` says which part causes it, which targets it may hit and
which of the part's fault names it draws among (``net`` draws one of the four wire faults).
Whether a kind applies to a stack is decided here too, from what the stack has: ``pause``,
``kill`` and ``net`` need a networked engine behind a proxy, ``failover`` a replicated
engine, ``link`` one whose links the provider can delay or cut.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from nomnesia.adapters.engines import EmbeddedProvider
from nomnesia.adapters.engines.toxics.latency import Latency
from nomnesia.adapters.engines.toxics.lost_reply import LostReply
from nomnesia.adapters.engines.toxics.refuse import Refuse
from nomnesia.adapters.engines.toxics.stall import Stall

from ..faults.base import FaultPart
from ..faults.process import Control, KillPart, PausePart
from ..faults.replication import FailoverPart, LinkPart
from ..faults.wire import WirePart
from .crash import CrashPart, Workers
from .failover import detach_standby

__all__ = ["KINDS", "NET_FAULTS", "PACKAGES", "Package", "Run", "durable_kills", "kinds_of",
           "link_engines", "process_kinds", "stack_kinds"]

KINDS: tuple[str, ...] = ("crash", "pause", "kill", "net", "failover", "link")
NET_FAULTS: tuple[str, ...] = (Latency.name, Refuse.name, Stall.name, LostReply.name)
"""The wire faults a ``net`` fault draws among (the order is part of a seed's replay)."""
NET_LATENCIES_MS: tuple[float, ...] = (20.0, 100.0, 500.0)
"""The latencies a ``net`` latency draws among: up to half a second, past a store's timeout."""


@dataclass
class Package:
    """One kind: its part, the targets it may hit, and the fault names it draws.

    ``draw`` keeps the draw order a seed replays: the target (``choose_target``: drawn even
    from one, except where the kind never drew), then the fault name (``choose_fault``).
    """

    kind: str
    part: FaultPart
    targets: Sequence[str]
    faults: Callable[[str], Sequence[str]]
    """The fault names drawn among for a target."""
    choose_target: bool = True
    choose_fault: bool = True

    def draw(self, rng: random.Random) -> tuple[str, str]:
        """The fault name and target of the next fault of this kind."""
        targets = list(self.targets)
        target = rng.choice(targets) if self.choose_target or len(targets) > 1 else targets[0]
        names = list(self.faults(target))
        return (rng.choice(names) if self.choose_fault else names[0]), target

    async def prepare(self) -> None:
        """What the part needs done before the fault's window opens (``crash``: a warm
        standby), so the window measures the fault, not the preparation."""
        prepare = getattr(self.part, "prepare", None)
        if prepare is not None:
            await prepare()


class Run(Workers, Protocol):
    """What the packages read of a nemesis run (``runner._Run``)."""

    cfg: Any
    provider: Any
    control: Control
    proxied: Any
    targets: list[str]
    """The networked engines, each behind a proxy."""
    kill_targets: list[str] | None
    replicated: list[str]
    linked: list[str]
    cascade: list[str]
    real: dict[str, str]


def _among(run: Run, allowed: Sequence[str] | None) -> list[str]:
    """The run's networked engines that ``allowed`` names (all when none or no match)."""
    return [t for t in run.targets if allowed is None or t in allowed] or run.targets


def _crash(run: Run) -> Package:
    return Package("crash", CrashPart(run), ["client"], lambda target: CrashPart.fs,
                   choose_target=False, choose_fault=False)


def _pause(run: Run) -> Package:
    return Package("pause", PausePart(run.control, run.targets),
                   _among(run, run.cfg.targets.get("pause")), lambda target: PausePart.fs,
                   choose_fault=False)


def _kill(run: Run) -> Package:
    return Package("kill", KillPart(run.control, run.targets), _among(run, run.kill_targets),
                   lambda target: KillPart.fs, choose_fault=False)


def _net(run: Run) -> Package:
    return Package("net", WirePart(run.proxied.proxies, NET_LATENCIES_MS),
                   _among(run, run.cfg.targets.get("net")), lambda target: NET_FAULTS)


def _failover(run: Run) -> Package:
    part = FailoverPart(run.provider, run.replicated, freeze_share=run.cfg.freeze_share,
                        lag=run.cfg.lag, cascade=run.cascade, real=run.real,
                        detach=detach_standby)
    return Package("failover", part, run.replicated, lambda target: FailoverPart.fs,
                   choose_target=False, choose_fault=False)


def _link(run: Run) -> Package:
    return Package("link", LinkPart(run.provider), run.linked, run.provider.link_faults)


PACKAGES: dict[str, Callable[[Run], Package]] = {
    "crash": _crash, "pause": _pause, "kill": _kill, "net": _net, "failover": _failover,
    "link": _link}
"""How each kind is made for a run, by name: the runner composes ``PACKAGES[kind](run)``."""


def link_engines(provider: Any, engines: Sequence[str]) -> list[str]:
    """The engines of ``engines`` whose links between members ``provider`` can delay or cut
    (``link_faults``), asked without starting anything."""
    ask = getattr(provider, "link_faults", None)
    return [engine for engine in engines if callable(ask) and ask(engine)]


def stack_kinds(kinds: Sequence[str], *, networked: bool, replicated: bool,
                linked: bool = False) -> tuple[str, ...]:
    """The fault kinds a run on this stack draws from.

    Every kind (the default, ``all``) means every kind that applies, so ``--kinds all``
    keeps working on any stack and includes failovers where there are some; a kind named
    explicitly that does not apply is an error, not a silent run without it.
    """
    applies = {"crash": True, "pause": networked, "kill": networked, "net": networked,
               "failover": replicated, "link": linked}
    if tuple(kinds) == KINDS:
        return tuple(kind for kind in KINDS if applies[kind])
    missing = [kind for kind in kinds if not applies.get(kind, False)]
    if missing:
        needs = {"failover": "a replicated engine (postgres-ha ...)",
                 "link": "a replicated engine whose links the provider can delay or cut "
                         "(redis-sentinel, valkey-sentinel, redis-cluster, postgres-ha; embedded "
                         "engines)"}
        raise ValueError("fault kinds that do not apply to this stack: " + ", ".join(
            f"{kind} needs {needs.get(kind, 'a networked engine')}" for kind in missing))
    return tuple(kinds)


def kinds_of(text: str | Sequence[str]) -> tuple[str, ...]:
    """``"crash,pause"`` -> ("crash", "pause"); ``all`` means every kind."""
    items = text.split(",") if isinstance(text, str) else list(text)
    kinds = tuple(k.strip() for k in items if k.strip())
    return KINDS if kinds in ((), ("all",)) else kinds


def process_kinds(kinds: Sequence[str], asked: Sequence[str], provider: Any,
                  commands: Mapping[str, str]) -> tuple[str, ...]:
    """``kinds`` less pause and kill where nothing can cause them.

    Both hit processes: the nemesis's own (embedded engines) or the user's commands (one
    control for both: the user's commands once any is given). Where neither can, ``all``
    (``asked`` is every kind) leaves them out, and naming them is an error, as for any kind
    that does not apply.
    """

    own = isinstance(getattr(provider, "inner", provider), EmbeddedProvider) \
        and not commands.keys() & {"pause", "kill"}
    missing = [kind for kind in ("pause", "kill") if kind in kinds
               and kind not in commands and not own]
    if not missing:
        return tuple(kinds)
    if tuple(asked) == KINDS:
        return tuple(k for k in kinds if k not in missing)
    raise ValueError(f"{' and '.join(missing)} need engines the nemesis started, or "
                     "your commands for them on your deployment (--fault-command "
                     "pause=... resume=..., kill=... restart=...; docs/faults.md)")


def durable_kills(kinds: Sequence[str], asked: Sequence[str], targets: Sequence[str],
                  wanted: Sequence[str] | None, durable_postgres: bool,
                  engines: Sequence[str]) -> tuple[tuple[str, ...], list[str] | None]:
    """The kinds and kill targets of a user's store: kills only where a restart loses nothing.

    A user's store may keep its only copy in an engine the nemesis runs without durability
    (the embedded Redis: no AOF, no RDB), so a kill there would lose what the engine itself
    acknowledged and fail the store for the suite's setting (SPEC "Faults"). Kills go only
    to PostgreSQL, run with synchronous_commit on.
    """
    durable = [e for e in targets if e == "postgres" and durable_postgres]
    chosen = [e for e in durable if wanted is None or e in wanted]
    if chosen:
        return tuple(kinds), chosen
    if tuple(asked) == KINDS:
        return tuple(k for k in kinds if k != "kill"), None if wanted is None else list(wanted)
    raise ValueError("kill needs an engine the nemesis restarts without loss "
                     "(postgres with synchronous_commit on); this store asked for "
                     + ", ".join(engines))
