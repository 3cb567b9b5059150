"""Benchmarks: scripts that print tables (not timed tests)."""
