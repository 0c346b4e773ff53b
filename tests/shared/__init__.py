"""Factories over one persistent database shared by every test of a run, and the same
libraries on an empty database per store: the check that fresh ids (SPEC.md, "What the
suite may assume") make a shared database read exactly as an empty one (issue 33)."""
