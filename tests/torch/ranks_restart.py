"""One rank of the switch-restart scenario (tests/torch/test_switch_restart.py): DDP training
of a small model plus an int32 all-reduce with a known sum per step, on a p4reduce group
whose switch and registration service the test runs (P4T_URL, P4T_PORTS). The rank writes
its progress after every step (so the test can kill the switch mid-run), its losses, and
every collective that failed or came back wrong."""

from __future__ import annotations

import os
import sys
import time
import traceback

import torch
from p4reduce.host import RetryPolicy
from p4reduce.host.torch import P4ReduceOptions
from ranks import RANK, init, result, save
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = int(os.environ.get("P4T_STEPS", "16"))


def scenario_train() -> None:
    ports = [int(p) for p in os.environ["P4T_PORTS"].split(",")]
    # give_up_after 4.75 s: time for a loaded machine to start the switch again
    retry = RetryPolicy(initial_timeout=0.05, max_timeout=0.5, give_up_after=4.75)
    init(
        "p4reduce",
        P4ReduceOptions(url=os.environ["P4T_URL"], udp_port=ports[RANK], retry=retry),
    )
    n = torch.distributed.get_world_size()
    g = torch.Generator().manual_seed(100 + RANK)
    x, y = torch.randn(16, 32, generator=g), torch.randn(16, 1, generator=g)
    result.update(losses=[[], []], wrong=[], failed=[], step=0)
    # the same training twice: undisturbed, then while the test restarts the switch
    for run in range(2):
        torch.manual_seed(5)
        model = DDP(
            torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1))
        )
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        for step in range(STEPS):
            try:
                t = torch.arange(4000, dtype=torch.int32) * (RANK + 1) + step
                torch.distributed.all_reduce(t)
                want = torch.arange(4000, dtype=torch.int32) * (n * (n + 1) // 2) + n * step
                if not torch.equal(t, want):
                    result["wrong"].append((run, step))
                opt.zero_grad()
                loss = (model(x) - y).square().mean()
                loss.backward()
                opt.step()
                result["losses"][run].append(float(loss))
            except Exception as err:  # noqa: BLE001 - counted: the test wants none
                line = traceback.format_exception_only(err)[-1]
                result["failed"].append(f"run {run} step {step}: {line}")
            result["step"] += 1
            save()
            time.sleep(0.02)  # the rest of a training step
    torch.distributed.destroy_process_group()


if __name__ == "__main__":
    try:
        {"train": scenario_train}[sys.argv[1]]()
    except BaseException as err:
        result["failure"] = "".join(traceback.format_exception(err))
        save()
        raise
    save()
