"""Testbed: local stack and Mininet experiments (not built yet; see README status)."""
