"""Match values of a table entry, one dataclass per match kind.

Values are plain non-negative integers of the key's width (the control plane's view); the
STF runner and the P4Runtime server both translate into these.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Exact:
    value: int


@dataclass(frozen=True)
class Lpm:
    value: int
    prefix_len: int


@dataclass(frozen=True)
class Ternary:
    value: int
    mask: int


@dataclass(frozen=True)
class Range:
    low: int
    high: int


@dataclass(frozen=True)
class Optional:
    """An optional key: ``value`` None is the wildcard."""

    value: int | None


Match = Exact | Lpm | Ternary | Range | Optional
