"""pytest11 entry point (placeholder until the suite lands)."""
