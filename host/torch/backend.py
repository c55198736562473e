"""The ``p4reduce`` torch.distributed backend: a Python ``ProcessGroup`` whose float32,
float16, bfloat16 and int32 SUM/AVG all-reduces go through the switch (float64 too when
``P4ReduceOptions.switch_float64``), and everything else through a private
gloo backend made from the same store (keys under ``p4reduce-gloo/``).

Two routes lead to the gloo backend, and both matter:

- Every method the C++ trampoline (``PyProcessGroup``) forwards to Python — allreduce,
  allreduce_coalesced, allgather, broadcast, barrier, reduce_scatter, all_to_all_single,
  send, recv and the two ``*_single_coalesced`` — is overridden here and delegated to a
  plain ``ProcessGroup`` holding the gloo backend. Left to the trampoline, the C++ base
  method would run with the GIL held (``WORK_OVERRIDE`` keeps it while calling the base),
  and gloo's worker thread, which frees finished work (and with it the Python objects of
  its tensors) under its queue lock, deadlocks against it: seen as a reduce_scatter that
  never returned. Through the plain group's Python binding the GIL is released first.
- The gloo backend is also registered as this group's backend for the CPU and CUDA device
  types, so the methods the trampoline does not forward (reduce, gather, scatter,
  all_gather_single, reduce_scatter_single, alltoall, …), whose bindings release the GIL,
  reach it through torch's own dispatch, from Python and from C++ (functional
  collectives, ``torch.compile``) alike.

docs/torch.md has the details.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import ProcessGroupGloo

from ..api import AllreduceStats
from . import submit
from .completion import P4ReduceWork
from .endpoint import Endpoint, connect
from .options import P4ReduceOptions, group_offset
from .rendezvous import Rendezvous
from .staging import switchable
from .stats import StatsMark

BACKEND = "p4reduce"
_GLOO_PREFIX = "p4reduce-gloo/"  # the private gloo backend's keys in the group's store
_KEYS_PREFIX = "p4reduce/"  # the address exchange's keys
_GLOO = dist.ProcessGroup.BackendType.GLOO
# The methods PyProcessGroup forwards to Python that go to gloo unchanged (see above).
_DELEGATED = (
    "allgather",
    "all_gather_single_coalesced",
    "all_to_all_single",
    "barrier",
    "broadcast",
    "reduce_scatter",
    "reduce_scatter_single_coalesced",
    "send",
    "recv",
)


def _switch_op(op: dist.ReduceOp) -> str | None:
    """The session's op for a torch reduce op the switch computes, else None."""
    if op == dist.ReduceOp.SUM:
        return "sum"
    if op == dist.ReduceOp.AVG:
        return "avg"
    return None


class P4ReduceProcessGroup(dist.ProcessGroup):
    """A process group whose all-reduces go through the switch (see the module docstring).
    Made by ``dist.init_process_group("p4reduce", ...)`` or ``dist.new_group``."""

    def __init__(
        self,
        store: dist.Store,
        rank: int,
        size: int,
        timeout: datetime.timedelta,
        options: P4ReduceOptions,
        group_name: str,
    ) -> None:
        # The (store, rank, size) constructor cannot make the Python subclass in torch 2.13,
        # so the store is kept here and get_group_store is answered in Python.
        super().__init__(rank, size)
        self._store = store
        self.options = options
        self.timeout = timeout
        self.what = f"p4reduce group {group_name!r}"
        gloo = ProcessGroupGloo(dist.PrefixStore(_GLOO_PREFIX, store), rank, size, timeout)
        self._inner = dist.ProcessGroup(store, rank, size)  # plain: its bindings drop the GIL
        for pg in (self, self._inner):
            for device in ("cpu", "cuda"):
                pg._register_backend(torch.device(device), _GLOO, gloo)
            pg._set_default_backend(_GLOO)
        rdv = Rendezvous(store, _KEYS_PREFIX, rank, size, options.timeout, self.what)
        job_id = options.job_id_for(group_offset(group_name))
        self.endpoint: Endpoint = connect(rdv, options, job_id, self.what)
        self.marks = StatsMark(lambda: self.endpoint.session.stats)  # for stats(reset=True)

    def getBackendName(self) -> str:  # noqa: N802 - the C++ name torch calls
        return BACKEND

    def get_group_store(self) -> dist.Store:
        return self._store

    # ------------------------------------------------------------ all-reduce

    def allreduce(
        self, tensors: Sequence[torch.Tensor], opts: dist.AllreduceOptions | None = None
    ) -> dist.Work:
        opts = dist.AllreduceOptions() if opts is None else opts
        op = _switch_op(opts.reduceOp)
        if (
            op is None
            or not tensors
            or not all(switchable(t, self.options.switch_float64) for t in tensors)
        ):
            return self._inner.allreduce(list(tensors), opts)
        return self._through_switch(tensors, op)

    def allreduce_coalesced(
        self, tensors: Sequence[torch.Tensor], opts: dist.AllreduceCoalescedOptions | None = None
    ) -> dist.Work:
        opts = dist.AllreduceCoalescedOptions() if opts is None else opts
        op = _switch_op(opts.reduceOp)
        if (
            op is None
            or not tensors
            or not all(switchable(t, self.options.switch_float64) for t in tensors)
        ):
            return self._inner.allreduce_coalesced(list(tensors), opts)
        return self._through_switch(tensors, op)

    def _through_switch(self, tensors: Sequence[torch.Tensor], op: str) -> dist.Work:
        tensors = list(tensors)
        completion = submit.allreduce(
            self.endpoint, tensors, op, tensors, timeout=self.timeout.total_seconds()
        )
        return P4ReduceWork(completion, self.timeout)

    # ------------------------------------------------------------ statistics

    @property
    def stats(self) -> AllreduceStats:
        """Cumulative statistics of this rank's switch calls (a copy)."""
        return self.endpoint.session.stats

    @property
    def last_stats(self) -> AllreduceStats:
        """Statistics of this rank's last completed switch call."""
        return self.endpoint.session.last_stats

    # ------------------------------------------------------------ life cycle

    def shutdown(self) -> None:
        """``destroy_process_group``: leave the job; rank 0 of a loopback group stops the
        stack once every rank has left (at most ``options.timeout`` later)."""
        try:
            self.endpoint.close(wait_for_peers=True)
        finally:
            dist.ProcessGroup.shutdown(self)

    def abort(self) -> None:
        try:
            self.endpoint.close(wait_for_peers=False)
        finally:
            dist.ProcessGroup.abort(self)

    def __repr__(self) -> str:
        ep = self.endpoint
        return (
            f"P4ReduceProcessGroup({self.what}, rank {self.rank()} of {self.size()}, "
            f"job {ep.job_id} at {ep.url})"
        )


def _delegate(name: str) -> Any:
    def method(self: P4ReduceProcessGroup, *args: Any, **kwargs: Any) -> dist.Work:
        return getattr(self._inner, name)(*args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``{name}`` on the group's private gloo backend."
    return method


for _name in _DELEGATED:
    setattr(P4ReduceProcessGroup, _name, _delegate(_name))


def _create(dist_opts: Any, pg_options: Any) -> P4ReduceProcessGroup:
    """The creator torch calls (``extended_api=True``) for every p4reduce group."""
    if pg_options is None:
        default = dist.group.WORLD if dist.is_initialized() else None
        if isinstance(default, P4ReduceProcessGroup):
            pg_options = default.options.for_subgroup()  # new_group without pg_options
        else:
            pg_options = P4ReduceOptions()
    elif not isinstance(pg_options, P4ReduceOptions):
        raise TypeError(
            f"pg_options of a p4reduce group must be p4reduce.host.torch.P4ReduceOptions, "
            f"not {type(pg_options).__name__}"
        )
    return P4ReduceProcessGroup(
        dist_opts.store,
        dist_opts.group_rank,
        dist_opts.group_size,
        dist_opts.timeout,
        pg_options,
        str(dist_opts.group_id),
    )


def register() -> None:
    """Register the ``p4reduce`` backend with torch.distributed (idempotent)."""
    if getattr(dist.Backend, BACKEND.upper(), None) == BACKEND:
        return
    dist.Backend.register_backend(BACKEND, _create, extended_api=True, devices=["cpu", "cuda"])
