"""Toxics for the fault proxy, by name: ``latency``, ``refuse``, ``stall``, ``lost-reply``.

Importing this package registers every toxic (each module registers its own class);
``make(name, **params)`` builds one. To add a toxic: a module here with one
``@register``-ed subclass of :class:`Toxic`, and its import below.
"""

from __future__ import annotations

from . import latency, lost_reply, refuse, stall
from .base import TOXICS, Link, Step, Toxic, make, register

__all__ = ["TOXICS", "Link", "Step", "Toxic", "latency", "lost_reply", "make", "refuse",
           "register", "stall"]
