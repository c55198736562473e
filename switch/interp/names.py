"""Python identifiers for generated code made from P4 names."""

from __future__ import annotations


def safe_identifier(name: str) -> str:
    """``ingress.set_nhop`` -> ``ingress_set_nhop``: readable in tracebacks of generated code."""
    return "".join(c if c.isalnum() else "_" for c in name)
