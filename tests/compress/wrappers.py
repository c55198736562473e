"""One rank of test_wrappers.py: ``python tests/compress/wrappers.py HOOK...``.

DDP with one of torch's own compression hooks on a process group of backend "p4reduce"
and, from the same weights and data, on a gloo group; the rank writes (as JSON to
$P4T_OUT) the largest parameter difference between the two and how many of the hook's
all-reduces went through the switch. The environment gives RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT."""

from __future__ import annotations

import datetime
import json
import os
import sys
from typing import Any

import torch
import torch.distributed as dist
from p4reduce.host.compress import TopKConfig
from p4reduce.host.torch import P4ReduceOptions, stats
from p4reduce.host.torch.compress import TopKHookState, topk_hook
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks as dh
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as ps
from torch.nn.parallel import DistributedDataParallel as DDP

RANK, N = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
STEPS = 6
STATES: list[TopKHookState] = []


def register(ddp: DDP, name: str, pg: dist.ProcessGroup) -> None:
    if name == "fp16":
        ddp.register_comm_hook(pg, dh.fp16_compress_hook)
    elif name == "bf16":
        # DDP refuses a hook *named* bf16_compress_hook without CUDA and NCCL; the hook
        # itself is device-neutral, so it is registered under another name on the CPU.
        def bf16_on_cpu(state, bucket):  # noqa: ANN001, ANN202 - DDP checks annotations
            return dh.bf16_compress_hook(state, bucket)

        ddp.register_comm_hook(pg, bf16_on_cpu)
    elif name == "fp16-wrapper":
        ddp.register_comm_hook(pg, dh.fp16_compress_wrapper(dh.allreduce_hook))
    elif name == "powersgd":
        state = ps.PowerSGDState(
            process_group=pg, matrix_approximation_rank=2, start_powerSGD_iter=2, random_seed=7
        )
        ddp.register_comm_hook(state, ps.powerSGD_hook)
    elif name == "topk-full":
        # p4reduce's own hook at ratio 1 (everything sent): on the p4reduce group through
        # that group's job; on gloo through a switch job of its own (sparse program).
        cfg = TopKConfig(ratio=1.0, warmup_steps=0, mode="dense")
        if pg is dist.group.WORLD:
            state = TopKHookState.create(cfg)
        else:
            state = TopKHookState.create(cfg, pg, P4ReduceOptions(program="sparse", timeout=60))
        STATES.append(state)
        ddp.register_comm_hook(state, topk_hook)
    else:
        raise SystemExit(f"unknown hook {name}")


def train(name: str, pg: dist.ProcessGroup) -> torch.Tensor:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 48), torch.nn.Tanh(), torch.nn.Linear(48, 8))
    ddp = DDP(model, process_group=pg)
    register(ddp, name, pg)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for step in range(STEPS):
        g = torch.Generator().manual_seed(1000 * step + RANK)
        x, y = torch.randn(16, 32, generator=g), torch.randint(0, 8, (16,), generator=g)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def main() -> None:
    url = f"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
    dist.init_process_group(
        "p4reduce",
        init_method=url,
        rank=RANK,
        world_size=N,
        timeout=datetime.timedelta(seconds=60),
        pg_options=P4ReduceOptions(timeout=60),
    )
    gloo = dist.new_group(backend="gloo")
    out: dict[str, Any] = {}
    try:
        if sys.argv[1:] == ["nan"]:
            out["nan"] = nan_gradient()
            return
        for name in sys.argv[1:]:
            stats(reset=True)
            mine = train(name, dist.group.WORLD)
            calls = stats(reset=True).calls
            ref = train(name, gloo)
            for st in STATES:
                st.close()
            STATES.clear()
            out[name] = {"max_diff": float((mine - ref).abs().max()), "switch_calls": calls}
    finally:
        dist.destroy_process_group()
        with open(os.environ["P4T_OUT"], "w") as f:
            json.dump(out, f)


def nan_gradient() -> dict[str, Any]:
    """Non-finite gradients through the top-k hook.

    propagate (the p4reduce group, its default ``nonfinite="propagate"``): at step 1 rank 0
    alone has a NaN input, so a NaN gradient; every rank gets the non-finite blocks back,
    so torch's GradScaler skips that step on every rank and halves its scale, as with
    gloo; the steps before and after train normally.

    strict (a gloo group whose hook joins a job with ``nonfinite="raise"``): a NaN
    gradient on every rank fails the hook's future (nothing is sent) and backward()
    raises naming the cause; the next step works again."""
    torch.manual_seed(0)
    model = torch.nn.Linear(32, 8)
    ddp = DDP(model)
    state = TopKHookState.create(TopKConfig(ratio=0.25, warmup_steps=0, mode="dense"))
    ddp.register_comm_hook(state, topk_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10)
    steps = []
    for step in range(3):
        x = torch.randn(4, 32, generator=torch.Generator().manual_seed(10 * step + RANK))
        if step == 1 and RANK == 0:
            x[0, 0] = float("nan")
        before = model.weight.detach().clone()
        opt.zero_grad()
        scaler.scale(ddp(x).square().sum()).backward()
        finite = bool(
            torch.isfinite(model.weight.grad).all() and torch.isfinite(model.bias.grad).all()
        )
        scaler.step(opt)
        scaler.update()
        steps.append(
            {
                "grad_finite": finite,
                "stepped": not torch.equal(before, model.weight),
                "scale": scaler.get_scale(),
                "params_finite": bool(torch.isfinite(model.weight).all()),
            }
        )
    nonfinite_steps = sum(st.nonfinite_steps for st in state.topk.states.values())

    gloo = dist.new_group(backend="gloo")
    model = torch.nn.Linear(32, 8)
    ddp = DDP(model, process_group=gloo)
    strict = TopKHookState.create(
        TopKConfig(ratio=0.5, warmup_steps=0, mode="dense"),
        gloo,
        P4ReduceOptions(nonfinite="raise", timeout=60),
    )
    ddp.register_comm_hook(strict, topk_hook)
    x = torch.randn(4, 32)
    x[0, 0] = float("nan")
    error = None
    try:
        ddp(x).sum().backward()
    except RuntimeError as err:
        error = str(err)
    model.zero_grad()
    ddp(torch.randn(4, 32)).sum().backward()  # a clean step goes through
    strict.close()
    return {
        "steps": steps,
        "nonfinite_steps": nonfinite_steps,
        "error": error,
        "finite": bool(torch.isfinite(model.weight.grad).all()),
    }


if __name__ == "__main__":
    main()
