"""Block top-k on the numpy API: one compressed all-reduce of one array per call.

    from p4reduce.host.compress import TopKConfig, for_session, allreduce_topk

    topk = for_session(session, TopKConfig(ratio=0.02))      # session: an AllreduceSession
    mean = allreduce_topk(session, topk, grad, key="w1")     # every step, on every worker

``allgather``, when given, is a callable taking this worker's packed float32 message and
returning every worker's (shape (n, L), rank order); it enables the allgather path.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from .compressor import BlockTopK, TopKConfig

if TYPE_CHECKING:
    from ..api import AllreduceSession

Allgather = Callable[[np.ndarray], np.ndarray]


def session_paths(session: AllreduceSession, allgather: bool) -> tuple[str, ...]:
    """The collectives a session offers: dense always, sparse on the sparse program."""
    paths = ["dense"]
    if session.program == "sparse":
        paths.append("sparse")
    if allgather:
        paths.append("allgather")
    return tuple(paths)


def for_session(
    session: AllreduceSession, config: TopKConfig, *, allgather: bool = False
) -> BlockTopK:
    """A ``BlockTopK`` for the session's job (its n, K, slots and ``nonfinite`` mode)."""
    return BlockTopK(
        config,
        n=session.n,
        k=session.k,
        slots=session.session.slots,
        paths=session_paths(session, allgather),
        nonfinite=session.nonfinite,
    )


def allreduce_topk(
    session: AllreduceSession,
    topk: BlockTopK,
    grad: np.ndarray,
    *,
    key: object = 0,
    always: np.ndarray | None = None,
    allgather: Allgather | None = None,
) -> np.ndarray:
    """The workers' mean of ``grad`` (float32) after block top-k with error feedback: a
    new array of ``grad``'s shape. Every worker calls it with the same keys in the same
    order."""
    t0 = time.monotonic()
    plan = topk.prepare(key, grad, always)
    if plan.energies is not None:
        # agreed selection: the workers' block energies first (B elements, dense)
        plan = topk.agree(plan, session.allreduce(plan.energies, op="sum", mode="dense"))
    if plan.path == "allgather":
        if allgather is None:
            raise ValueError("the allgather path was chosen but no allgather was given")
        summed = topk.unpack_sum(plan, allgather(topk.pack(plan)))
        exponents = None
    else:
        # the call's agreed exponents: this worker's quantization error joins its residual
        exponents = topk.exponents_for(plan)
        summed = session.allreduce(plan.payload, op="sum", mode=plan.path, exponents=exponents)
    mean = topk.complete(plan, summed, time.monotonic() - t0, exponents)
    return mean.reshape(np.shape(grad))
