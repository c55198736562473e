"""The DDP communication hook: the process group stays what it is (gloo, typically) and the
gradient buckets go through the switch.

    state = HookState.create(process_group=None, options=None)   # collective, every rank
    ddp.register_comm_hook(state, allreduce_hook)
    ...
    state.close()                                                # or at interpreter exit

No ``from __future__ import annotations`` here: DDP compares the hook's annotations with the
real ``dist.GradBucket`` and ``torch.futures.Future[torch.Tensor]`` objects, not strings.
"""

import itertools
import threading
from dataclasses import dataclass, field

import torch
import torch.distributed as dist

from ..api import AllreduceStats
from . import submit
from .completion import failed
from .endpoint import Endpoint, connect
from .errors import P4ReduceError
from .options import P4ReduceOptions
from .rendezvous import Rendezvous
from .staging import switchable
from .stats import StatsMark

_counter_lock = threading.Lock()
_counters: dict[str, "itertools.count[int]"] = {}


def _next_index(group_name: str) -> int:
    """How many hook states this process made for the group before (the same on every
    rank, as long as every rank makes them in the same order)."""
    with _counter_lock:
        return next(_counters.setdefault(group_name, itertools.count()))


def _group_store(pg: dist.ProcessGroup, group_name: str) -> dist.Store:
    store = pg.get_group_store()
    if store is not None:
        return store
    # A group made without a store of its own: the default store, under the group's name.
    default = dist.distributed_c10d._get_default_store()
    return dist.PrefixStore(f"{group_name}/", default)


def _group_timeout(pg: dist.ProcessGroup) -> float:
    """The timeout ``pg`` was made with, in seconds (torch's default when it keeps none)."""
    timeout = getattr(pg, "timeout", None)  # a P4ReduceProcessGroup
    if timeout is None:
        try:  # gloo (and NCCL) keep it in their backend's options
            timeout = pg._get_backend(torch.device("cpu")).options._timeout
        except (AttributeError, RuntimeError):
            timeout = dist.default_pg_timeout
    return float(timeout.total_seconds())


@dataclass(eq=False)
class HookState:
    """The state of ``allreduce_hook``: this rank's session in the hook's switch job (and on
    rank 0, without ``options.url``, the loopback stack). Make it with ``create``."""

    process_group: dist.ProcessGroup
    options: P4ReduceOptions
    endpoint: Endpoint
    world_size: int
    # seconds: a bucket not reduced by then fails naming what it waited for (the group's
    # timeout from init_process_group / new_group)
    timeout: float = dist.default_pg_timeout.total_seconds()
    marks: StatsMark = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.marks = StatsMark(lambda: self.endpoint.session.stats)

    @classmethod
    def create(
        cls,
        process_group: dist.ProcessGroup | None = None,
        options: P4ReduceOptions | None = None,
    ) -> "HookState":
        """Join a switch job for the ranks of ``process_group`` (default: the default
        group). Collective: every rank of the group calls it, in the same order as its
        other hook states. Addresses are exchanged over the group's store; without
        ``options.url`` rank 0 starts a loopback stack (as the backend does)."""
        if not dist.is_initialized():
            raise P4ReduceError("HookState.create: call dist.init_process_group first")
        pg = dist.group.WORLD if process_group is None else process_group
        options = P4ReduceOptions() if options is None else options
        if not isinstance(options, P4ReduceOptions):
            raise TypeError(f"options must be P4ReduceOptions, not {type(options).__name__}")
        rank, n = dist.get_rank(pg), dist.get_world_size(pg)
        if rank < 0:
            raise P4ReduceError("HookState.create: this process is not in the process group")
        name = pg.group_name
        index = _next_index(name)
        what = f"p4reduce hook state {index} of group {name!r}"
        rdv = Rendezvous(
            _group_store(pg, name), f"p4reduce-hook/{index}/", rank, n, options.timeout, what
        )
        endpoint = connect(rdv, options, options.job_id_for(index), what)
        return cls(pg, options, endpoint, n, _group_timeout(pg))

    @property
    def stats(self) -> AllreduceStats:
        """Cumulative statistics of this rank's switch calls (a copy)."""
        return self.endpoint.session.stats

    @property
    def last_stats(self) -> AllreduceStats:
        """Statistics of this rank's last completed switch call."""
        return self.endpoint.session.last_stats

    def close(self) -> None:
        """Leave the job; rank 0 of a loopback state stops the stack once every rank has
        left (at most ``options.timeout`` later). Idempotent; also done at exit."""
        self.endpoint.close(wait_for_peers=True)

    def __enter__(self) -> "HookState":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def allreduce_hook(state: HookState, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """Average a DDP gradient bucket over the ranks through the switch (DDP does not divide
    when a hook is installed). float32, float16 and bfloat16 buckets (float64 with
    ``options.switch_float64``) go through the switch, in chunks of at most
    ``options.chunk_elements``; other dtypes through the process group, then divided.
    Never raises: errors fail the returned future, so they reach ``backward()``."""
    buf = bucket.buffer()
    try:
        if not buf.is_floating_point() or not switchable(buf, state.options.switch_float64):
            return _through_group(state, buf)
        numel, dtype = buf.numel(), buf.dtype

        def check() -> None:
            # DDP takes any tensor the future resolves to and would silently scatter a
            # wrongly sized one into the gradients.
            if buf.numel() != numel or buf.dtype != dtype:
                raise P4ReduceError(
                    f"{state.endpoint.what}: bucket {bucket.index()} result has "
                    f"{buf.numel()} {buf.dtype} elements, the bucket {numel} {dtype}"
                )

        return submit.allreduce(
            state.endpoint, [buf], "avg", buf, check=check, timeout=state.timeout
        ).future
    except Exception as err:  # noqa: BLE001 - a hook that raises garbles DDP's error
        return failed(err, state.endpoint.what, buf).future


def _through_group(state: HookState, buf: torch.Tensor) -> torch.futures.Future[torch.Tensor]:
    work = dist.all_reduce(buf, group=state.process_group, async_op=True)
    n = state.world_size
    return work.get_future().then(lambda fut: fut.value()[0].div_(n))
