"""The nemesis: faults beyond the process (crashed clients, paused or killed engines, bad network).

See docs/nemesis.md. ``python -m nomnesia.suite.nemesis --adapter pgvector --faults 200``.
"""

from __future__ import annotations

from nomnesia.adapters.engines.proxy import MODES, Proxy, ProxyLoop

from .provider import PROXIED_ENGINES, ProxiedProvider

__all__ = ["MODES", "PROXIED_ENGINES", "ProxiedProvider", "Proxy", "ProxyLoop"]
