"""Engines for your own store: ``engine_url``, ``fault_url``, ``store_namespace``, ``keep_data``.

The public name of the engine seam, which lives beside the providers and the fault proxy
it uses (``nomnesia.adapters.engines.session``: read its docstring for how a ``--store``
factory gets its engines). Import from here::

    from nomnesia.suite.engines import engine_url, keep_data, store_namespace
"""

from __future__ import annotations

from nomnesia.adapters.engines.session import (
    KEEP_ENV,
    NAMESPACE_ENV,
    EngineProvider,
    EngineSession,
    FaultScope,
    active_session,
    current_session,
    engine_session,
    engine_url,
    fault_url,
    install,
    keep_data,
    store_namespace,
)

__all__ = ["KEEP_ENV", "NAMESPACE_ENV", "EngineProvider", "EngineSession", "FaultScope",
           "active_session", "current_session", "engine_session", "engine_url", "fault_url",
           "install", "keep_data", "store_namespace"]
