"""Submitting torch tensors to an ``AllreduceSession``: staged (staging.py), cut into chunks
of at most ``options.chunk_elements`` and queued as async calls, in order, on the session's
one background thread; a ``Completion`` collects them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from .completion import Completion
from .endpoint import Endpoint
from .staging import Staged


def allreduce(
    endpoint: Endpoint,
    tensors: Sequence[torch.Tensor],
    op: str,
    value: Any,
    check: Callable[[], None] | None = None,
    timeout: float | None = None,
) -> Completion:
    """Reduce every tensor of ``tensors`` in place with ``op`` ("sum" or "avg"); the
    completion's future resolves to ``value``, or fails within ``timeout`` seconds (the
    group's timeout) naming what it waited for. Errors, also those raised at submission,
    are the completion's (the caller never sees an exception here)."""
    what = f"{endpoint.what}, rank {endpoint.rank}, job {endpoint.job_id}"
    staged: list[Staged] = []

    def finish() -> None:
        for s in staged:
            s.finish()

    elements = sum(t.numel() for t in tensors if isinstance(t, torch.Tensor))
    label = f"the all-reduce ({op}) of {len(tensors)} tensor(s) of {elements} elements"
    c = Completion(value, what, finish=finish, check=check, timeout=timeout, label=label)
    try:
        staged.extend(Staged.of(t) for t in tensors)
        session, options = endpoint.session, endpoint.options
        rec = endpoint.recovery
        if rec is not None:  # first, on the session's thread: recover if a collective failed
            c.add(session.submit(rec.boundary, session, rec.next_seq()))
        for s in staged:
            for chunk in s.chunks(options.chunk_elements):
                c.add(session.allreduce_async(chunk, op=op, mode=options.mode, out=chunk))
    except Exception as err:  # noqa: BLE001 - reported through the completion
        c.fail(err)
    c.seal()
    return c
