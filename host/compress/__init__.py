"""Gradient compression that the switch can add (docs/compression.md): block top-k with
error feedback, an exchangeable ratio policy, and a cost model that picks per tensor the
collective (dense or sparse all-reduce through the switch, or an allgather of
(index, block) pairs). Pure numpy; ``p4reduce.host.torch.compress`` is the DDP hook."""

from __future__ import annotations

from .compressor import MODES, SELECTIONS, BlockTopK, Plan, TensorState, TopKConfig
from .cost import PATHS, CostModel, volumes
from .policy import AdaptiveRatio, FixedRatio, RatioPolicy, StepReport
from .session import allreduce_topk, for_session, session_paths
from .topk import ErrorFeedback, block_energy, keep_count, ranges_to_blocks, select

__all__ = [
    "MODES",
    "PATHS",
    "SELECTIONS",
    "AdaptiveRatio",
    "BlockTopK",
    "CostModel",
    "ErrorFeedback",
    "FixedRatio",
    "Plan",
    "RatioPolicy",
    "StepReport",
    "TensorState",
    "TopKConfig",
    "allreduce_topk",
    "block_energy",
    "for_session",
    "keep_count",
    "ranges_to_blocks",
    "select",
    "session_paths",
    "volumes",
]
