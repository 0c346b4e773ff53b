"""VectorIndex backends (adapters/tiers.py), one small module per engine.

Modules import their client library at import time; import the one you need
(``nomnesia.adapters.indexes.qdrant`` ...), not this package's namespace.
"""
