"""Retransmission policy: per-slot timers with exponential back-off and a give-up bound."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How long a slot waits for its result before resending the identical packet.

    The first wait is ``initial_timeout``; each resend multiplies it by ``multiplier`` up
    to ``max_timeout``. A packet that has waited ``give_up_after`` seconds since its first
    transmission, or whose ``max_attempts``-th transmission timed out, is stuck: the call
    fails (``CallTimeout``) at that moment. The last wait is cut short so the failure comes
    exactly ``give_up_after`` seconds after the first transmission, never later.
    """

    initial_timeout: float = 0.02
    multiplier: float = 2.0
    max_timeout: float = 1.0
    give_up_after: float = 8.0
    max_attempts: int | None = None

    def __post_init__(self) -> None:
        if not (self.initial_timeout > 0 and math.isfinite(self.initial_timeout)):
            raise ValueError(f"initial_timeout {self.initial_timeout}: positive and finite")
        if not self.multiplier >= 1:
            raise ValueError(f"multiplier {self.multiplier}: at least 1")
        if not self.max_timeout >= self.initial_timeout:
            raise ValueError("max_timeout below initial_timeout")
        if not self.give_up_after > 0:
            raise ValueError(f"give_up_after {self.give_up_after}: positive (inf: never)")
        if self.max_attempts is not None and self.max_attempts < 1:
            raise ValueError(f"max_attempts {self.max_attempts}: at least 1 (None: unlimited)")

    def next_timeout(self, timeout: float) -> float:
        return min(timeout * self.multiplier, self.max_timeout)
