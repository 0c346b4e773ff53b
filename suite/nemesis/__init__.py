"""The nemesis: faults beyond the process (crashed clients, paused or killed engines, bad network).

See docs/nemesis.md. ``python -m nomnesia.suite.nemesis --adapter pgvector --faults 200``.
"""

from __future__ import annotations

from .provider import PROXIED_ENGINES, ProxiedProvider
from .proxy import MODES, Proxy, ProxyLoop

__all__ = ["MODES", "PROXIED_ENGINES", "ProxiedProvider", "Proxy", "ProxyLoop"]
