"""One rank of the non-finite scenario: ``python tests/torch/ranks_nonfinite.py nonfinite``.

The same environment as ranks.py (whose helpers it uses). NaN/±Inf through a "p4reduce"
group, next to gloo: all_reduce of float32, float16 and bfloat16 tensors where one rank
has an Inf and the other a NaN, and an AMP GradScaler training loop under DDP where one
rank's gradients overflow at one step. The rank measures; the test asserts.
"""

from __future__ import annotations

import sys
import traceback

import torch
import torch.distributed as dist
from p4reduce.host.torch import P4ReduceOptions
from ranks import RANK, N, init, result, save, stack_pids
from torch.nn.parallel import DistributedDataParallel as DDP

K = 64  # elements per block of the loopback stack
OVERFLOW_STEP = 2  # the step at which rank N-1's loss is scaled to infinity


def nonfinite_allreduce(ref: dist.ProcessGroup) -> None:
    """Rank 0: NaN at element 150 (block 2); the last rank: +Inf at 5 (block 0). gloo
    gives NaN/Inf at those two elements; p4reduce at every element of their blocks."""
    out = {}
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        g = torch.Generator().manual_seed(10 + RANK)
        x = torch.randn(200, generator=g).to(dtype)
        if RANK == 0:
            x[150] = float("nan")
        if RANK == N - 1:
            x[5] = float("inf")
        a, b = x.clone(), x.clone()
        dist.all_reduce(a)
        dist.all_reduce(b, group=ref)
        bad_p4 = ~torch.isfinite(a)
        bad_gloo = ~torch.isfinite(b)
        blocks = torch.zeros(200, dtype=torch.bool)
        blocks[0:K] = True
        blocks[2 * K : 3 * K] = True
        out[str(dtype)] = {
            "dtype": str(a.dtype),
            "gloo_nonfinite_inside_p4reduce_blocks": bool((bad_gloo <= blocks).all()),
            "p4reduce_nonfinite_is_the_blocks": bool(torch.equal(bad_p4, blocks)),
            "block0_inf": bool((a[0:K] == float("inf")).all()),
            "block2_nan": bool(torch.isnan(a[2 * K : 3 * K]).all()),
            "gloo_5_inf": bool(b[5] == float("inf")),
            "gloo_150_nan": bool(torch.isnan(b[150])),
            "finite_close": bool(
                torch.allclose(a[~blocks].float(), b[~blocks].float(), rtol=1e-2, atol=1e-2)
            ),
        }
    result["allreduce"] = out


def grad_scaler(group: dist.ProcessGroup | None) -> dict[str, list]:
    """Five steps of DDP + GradScaler on ``group`` (None: the p4reduce default group); at
    OVERFLOW_STEP the last rank's scaled loss overflows. Per step: the scale after
    ``update`` and whether ``step`` changed the parameters."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    ddp = DDP(model, process_group=group, bucket_cap_mb=0.001)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**12, growth_interval=2)
    g = torch.Generator().manual_seed(100 + RANK)
    scales, stepped, params = [], [], []
    for step in range(5):
        x = torch.randn(16, 8, generator=g)
        opt.zero_grad()
        loss = ddp(x).square().mean()
        if step == OVERFLOW_STEP and RANK == N - 1:
            loss = loss * float("inf")  # this rank's gradients overflow (Inf/NaN)
        before = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).clone()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        after = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
        scales.append(float(scaler.get_scale()))
        stepped.append(not torch.equal(before, after))
        params.append(bool(torch.isfinite(after).all()))
    return {"scales": scales, "stepped": stepped, "finite_params": params}


def scenario_nonfinite() -> None:
    init("p4reduce", P4ReduceOptions())
    result["pids"] = stack_pids(dist.group.WORLD)
    result["backend"] = dist.get_backend()
    ref = dist.new_group(backend="gloo")
    nonfinite_allreduce(ref)
    result["scaler_p4reduce"] = grad_scaler(None)
    result["scaler_gloo"] = grad_scaler(ref)
    dist.destroy_process_group()


if __name__ == "__main__":
    try:
        {"nonfinite": scenario_nonfinite}[sys.argv[1]]()
    except BaseException as err:
        result["failure"] = "".join(traceback.format_exception(err))
        save()
        raise
    save()
