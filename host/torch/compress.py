"""Block top-k with error feedback as a DDP communication hook (docs/compression.md).

    state = TopKHookState.create(TopKConfig(ratio=0.02))     # collective, every rank
    ddp.register_comm_hook(state, topk_hook)
    ...
    state.close()

On a process group of backend ``p4reduce`` the hook uses that group's switch job; on any
other group (gloo) it joins a switch job of its own (``HookState.create``). Per bucket and
step, the cost model of ``p4reduce.host.compress`` picks the collective: a dense or sparse
all-reduce through the switch (the session's ``mode``), or an allgather of
(index, block) pairs over the process group (gloo). The result is the workers' mean.

No ``from __future__ import annotations`` here: DDP compares the hook's annotations with
the real ``dist.GradBucket`` and ``torch.futures.Future[torch.Tensor]`` objects.
"""

import contextlib
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.distributed as dist

from ..api import AllreduceStats
from ..compress import BlockTopK, TopKConfig, ranges_to_blocks, session_paths
from ..compress.compressor import Plan
from .backend import P4ReduceProcessGroup
from .completion import Completion, failed
from .endpoint import Endpoint
from .hook import HookState
from .options import P4ReduceOptions
from .stats import StatsMark


def edge_layers(model: torch.nn.Module) -> list[torch.nn.Parameter]:
    """The parameters of the first and the last module that holds parameters of its own
    (for ``dense_params``: those layers are sent whole every step)."""
    owners = [m for m in model.modules() if any(True for _ in m.parameters(recurse=False))]
    if not owners:
        return []
    chosen = [owners[0]] if len(owners) == 1 else [owners[0], owners[-1]]
    return [p for m in chosen for p in m.parameters(recurse=False)]


@dataclass(eq=False)
class TopKHookState:
    """The state of ``topk_hook``. Make it with ``create``."""

    topk: BlockTopK
    endpoint: Endpoint
    process_group: dist.ProcessGroup
    dense_params: frozenset[int] = frozenset()
    owned: HookState | None = None
    marks: StatsMark = field(init=False, repr=False)
    _always: dict[tuple[int, int], np.ndarray] = field(default_factory=dict, repr=False)
    _layout: dict[int, list[tuple[torch.nn.Parameter, int]]] = field(
        default_factory=dict, repr=False
    )
    """Per bucket index: its parameters and their offsets in the bucket (the last step's)."""

    def __post_init__(self) -> None:
        self.marks = StatsMark(lambda: self.endpoint.session.stats)

    @classmethod
    def create(
        cls,
        config: TopKConfig | None = None,
        process_group: dist.ProcessGroup | None = None,
        options: P4ReduceOptions | None = None,
        dense_params: Iterable[torch.nn.Parameter] = (),
    ) -> "TopKHookState":
        """Collective: every rank of ``process_group`` (default: the default group) calls
        it. A p4reduce group's own switch job is used (``options`` must then be None);
        another group gets a switch job of its own (``HookState.create(pg, options)``;
        pass ``P4ReduceOptions(program="sparse")`` or ``mode`` other than "dense" for the
        sparse path). ``dense_params``: parameters sent whole every step (e.g.
        ``edge_layers(model)``)."""
        config = TopKConfig() if config is None else config
        pg = dist.group.WORLD if process_group is None else process_group
        owned = None
        if isinstance(pg, P4ReduceProcessGroup):
            if options is not None:
                raise ValueError(
                    "TopKHookState.create: a p4reduce group brings its own switch job; "
                    "pass its options to init_process_group, not here"
                )
            endpoint = pg.endpoint
        else:
            owned = HookState.create(pg, options)
            endpoint = owned.endpoint
        try:
            session = endpoint.session
            topk = BlockTopK(
                config,
                n=session.n,
                k=session.k,
                slots=session.session.slots,
                paths=session_paths(session, allgather=True),
                nonfinite=session.nonfinite,
            )
        except BaseException:
            if owned is not None:
                owned.close()
            raise
        return cls(topk, endpoint, pg, frozenset(id(p) for p in dense_params), owned)

    @property
    def stats(self) -> AllreduceStats:
        """Cumulative statistics of this rank's switch calls (the allgather path's traffic
        runs on gloo and is not counted)."""
        return self.endpoint.session.stats

    def since(self, reset: bool = True) -> AllreduceStats:
        """Switch statistics since the previous ``since(reset=True)``."""
        return self.marks.since(reset)

    def close(self) -> None:
        """Leave the hook's own switch job, if it made one (a p4reduce group's job is the
        group's)."""
        if self.owned is not None:
            self.owned.close()

    def __enter__(self) -> "TopKHookState":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def virtual(self, lr: float) -> Iterator[None]:
        """Inside: every parameter a top-k bucket holds is ``p − lr · residual`` (this rank's
        residual of what top-k has not sent yet); on exit the weights are restored bit for
        bit. Put the forward and backward pass in it, with plain SGD at ``lr``:

            with state.virtual(lr):
                loss_fn(ddp(x), y).backward()
            opt.step()

        The gradient is then taken at error feedback's virtual iterate (the weights the
        unsent part would have moved them to), not at weights that lag it by what waits in
        the residual; at a learning rate near dense SGD's limit that lag made top-k unstable
        (agreed selection lost 12-54 points on digits at lr 1.0; docs/compression.md)."""
        if not lr > 0:
            raise ValueError(f"TopKHookState.virtual: lr {lr!r} must be positive")
        saved: list[tuple[torch.Tensor, torch.Tensor]] = []
        try:
            with torch.no_grad():
                for index, layout in self._layout.items():
                    st = self.topk.states.get(index)
                    res = None if st is None else st.feedback.residual
                    if res is None or not res.any():
                        continue
                    r = torch.from_numpy(res)
                    for p, off in layout:
                        if off + p.numel() > r.numel():
                            continue  # the bucket was rebuilt since: no residual of p here
                        saved.append((p.data, p.data.clone()))
                        shift = r[off : off + p.numel()].view_as(p).to(p.device, p.dtype)
                        p.data.sub_(shift, alpha=lr)
            yield
        finally:
            with torch.no_grad():
                for data, copy in saved:
                    data.copy_(copy)

    def _remember(self, bucket: dist.GradBucket, buf: torch.Tensor) -> None:
        base, item = buf.data_ptr(), buf.element_size()
        self._layout[bucket.index()] = [
            (p, (g.data_ptr() - base) // item)
            for p, g in zip(bucket.parameters(), bucket.gradients(), strict=True)
        ]

    def always(self, bucket: dist.GradBucket, buf: torch.Tensor) -> np.ndarray | None:
        """The block mask of the bucket's ``dense_params`` (cached per bucket layout)."""
        if not self.dense_params:
            return None
        key = (bucket.index(), buf.numel())
        mask = self._always.get(key)
        if mask is None:
            base, item = buf.data_ptr(), buf.element_size()
            ranges = [
                ((g.data_ptr() - base) // item, (g.data_ptr() - base) // item + g.numel())
                for p, g in zip(bucket.parameters(), bucket.gradients(), strict=True)
                if id(p) in self.dense_params
            ]
            nb = -(-buf.numel() // self.topk.k)
            mask = ranges_to_blocks(ranges, self.topk.k, nb)
            self._always[key] = mask
        return mask


def topk_hook(state: TopKHookState, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """Block top-k with error feedback of a float32 bucket; the future resolves to the
    bucket's tensor holding the workers' mean of what was sent. Other dtypes are averaged
    through the process group uncompressed. Never raises: an error fails the future."""
    buf = bucket.buffer()
    what = f"{state.endpoint.what}, rank {state.endpoint.rank}, top-k bucket {bucket.index()}"
    try:
        if buf.dtype != torch.float32:
            n = dist.get_world_size(state.process_group)
            work = dist.all_reduce(buf, group=state.process_group, async_op=True)
            return work.get_future().then(lambda fut: fut.value()[0].div_(n))
        grad = buf.detach().to("cpu").contiguous().numpy()
        state._remember(bucket, buf)
        plan = state.topk.prepare(bucket.index(), grad, state.always(bucket, buf))
        if plan.energies is not None:
            # Agreed selection: the workers' block energies of this step first (a dense
            # call of B elements; it waits, in order, for the buckets submitted before).
            summed = state.endpoint.session.allreduce(plan.energies, op="sum", mode="dense")
            plan = state.topk.agree(plan, summed)
        if plan.path == "allgather":
            return _allgather(state, plan, buf)
        return _switch(state, plan, buf, what)
    except Exception as err:  # noqa: BLE001 - a hook that raises garbles DDP's error
        return failed(err, what, buf).future


def _write(
    state: TopKHookState,
    plan: Plan,
    buf: torch.Tensor,
    summed: np.ndarray,
    exponents: np.ndarray | None = None,
) -> None:
    mean = state.topk.complete(plan, summed, time.monotonic() - plan.t0, exponents)
    buf.copy_(torch.from_numpy(mean))


def _switch(
    state: TopKHookState, plan: Plan, buf: torch.Tensor, what: str
) -> torch.futures.Future[torch.Tensor]:
    # the call's agreed exponents: this rank's quantization error joins its residual
    exponents = state.topk.exponents_for(plan)
    call = state.endpoint.session.allreduce_async(
        plan.payload, op="sum", mode=plan.path, out=plan.payload, exponents=exponents
    )
    c = Completion(buf, what, finish=lambda: _write(state, plan, buf, call.result(), exponents))
    c.add(call)
    c.seal()
    return c.future


def _allgather(
    state: TopKHookState, plan: Plan, buf: torch.Tensor
) -> torch.futures.Future[torch.Tensor]:
    msg = torch.from_numpy(state.topk.pack(plan))
    n = state.topk.n
    outs = [torch.empty_like(msg) for _ in range(n)]
    work = dist.all_gather(outs, msg, group=state.process_group, async_op=True)

    def done(fut: torch.futures.Future) -> torch.Tensor:
        fut.wait()
        gathered = np.stack([o.numpy() for o in outs])
        _write(state, plan, buf, state.topk.unpack_sum(plan, gathered))
        return buf

    return work.get_future().then(done)
