"""The nemesis: faults beyond the process (crashed clients, paused or killed engines, bad network).

See docs/nemesis.md. ``python -m nomnesia.suite.nemesis --adapter pgvector --faults 200``.
The runner (``runner.py``) schedules and judges; the faults are the parts of
``nomnesia.suite.faults``, composed as packages (``packages.py``).
"""
