"""``BlockTopK``: block top-k with error feedback, an exchangeable ratio policy and the
cost model's choice of collective, independent of how the collective is carried out.

One step of one tensor (a DDP bucket, a numpy array) is

    plan = topk.prepare(key, grad)          # accumulate, select, split, pick a path
    if plan.energies is not None:           # agreed selection: agree on the blocks first
        plan = topk.agree(plan, <the workers' sum of plan.energies>)
    summed = <collective>(plan)             # the workers' sum of plan.payload (switch) or
                                            # of the pairs (allgather: pack / unpack_sum)
    mean = topk.complete(plan, summed, seconds)

``plan.payload`` is the tensor's B·K elements (zero-padded) with the unselected blocks
zeroed, followed by a *telemetry tail* that every worker adds to the same collective:

    [kept energy, total energy, seconds of this worker's previous collective,
     the non-finite overflow flag]

Summed, it gives every worker the same figures: the fraction of energy the step kept (the
policy's input) and the workers' mean collective time (the cost model's). Because every
decision (ratio, blocks for the agreed rule, path) is a function of aggregated values only,
every worker decides alike and the workers' tensors keep one shape.

The agreed rule selects from the block energies of *this* step's accumulators, summed
over the workers by a small dense collective of B elements (``plan.energies``) before the
payload's. It once selected from the previous step's energies (carried in the tail, the
step's gradient standing in for the next one) and did not train (issue 36): every block
was sent one step after it became the largest, and that one step of delay in the error
feedback loop let stale residuals grow and overshoot (22.8 % on digits where dense gets
96 %). Top-k with error feedback needs the contraction of the *current* accumulator: the
blocks sent must hold at least keep/B of its energy, which no forecast of the next
gradient guarantees.

Warm-up steps (``warmup_steps``) send everything (ratio 1) through the dense path; they
also give the cost model its first measurement of the dense path.

NaN and ±Inf propagate as the uncompressed path gives them (docs/compression.md,
"Non-finite gradients"): a block of K elements that holds one on any worker comes back
non-finite on every worker, and the step is void for the compressor (the residual, the
policy and the agreed energies stay as before it), as an AMP grad scaler voids it for the
optimizer. ``nonfinite="raise"`` refuses such a gradient before anything is sent.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field

import numpy as np

from ..quantize import (
    NF_NAN,
    NF_NEG_INF,
    NF_POS_INF,
    block_count,
    check_finite,
    check_nonfinite_mode,
    nonfinite_bits,
)
from .cost import PATHS, CostModel, volumes
from .policy import FixedRatio, RatioPolicy, StepReport
from .quantfb import quantization_error
from .topk import ErrorFeedback, block_energy, blocks_of, expand, keep_count, select

MODES = ("auto", *PATHS)
SELECTIONS = ("local", "agreed")
TAIL_SCALARS = 4  # kept energy, total energy, previous collective seconds, overflow flag
TAIL_OVERFLOW = 3
"""The tail element a worker sets to NaN when its allgather message could not carry all of
its non-finite blocks (summed, it makes every worker's whole result NaN)."""
_F32_MAX = float(np.finfo(np.float32).max)


@dataclass
class TopKConfig:
    """How block top-k compresses (docs/compression.md)."""

    ratio: float = 0.05
    """Fraction of the (compressible) blocks each step keeps; the fixed policy's ratio."""
    selection: str = "local"
    """"local": each worker its own top blocks (the union travels); "agreed": every worker
    the same blocks, chosen from this step's block energies summed over the workers."""
    error_feedback: bool = True
    """Keep what was not sent and add it to the next step's gradient."""
    warmup_steps: int = 10
    """Steps (per tensor) sent whole through the dense path before compressing."""
    mode: str = "auto"
    """The collective: "dense", "sparse" (switch), "allgather" (gloo), or "auto" (the
    cost model picks per tensor and step among those available)."""
    policy: RatioPolicy | None = None
    """The ratio policy (each tensor gets its own deep copy); None: ``FixedRatio(ratio)``."""
    refresh: int = 50
    """The cost model re-measures a path not used for this many choices (0: never)."""
    quantization_feedback: bool = True
    """With error feedback: add this worker's share of what the switch rounded away to the
    residual (needs the call's agreed exponents in ``complete``; docs/compression.md)."""

    def __post_init__(self) -> None:
        if not 0.0 < self.ratio <= 1.0:
            raise ValueError(f"TopKConfig.ratio {self.ratio}: in (0, 1]")
        if self.selection not in SELECTIONS:
            raise ValueError(f"TopKConfig.selection {self.selection!r}: one of {SELECTIONS}")
        if self.mode not in MODES:
            raise ValueError(f"TopKConfig.mode {self.mode!r}: one of {MODES}")
        if self.warmup_steps < 0:
            raise ValueError(f"TopKConfig.warmup_steps {self.warmup_steps}: at least 0")
        if self.refresh < 0:
            raise ValueError(f"TopKConfig.refresh {self.refresh}: at least 0")
        if self.policy is not None and not (
            hasattr(self.policy, "ratio") and callable(getattr(self.policy, "update", None))
        ):
            raise TypeError("TopKConfig.policy needs a ratio attribute and an update(report)")


@dataclass
class Plan:
    """One step of one tensor, ready for its collective."""

    key: object
    step: int
    path: str
    """"dense", "sparse" or "allgather"."""
    compressed: bool
    """False for a warm-up step, which sends everything."""
    ratio: float
    size: int
    blocks: int
    tail: int
    mask: np.ndarray = field(repr=False)
    """Block mask of what this worker sends (B,)."""
    payload: np.ndarray = field(repr=False)
    """float32, B·K + tail elements: the selected blocks, zeros, the telemetry tail."""
    volumes: dict[str, float]
    t0: float = field(default_factory=time.monotonic)
    nonfinite: int = 0
    """Blocks of this worker's tensor that hold NaN or ±Inf (0: a finite gradient)."""
    prior_residual: np.ndarray | None = field(default=None, repr=False)
    """The residual before this step: restored when the step turns out non-finite."""
    energies: np.ndarray | None = field(default=None, repr=False)
    """Agreed selection before ``agree``: this worker's block energies of its accumulator
    (float32, B elements, finite) to be summed over the workers; None otherwise."""
    acc: np.ndarray | None = field(default=None, repr=False)
    """Agreed selection before ``agree``: the accumulator (gradient + residual)."""
    keep: int = 0
    """Blocks the ratio keeps besides ``always`` (compressed steps)."""
    fixed: np.ndarray | None = field(default=None, repr=False)
    """The blocks sent every step (``always``)."""
    bits: np.ndarray | None = field(default=None, repr=False)
    """Agreed selection before ``agree``: the non-finite bits of each block."""
    sent_index: np.ndarray | None = field(default=None, repr=False)
    """The finite blocks sent through the switch (quantization feedback); None otherwise."""
    sent_rows: np.ndarray | None = field(default=None, repr=False)
    """Their values as sent (a copy: the collective may write its result over the payload)."""

    @property
    def selected(self) -> int:
        return int(self.mask.sum())


@dataclass
class TensorState:
    """What block top-k keeps per tensor between steps."""

    size: int
    policy: RatioPolicy
    cost: CostModel
    feedback: ErrorFeedback
    step: int = 0
    agreed_energy: np.ndarray | None = field(default=None, repr=False)
    """The workers' summed block energies of the last agreed step's accumulators."""
    union: int | None = None
    """Blocks non-zero in the previous aggregated result (the next union's estimate)."""
    last_seconds: float = 0.0
    """This worker's time of its previous collective (sent in the next tail)."""
    last_path: str | None = None
    last_volume: float = 0.0
    reports: list[StepReport] = field(default_factory=list, repr=False)
    paths: list[str] = field(default_factory=list, repr=False)
    nonfinite_steps: int = 0
    """Steps whose aggregated result was non-finite (void for the compressor)."""


class BlockTopK:
    """Block top-k for a group of ``n`` workers whose switch job has K = ``k`` and
    ``slots`` slots; ``paths``: the collectives available ("sparse" needs the sparse
    program, "allgather" a process group). ``nonfinite``: ``"propagate"`` (NaN/±Inf come
    back non-finite, per block, on every worker) or ``"raise"`` (``NonFiniteError`` in
    ``prepare``, before anything is sent); the session's own mode."""

    def __init__(
        self,
        config: TopKConfig,
        *,
        n: int,
        k: int,
        slots: int,
        paths: tuple[str, ...] = PATHS,
        nonfinite: str = "propagate",
    ) -> None:
        self.nonfinite = check_nonfinite_mode(nonfinite)
        if n < 1 or k < 1 or slots < 1:
            raise ValueError(f"BlockTopK: n {n}, k {k}, slots {slots} must be positive")
        bad = [p for p in paths if p not in PATHS]
        if bad or "dense" not in paths:
            raise ValueError(f"BlockTopK paths {paths}: a subset of {PATHS} with 'dense'")
        if config.mode != "auto" and config.mode not in paths:
            raise ValueError(
                f"TopKConfig.mode {config.mode!r} is not available here (available: "
                f"{', '.join(paths)}; 'sparse' needs the sparse program)"
            )
        self.config = config
        self.n, self.k, self.slots = n, k, slots
        self.paths = tuple(p for p in PATHS if p in paths)
        self.states: dict[object, TensorState] = {}

    # ------------------------------------------------------------ per tensor state

    def state(self, key: object, size: int) -> TensorState:
        """The state of tensor ``key``; a new one when its size changed (DDP rebuilds its
        buckets after the first iteration)."""
        st = self.states.get(key)
        if st is None or st.size != size:
            cfg = self.config
            proto = cfg.policy if cfg.policy is not None else FixedRatio(cfg.ratio)
            allowed = self.paths if cfg.mode == "auto" else (cfg.mode,)
            st = TensorState(
                size=size,
                policy=copy.deepcopy(proto),
                cost=CostModel(
                    paths=tuple(p for p in PATHS if p in allowed or p == "dense"),
                    refresh=cfg.refresh,
                ),  # fmt: skip
                feedback=ErrorFeedback(enabled=cfg.error_feedback),
            )
            self.states[key] = st
        return st

    # ------------------------------------------------------------ one step

    def prepare(self, key: object, grad: np.ndarray, always: np.ndarray | None = None) -> Plan:
        """Select this step's blocks of ``grad`` (float32; ``always``: a block mask sent
        every step, e.g. the first and last layers), keep the rest as the residual, and
        pick the collective. NaN/±Inf: the blocks holding one travel whole as NaN or the
        infinity (``nonfinite="raise"``: ``NonFiniteError``, nothing is kept)."""
        g = np.ravel(np.asarray(grad))
        if g.dtype != np.float32:
            raise TypeError(f"block top-k of a {g.dtype} tensor: float32 expected")
        if self.nonfinite == "raise":
            check_finite(g)
        cfg, k = self.config, self.k
        st = self.state(key, g.size)
        nb = block_count(g.size, k)
        if always is not None and np.asarray(always).shape != (nb,):
            raise ValueError(f"always has shape {np.asarray(always).shape}, expected ({nb},)")
        agreed = cfg.selection == "agreed"
        prior = st.feedback.residual
        acc = st.feedback.accumulate(g)
        bits = nonfinite_bits(blocks_of(acc, k))
        bad = bits != 0
        energy = block_energy(acc, k)
        if bad.any():
            energy[bad] = 0.0  # the sums every worker agrees on stay finite
        warm = st.step < cfg.warmup_steps
        ratio = 1.0 if warm else st.policy.ratio
        fixed = np.zeros(nb, dtype=bool) if always is None else np.array(always, dtype=bool)
        keep = 0
        if not warm:
            free = nb - int(fixed.sum())
            keep = keep_count(ratio, free) if free else 0
        # agreed: exactly the agreed blocks travel, as many on every worker
        selected = nb if warm else min(nb, int(fixed.sum()) + keep)
        if agreed or warm:
            union = selected
        else:
            union = st.union if st.union is not None else min(nb, self.n * selected)
        tail_blocks = -(-TAIL_SCALARS // k)
        vols = volumes(
            blocks=nb + tail_blocks,
            slots=self.slots,
            union=union + tail_blocks,
            selected=selected,
            n=self.n,
            k=k,
            extra=TAIL_SCALARS,
        )
        if warm:
            path = "dense"
        elif cfg.mode != "auto":
            path = cfg.mode
        else:
            path = st.cost.choose(vols, self.paths)
        plan = Plan(
            key,
            st.step,
            path,
            not warm,
            ratio,
            g.size,
            nb,
            TAIL_SCALARS,
            np.ones(nb, dtype=bool),
            np.zeros(0, dtype=np.float32),
            vols,
            nonfinite=int(bad.sum()),
            prior_residual=prior,
            keep=keep,
            fixed=fixed,
        )
        if agreed and not warm:
            # Select only once every worker's energies are known (``agree``).
            plan.acc = acc
            plan.energies = np.minimum(energy, _F32_MAX).astype(np.float32)
            plan.mask = np.zeros(nb, dtype=bool)
            plan.bits = bits
            return plan
        mask = np.ones(nb, dtype=bool) if warm else select(energy, keep, fixed)
        return self._finish(plan, acc, bits, mask, energy, energy)

    def agree(self, plan: Plan, summed_energies: np.ndarray) -> Plan:
        """Agreed selection: select the blocks from the workers' sum of ``plan.energies``
        (identical on every worker, so the masks are too), split the accumulator and fill
        the payload. Returns ``plan``, ready for its collective."""
        if plan.energies is None or plan.acc is None:
            raise ValueError("agree: the plan has no energies to agree on (not agreed or done)")
        e = np.ravel(np.asarray(summed_energies)).astype(np.float64)
        if e.shape != (plan.blocks,):
            raise ValueError(f"agree: {e.size} summed energies, the plan has {plan.blocks} blocks")
        e[~np.isfinite(e)] = 0.0
        st = self.states[plan.key]
        st.agreed_energy = e
        assert plan.fixed is not None
        mask = select(e, plan.keep, plan.fixed)
        assert plan.bits is not None
        acc, bits, own = plan.acc, plan.bits, plan.energies.astype(np.float64)
        plan.acc = plan.bits = plan.energies = None
        return self._finish(plan, acc, bits, mask, own, e)

    def _finish(
        self,
        plan: Plan,
        acc: np.ndarray,
        bits: np.ndarray,
        mask: np.ndarray,
        energy: np.ndarray,
        ranking: np.ndarray,
    ) -> Plan:
        """Split ``acc`` by ``mask`` (non-finite blocks added), fill the payload and its
        tail. ``energy``: this worker's block energies; ``ranking``: those the mask was
        chosen by (the allgather path re-selects by them with the non-finite blocks first)."""
        st, k, nb = self.states[plan.key], self.k, plan.blocks
        bad = bits != 0
        overflow = False
        if bad.any() and plan.compressed:
            if plan.path == "allgather":
                # The message holds the same number of blocks on every worker: the
                # non-finite ones go first; what does not fit raises the overflow flag.
                assert plan.fixed is not None
                mask = select(np.where(bad, np.inf, ranking), plan.keep, plan.fixed)
                overflow = not mask[bad].all()
            else:
                mask = mask | bad  # the switch paths take any number of blocks
        sent, _rest = st.feedback.split(acc, expand(mask, k, plan.size))
        payload = np.zeros(nb * k + plan.tail, dtype=np.float32)
        payload[: plan.size] = sent
        if bad.any():
            # A non-finite block travels whole as NaN or its one infinity, so that any sum
            # of blocks (the switch's OR of the bits, numpy's element-wise sum on the
            # allgather path) gives what the uncompressed path gives for the block.
            carried = bad & mask
            payload[: nb * k].reshape(nb, k)[carried] = _fill(bits[carried])[:, None]
            if self.config.error_feedback:
                st.feedback.residual = plan.prior_residual  # void: keep the residual clean
        if self._feeds_quantization(plan.path) and not bad.any():
            plan.sent_index = np.flatnonzero(mask)
            plan.sent_rows = payload[: nb * k].reshape(nb, k)[plan.sent_index]  # a copy
        t = payload[nb * k :]
        t[0] = min(energy[mask].sum(), _F32_MAX)
        t[1] = min(energy.sum(), _F32_MAX)
        t[2] = st.last_seconds
        t[TAIL_OVERFLOW] = np.nan if overflow else 0.0
        plan.mask, plan.payload = mask, payload
        return plan

    def _feeds_quantization(self, path: str) -> bool:
        cfg = self.config
        return cfg.error_feedback and cfg.quantization_feedback and path != "allgather"

    def exponents_for(self, plan: Plan) -> np.ndarray | None:
        """A buffer for the switch call's agreed exponents (``allreduce``'s ``exponents=``,
        then ``complete``'s) when the plan feeds the quantization error back; None when
        nothing would use them (the session then copies none)."""
        if plan.sent_index is None:
            return None
        return np.zeros(block_count(plan.payload.size, self.k), dtype=np.uint8)

    def complete(
        self,
        plan: Plan,
        summed: np.ndarray,
        seconds: float | None = None,
        exponents: np.ndarray | None = None,
    ) -> np.ndarray:
        """The workers' mean of the tensor from the summed payload (float32, ``plan.size``
        elements); feeds the policy, the cost model and the agreed rule. ``seconds``: the
        collective's time on this worker (default: since ``prepare``). ``exponents``: the
        switch call's agreed exponent per block of the payload (``AllreduceSession.allreduce``'s
        ``exponents=``): this worker's quantization error then joins its residual."""
        s = np.ravel(summed)
        if plan.energies is not None:
            raise ValueError("complete: an agreed plan needs agree() before its collective")
        if s.shape != plan.payload.shape:
            raise ValueError(f"summed payload has {s.size} elements, the plan {plan.payload.size}")
        st = self.states[plan.key]
        k, nb, n = self.k, plan.blocks, self.n
        t = s[nb * k :].astype(np.float64)
        grad = s[: plan.size]
        if not np.isfinite(t[TAIL_OVERFLOW]):
            # some worker could not carry all its non-finite blocks: which they were is
            # unknown here, so the whole tensor is non-finite on every worker
            grad = np.full(plan.size, np.nan, dtype=np.float32)
        nonfinite = not bool(np.isfinite(grad).all())
        kept = float(t[0] / t[1]) if t[1] > 0 else 1.0
        prev_seconds = float(t[2]) / n if t[2] > 0 else None
        if st.last_path is not None and prev_seconds is not None:
            st.cost.observe(st.last_path, st.last_volume, prev_seconds)
        if nonfinite:
            # Void step (an AMP grad scaler skips it): every worker keeps its residual,
            # policy and agreed energies as they were before it.
            st.nonfinite_steps += 1
            if self.config.error_feedback:
                st.feedback.residual = plan.prior_residual
        if not nonfinite:
            st.union = int(np.count_nonzero(blocks_of(grad, k).any(axis=1)))
            if exponents is not None and plan.sent_index is not None:
                self._feed_quantization(st, plan, exponents)
        st.last_seconds = (time.monotonic() - plan.t0) if seconds is None else float(seconds)
        st.last_path, st.last_volume = plan.path, plan.volumes[plan.path]
        st.paths.append(plan.path)
        if plan.compressed and not nonfinite:
            report = StepReport(
                step=plan.step,
                ratio=plan.ratio,
                kept=kept,
                comm_seconds=prev_seconds,
                dense_seconds=st.cost.predict("dense", plan.volumes["dense"]),
            )
            st.reports.append(report)
            st.policy.update(report)
        st.step += 1
        out = grad / np.float32(n)
        return out.astype(np.float32, copy=False)

    def _feed_quantization(self, st: TensorState, plan: Plan, exponents: np.ndarray) -> None:
        """residual += what the switch rounded off this worker's sent blocks."""
        e = np.ravel(np.asarray(exponents))
        nb, k = plan.blocks, self.k
        if e.size != block_count(plan.payload.size, k):
            raise ValueError(
                f"complete: {e.size} exponents for a payload of "
                f"{block_count(plan.payload.size, k)} blocks"
            )
        assert plan.sent_index is not None and plan.sent_rows is not None
        err = quantization_error(plan.sent_rows, e[plan.sent_index], self.n)
        padded = np.zeros(nb * k, dtype=np.float32)
        padded.reshape(nb, k)[plan.sent_index] = err
        res = st.feedback.residual
        st.feedback.residual = padded[: plan.size] if res is None else res + padded[: plan.size]
        plan.sent_index = plan.sent_rows = None

    # ------------------------------------------------------------ the allgather path

    def pack(self, plan: Plan) -> np.ndarray:
        """This worker's allgather message: the selected block indices (as float32, exact
        below 2^24), their blocks, then the tail; the same length on every worker."""
        if plan.blocks >= 1 << 24:
            raise ValueError(f"{plan.blocks} blocks: the allgather path indexes fewer than 2^24")
        k, nb = self.k, plan.blocks
        idx = np.flatnonzero(plan.mask)
        body = plan.payload[: nb * k].reshape(nb, k)[idx]
        return np.concatenate(
            [idx.astype(np.float32), body.ravel(), plan.payload[nb * k :]]
        ).astype(np.float32, copy=False)

    def unpack_sum(self, plan: Plan, gathered: np.ndarray) -> np.ndarray:
        """The summed payload from every worker's ``pack`` (shape (n, L)), summed in rank
        order so every worker gets the same float32 result."""
        k, nb, c = self.k, plan.blocks, plan.selected
        g = np.asarray(gathered, dtype=np.float32)
        length = c * (k + 1) + plan.tail
        if g.shape != (self.n, length):
            raise ValueError(f"allgather gave shape {g.shape}, expected ({self.n}, {length})")
        out = np.zeros(nb * k + plan.tail, dtype=np.float32)
        body = out[: nb * k].reshape(nb, k)
        for r in range(self.n):
            row = g[r]
            idx = row[:c].astype(np.int64)
            if np.any(idx < 0) or np.any(idx >= nb) or np.any(row[:c] != idx):
                raise ValueError(f"allgather: rank {r} sent block indices outside 0 .. {nb - 1}")
            if np.unique(idx).size != idx.size:
                raise ValueError(f"allgather: rank {r} sent a block twice")
            body[idx] += row[c : c * (k + 1)].reshape(c, k)
            out[nb * k :] += row[c * (k + 1) :]
        return out


def _fill(bits: np.ndarray) -> np.ndarray:
    """The value a whole non-finite block travels as: NaN for a NaN or both infinities,
    else its one infinity (float32, one per block)."""
    nan = (bits & NF_NAN != 0) | ((bits & NF_POS_INF != 0) & (bits & NF_NEG_INF != 0))
    return np.where(nan, np.nan, np.where(bits & NF_POS_INF != 0, np.inf, -np.inf)).astype(
        np.float32
    )
