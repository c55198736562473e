"""How far the parameters of a DDP run whose gradients p4reduce sums may lie from those of
the same run summed by gloo: the tolerance ``p4reduce demo`` checks (docs/demo.md derives it).

Both runs start from the same weights and see the same batches, so at a step where their
parameters agree, every worker's all-reduce input x_i = g_i / n (DDP divides before it sums)
is the same in both. Only the sums differ, and only by rounding:

- p4reduce (docs/protocol.md, "Quantization"): |ŝ − Σx| ≤ n² · 2^(E − 159) + ½ ulp(ŝ). With
  G the largest |x_i| of the step, a block's agreed exponent has 2^(E − 128) ≤ G, so the
  first term is at most n² · 2^−31 · G; |ŝ| ≤ n·G, so the second is at most n · u · G
  (u = 2^−24, float32's unit round-off), up to a factor (1 + u).
- gloo adds the n inputs in float32, in some order: |s̃ − Σx| ≤ γ(n−1) · Σ|x_i| ≤ γ(n−1) · n · G,
  with γ(k) = k·u / (1 − k·u).
- DDP's own path divides by n as g · fl(1/n), a comm hook (the gloo run's timing probe) as
  g / n: for n not a power of two each input may differ by 3u · G between the runs, so the
  sums by 3·n·u · G.

So the averaged gradients differ by at most c(n) · G per element. Plain SGD then computes
p ← fl(p − fl(lr · g)) in each run: the difference grows by lr · c(n) · G (times 1 + u),
by the rounding of lr · g in each run (u · lr · n · G each), and by the rounding of each
new parameter (½ ulp(P) each, P the largest |parameter|). Summed over the steps:

    tolerance = Σ_t [ lr · (c(n) + 2·n·u) · (1 + u) · G_t + ulp(P_t) ]

What it leaves out: once the parameters differ, the next gradients differ too, by the
loss's curvature times the difference. That propagation is not bounded here (it would need
the Hessian's spectrum along the run); with a stable learning rate it mostly damps. The
bound above is also worst-case per element at every step, so measured differences stay well
inside it (docs/demo.md: 3–7 % of it over 30–200 steps).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

U = 2.0**-24  # float32 unit round-off
TINY = 2.0**-149  # the smallest float32 spacing (denormals)


def gamma(k: int) -> float:
    """Higham's γ(k): the relative error bound of k float32 additions."""
    return k * U / (1 - k * U)


def allreduce_gap(n: int) -> float:
    """c(n): per element, |p4reduce's sum − gloo's sum| ≤ c(n) · G for the same inputs, all
    of magnitude at most G."""
    quantization = n * n * 2.0**-31
    p4reduce_rounding = n * U * (1 + U)
    gloo_rounding = gamma(n - 1) * n
    division = 0.0 if n & (n - 1) == 0 else 3 * n * U
    return quantization + p4reduce_rounding + gloo_rounding + division


def ulp(x: float) -> float:
    """The float32 spacing at |x| (the largest over [2^e, 2^(e+1)) that holds it)."""
    return max(float(np.spacing(np.float32(abs(x)))), TINY)


@dataclass(frozen=True)
class Tolerance:
    """The bound on max |Δparameter| after the run, and its two parts."""

    tolerance: float
    from_gradients: float  # Σ lr · (c(n) + 2nu)(1 + u) · G_t
    from_updates: float  # Σ ulp(P_t)
    gap_per_unit_input: float  # c(n)


def param_tolerance(
    n: int, lr: float, input_max: Sequence[float], param_max: Sequence[float]
) -> Tolerance:
    """The tolerance above, from each step's largest all-reduce input G_t (over all workers)
    and largest |parameter| P_t after the step."""
    if len(input_max) != len(param_max):
        raise ValueError(f"{len(input_max)} input maxima for {len(param_max)} steps")
    c = allreduce_gap(n)
    grads = sum(lr * (c + 2 * n * U) * (1 + U) * g for g in input_max)
    updates = sum(ulp(p) for p in param_max)
    return Tolerance(grads + updates, grads, updates, c)
