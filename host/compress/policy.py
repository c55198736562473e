"""Ratio policies: how many blocks block top-k keeps at the next step.

A policy sees one ``StepReport`` per compressed step and returns the ratio of the next.
Its inputs are values every worker holds alike (aggregated through the same collective as
the gradient), so every worker's policy takes the same decisions and the workers keep
sending tensors of one shape. Any object with ``ratio`` and ``update(report) -> float``
that is deterministic in the reports can replace the two here.

``AdaptiveRatio``'s rule (docs/compression.md, "The adaptive ratio"):

    kept_ema  <- β · kept_ema + (1 − β) · kept        (kept: energy fraction sent)
    factor     = grow    if kept_ema < target
               = shrink  if kept_ema > target + band
               = 1       otherwise
    if factor > 1 and comm_seconds > time_budget · dense_seconds: factor = 1
    ratio     <- clamp(ratio · factor, min_ratio, max_ratio)

``kept`` is the fraction of the accumulated gradient's energy (Σ‖block‖² over the workers)
that the step sent: 1 − kept is the information the step lost to the residual. A ratio
that loses too much grows; one that keeps more than it needs shrinks, so communication
shrinks as long as the gradient stays concentrated. ``comm_seconds`` is the measured time
of the compressed collective and ``dense_seconds`` the cost model's estimate of a dense
switch all-reduce: a ratio whose communication already costs ``time_budget`` of the dense
all-reduce's does not grow further (past that point dense training costs about the same).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class StepReport:
    """What a compressed step measured, identical on every worker."""

    step: int
    """The step's number (per tensor, counting warm-up steps)."""
    ratio: float
    """The ratio the step used."""
    kept: float
    """Fraction of the accumulated gradient's energy sent (over every worker), 0 .. 1."""
    comm_seconds: float | None
    """Mean over the workers of the previous step's measured collective time (None until
    one was measured)."""
    dense_seconds: float | None
    """The cost model's estimate of a dense switch all-reduce of the tensor (None when it
    has no measurement yet)."""


class RatioPolicy(Protocol):
    ratio: float

    def update(self, report: StepReport) -> float: ...


@dataclass
class FixedRatio:
    """Always the same ratio."""

    ratio: float = 0.05

    def __post_init__(self) -> None:
        _check_ratio("FixedRatio.ratio", self.ratio)

    def update(self, report: StepReport) -> float:
        return self.ratio


@dataclass
class AdaptiveRatio:
    """The rule in the module docstring. ``ratio`` is the starting ratio."""

    ratio: float = 0.05
    target: float = 0.2
    band: float = 0.1
    beta: float = 0.8
    grow: float = 1.25
    shrink: float = 0.9
    min_ratio: float = 0.005
    max_ratio: float = 0.5
    time_budget: float = 0.5
    kept_ema: float | None = field(default=None)
    history: list[float] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        for name in ("ratio", "min_ratio", "max_ratio"):
            _check_ratio(f"AdaptiveRatio.{name}", getattr(self, name))
        if self.min_ratio > self.max_ratio:
            raise ValueError(
                f"AdaptiveRatio: min_ratio {self.min_ratio} > max_ratio {self.max_ratio}"
            )
        if not 0.0 < self.target < 1.0 or self.band < 0.0:
            raise ValueError(f"AdaptiveRatio: target {self.target} in (0, 1), band ≥ 0")
        if not 0.0 <= self.beta < 1.0:
            raise ValueError(f"AdaptiveRatio.beta {self.beta}: in [0, 1)")
        if self.grow < 1.0 or not 0.0 < self.shrink <= 1.0:
            raise ValueError(f"AdaptiveRatio: grow {self.grow} ≥ 1, shrink {self.shrink} in (0, 1]")
        if self.time_budget <= 0:
            raise ValueError(f"AdaptiveRatio.time_budget {self.time_budget}: positive")
        self.ratio = min(max(self.ratio, self.min_ratio), self.max_ratio)

    def update(self, report: StepReport) -> float:
        k = min(max(report.kept, 0.0), 1.0)
        self.kept_ema = (
            k if self.kept_ema is None else self.beta * self.kept_ema + (1 - self.beta) * k
        )
        factor = 1.0
        if self.kept_ema < self.target:
            factor = self.grow
        elif self.kept_ema > self.target + self.band:
            factor = self.shrink
        if (
            factor > 1.0
            and report.comm_seconds is not None
            and report.dense_seconds is not None
            and report.comm_seconds > self.time_budget * report.dense_seconds
        ):
            factor = 1.0
        self.ratio = min(max(self.ratio * factor, self.min_ratio), self.max_ratio)
        self.history.append(self.ratio)
        return self.ratio


def _check_ratio(name: str, value: float) -> None:
    if not 0.0 < value <= 1.0:
        raise ValueError(f"{name} {value}: in (0, 1]")
