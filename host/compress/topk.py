"""Block top-k: which K-element blocks of a gradient travel, and error feedback.

The unit of selection is the switch's: a block of K elements (the last one zero-padded),
so a block that is not selected is a block that never travels through the sparse program.

- ``block_energy(x, k)``: the squared L2 norm of every block (float64, so the sums of
  many small squares keep their precision).
- ``select(energy, keep, always)``: the ``keep`` blocks of largest energy among those not
  in ``always``, plus ``always``; ties go to the lower block index, so the choice is a
  function of ``energy`` alone. The *local* rule applies it to each worker's own
  accumulator; the *agreed* rule to this step's energies summed over the workers, which every
  worker holds bit for bit alike, so every worker picks the same blocks.
- ``ErrorFeedback``: the residual of what was not sent, added to the next gradient.
  ``split`` returns (sent, residual) with ``sent + residual == accumulator`` exactly: every
  element goes wholly to one side (one of the two is 0.0, and x + 0.0 == x in IEEE
  arithmetic; in the integer domain the sum is exact anyway).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..quantize import block_count


def blocks_of(x: np.ndarray, k: int) -> np.ndarray:
    """``x`` flattened and zero-padded to a (B, K) array (a copy when padding is needed)."""
    flat = np.ravel(x)
    b = block_count(flat.size, k)
    if flat.size == b * k:
        return flat.reshape(b, k)
    out = np.zeros(b * k, dtype=flat.dtype)
    out[: flat.size] = flat
    return out.reshape(b, k)


def block_energy(x: np.ndarray, k: int) -> np.ndarray:
    """Squared L2 norm of each K-element block of ``x`` (float64, shape (B,))."""
    b = blocks_of(x, k).astype(np.float64)
    return np.einsum("ij,ij->i", b, b)


def keep_count(ratio: float, blocks: int) -> int:
    """Blocks a ratio keeps: ceil(ratio · B), at least 1 and at most B."""
    if not 0.0 < ratio <= 1.0:
        raise ValueError(f"ratio {ratio}: in (0, 1]")
    return min(blocks, max(1, int(np.ceil(ratio * blocks - 1e-9))))


def select(energy: np.ndarray, keep: int, always: np.ndarray | None = None) -> np.ndarray:
    """Boolean mask of the blocks to send: ``always`` plus the ``keep`` blocks of largest
    ``energy`` among the others (ties: the lower index). Exactly
    ``min(B, |always| + keep)`` blocks are selected."""
    e = np.asarray(energy, dtype=np.float64)
    mask = np.zeros(e.size, dtype=bool) if always is None else np.array(always, dtype=bool)
    if mask.shape != e.shape:
        raise ValueError(f"always has {mask.size} blocks, energy {e.size}")
    free = np.flatnonzero(~mask)
    keep = min(max(keep, 0), free.size)
    if keep:
        # A stable sort of -energy: equal energies keep index order (NaN sorts last).
        order = np.argsort(-e[free], kind="stable")
        mask[free[order[:keep]]] = True
    return mask


def expand(mask: np.ndarray, k: int, size: int) -> np.ndarray:
    """A block mask as an element mask of ``size`` elements."""
    return np.repeat(mask, k)[:size]


def ranges_to_blocks(ranges: list[tuple[int, int]], k: int, blocks: int) -> np.ndarray:
    """Blocks that hold any element of the half-open element ranges."""
    mask = np.zeros(blocks, dtype=bool)
    for start, stop in ranges:
        if not 0 <= start <= stop:
            raise ValueError(f"element range ({start}, {stop}) is not a range")
        if stop > start:
            mask[start // k : min(blocks, -(-stop // k))] = True
    return mask


@dataclass
class ErrorFeedback:
    """The residual of one tensor: what earlier steps selected but did not send.

    ``accumulate(g)`` is g + residual (g itself when disabled or before the first step);
    ``split(acc, elem_mask)`` returns what is sent and keeps the rest as the residual."""

    enabled: bool = True
    residual: np.ndarray | None = field(default=None, repr=False)

    def accumulate(self, grad: np.ndarray) -> np.ndarray:
        g = np.ravel(grad)
        if not self.enabled or self.residual is None:
            return np.array(g, copy=True)
        if self.residual.shape != g.shape or self.residual.dtype != g.dtype:
            raise ValueError(
                f"error feedback: the gradient is {g.dtype} {g.shape}, the residual "
                f"{self.residual.dtype} {self.residual.shape}; call reset() when the "
                f"tensor changes"
            )
        return g + self.residual

    def split(self, acc: np.ndarray, elem_mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        zero = np.zeros((), dtype=acc.dtype)
        sent = np.where(elem_mask, acc, zero)
        rest = np.where(elem_mask, zero, acc)
        if self.enabled:
            self.residual = rest
        return sent, rest

    def reset(self) -> None:
        self.residual = None
