"""A torchrun worker of tests/torch/test_elastic.py: int32 all-reduces with a known sum on a
p4reduce group at an external service (P4T_URL, P4T_PORTS); in torchrun's first attempt,
rank 1 dies after P4T_DIE_AFTER collectives, so torchrun restarts every worker and they
join the running job again (rejoin). Each attempt writes what it saw to P4T_DIR."""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch
import torch.distributed as dist
from p4reduce.host.torch import P4ReduceOptions

RANK = int(os.environ["RANK"])
ATTEMPT = int(os.environ.get("TORCHELASTIC_RESTART_COUNT") or 0)
STEPS = 8


def main() -> None:
    ports = [int(p) for p in os.environ["P4T_PORTS"].split(",")]
    dist.init_process_group(
        "p4reduce", pg_options=P4ReduceOptions(url=os.environ["P4T_URL"], udp_port=ports[RANK])
    )
    n = dist.get_world_size()
    wrong = []
    for step in range(STEPS):
        t = torch.arange(1000, dtype=torch.int32) * (RANK + 1) + step
        dist.all_reduce(t)
        if not torch.equal(
            t, torch.arange(1000, dtype=torch.int32) * (n * (n + 1) // 2) + n * step
        ):
            wrong.append(step)
        if ATTEMPT == 0 and RANK == 1 and step + 1 == int(os.environ["P4T_DIE_AFTER"]):
            os._exit(3)  # a crash: no leave, no goodbye
    out = Path(os.environ["P4T_DIR"]) / f"rank{RANK}-attempt{ATTEMPT}.json"
    out.write_text(json.dumps({"steps": STEPS, "wrong": wrong}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
