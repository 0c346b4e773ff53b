"""The plugin's command-line options: the ``nomnesia`` group of ``pytest --help``.

Its own module because it is the one part of the plugin that every pytest run
executes in full (``pytest_addoption`` runs before any conftest is read): a
newcomer adding an option finds them all here, and nothing here opens a store.
"""

from __future__ import annotations

import argparse

import pytest

from .core.loop import LOOPS
from .interfaces import INTERFACES
from .report.json_report import add_options

BACKENDS = ("auto", "embedded", "docker", "external")
"""Where built-in stacks get their engines (``--backends``, ``$NOMNESIA_BACKENDS``)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("nomnesia", "nomnesia memory-store conformance suite")
    group.addoption("--store", dest="nomnesia_store", metavar="MODULE:FACTORY", default=None,
                    help="run the suite on a store: a zero-argument callable returning an async "
                         "context manager that yields a fresh, empty store")
    group.addoption("--adapter", dest="nomnesia_adapter", metavar="NAME", default=None,
                    help="run the suite on a built-in store (nomnesia.adapters registry)")
    for interface in INTERFACES:
        group.addoption(interface.option, dest=interface.dest, metavar="MODULE:FACTORY",
                        default=None, help=f"run the suite on {interface.takes}, mapped to "
                                           f"the profile it can reach (e.g. {interface.example})"
                                           + (f". {interface.note}" if interface.note else ""))
    group.addoption("--langchain-sync", dest="nomnesia_langchain_sync", action="store_true",
                    help="with --langchain-history: call the history's sync methods, not the "
                         "async ones")
    group.addoption("--langgraph-concurrent-runs", dest="nomnesia_langgraph_concurrent_runs",
                    action="store_true",
                    help="with --langgraph-checkpointer: run a thread's runs concurrently, as "
                         "the open-source library lets them run, instead of queued as "
                         "LangGraph's Agent Server queues them (a concurrent run drops the "
                         "other's message: LangGraph's documented behaviour)")
    group.addoption("--backends", dest="nomnesia_backends", choices=BACKENDS, default=None,
                    help="where built-in stacks get their engines: auto (default, or "
                         "$NOMNESIA_BACKENDS), embedded, docker or external")
    group.addoption("--nomnesia-timeout", dest="nomnesia_timeout", type=float, default=120.0,
                    metavar="SECONDS", help="a suite test that takes longer fails with G12 "
                                            "(default 120)")
    group.addoption("--nomnesia-fault-timeout", dest="nomnesia_fault_timeout", type=float,
                    default=300.0, metavar="SECONDS",
                    help="a fault test (partial failures on each engine, reads under "
                         "replication lag) that takes longer fails with G12 (default 300)")
    group.addoption("--nomnesia-op-timeout", dest="nomnesia_op_timeout", type=float,
                    default=30.0, metavar="SECONDS",
                    help="where a test checks that a store still answers (no lock left held "
                         "after an interruption), the bound per operation (default 30)")
    group.addoption("--nomnesia-profile", dest="nomnesia_profile", default=None,
                    choices=("full", "memory", "seed", "history"),
                    help="hold the store to this profile of SPEC.md (default: the largest it "
                         "implements, detected from its methods)")
    group.addoption("--nomnesia-eventually", dest="nomnesia_eventually", type=float,
                    default=2.0, metavar="SECONDS",
                    help="how long the suite polls consistent_state of a store that declares "
                         "no staleness bound (the seed profile) before G11 fails (default 2)")
    group.addoption("--nomnesia-loop-block", dest="nomnesia_loop_block", type=float,
                    default=3.0, metavar="SECONDS",
                    help="a store call that stops the test's event loop this long is named "
                         "(G12: a synchronous call inside an async method; default 3, 0: off)")
    group.addoption("--nomnesia-loop", dest="nomnesia_loop", choices=("auto", *LOOPS),
                    default="auto",
                    help="the event loop every test runs on (default auto: uvloop for a "
                         "built-in --adapter stack where uvloop is installed, else asyncio's "
                         "own; a store of yours keeps asyncio's unless you ask)")
    group.addoption("--nomnesia-seed", dest="nomnesia_seed", type=int, default=None,
                    metavar="N", help="seed of the randomised tests (default: random, printed)")
    group.addoption("--nomnesia-anomalies", dest="nomnesia_anomalies", type=_anomalies,
                    default=3, metavar="N|all",
                    help="anomalies a concurrency failure prints (default 3; the JSON report "
                         "keeps them all)")
    group.addoption("--nomnesia-model-examples", dest="nomnesia_model_examples", type=int,
                    default=None, metavar="N",
                    help="call sequences the model-based test tries per store (default 50)")
    group.addoption("--nomnesia-model-steps", dest="nomnesia_model_steps", type=int,
                    default=None, metavar="N",
                    help="calls per sequence of the model-based test, at most (default 20)")
    group.addoption("--nemesis", dest="nomnesia_nemesis", metavar="KINDS", default=None,
                    help="also run the nemesis on the store (--adapter, --store or an "
                         "interface option): crash,pause,kill,net,failover or all, every kind "
                         "the store's engines can take (docs/nemesis.md, docs/faults.md)")
    group.addoption("--nemesis-faults", dest="nomnesia_nemesis_faults", type=int, default=50,
                    metavar="N", help="faults the --nemesis run injects (default 50)")
    group.addoption("--nomnesia-history", dest="nomnesia_history", metavar="DIR", default=None,
                    help="write every history each test recorded to DIR, one JSON Lines file "
                         "each (docs/history-format.md): `nomnesia check DIR/*.jsonl` judges "
                         "them again")
    add_options(group)  # --nomnesia-json PATH: the per-test, per-guarantee report


def _anomalies(text: str) -> int | None:
    """``--nomnesia-anomalies``: a count >= 1, or ``all`` (None)."""
    if text.strip().lower() == "all":
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1 or 'all', got {text!r}")
    return value
