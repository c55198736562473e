"""The baseline worker: torch.distributed's gloo all-reduce (a ring for large tensors) on
the same tensors as ``p4reduce.testbed.worker``, inside a Mininet host.

    python -m p4reduce.testbed.mininet.gloo_worker --master IP:PORT --rank R --n N
        --iface h1-eth0 --plan JSON [--timeout S]

Rendezvous goes to rank 0's TCP store at ``--master`` (the management network); gloo's own
connections use ``--iface`` (``GLOO_SOCKET_IFNAME``), the host's data interface, so the
all-reduce crosses the P4 switch's ordinary forwarding, over the same links as p4reduce.

The plan has the items of testbed/worker.py (``elements``, ``dtype``, ``density``, ``seed``,
``k``, ``repeat``, ``warmup``, ``save``); ``mode`` is ignored. Each item: the same tensor
(``testbed.data.rank_data``), a gloo barrier, the warm-up and timed calls, one JSON line per
timed call on stdout (``mode`` "gloo", ``seconds``), and the last result saved when asked.
gloo adds int32 exactly (wrapping), so int32 results compare exactly. Errors: one line on
stderr, exit 1.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from typing import Any

import numpy as np

from ...cli_common import OneLineArgumentParser, rank_main
from ..data import rank_data

PROG = "p4reduce-gloo-worker"


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = OneLineArgumentParser(exit_status=2, prog=PROG, description="a gloo baseline worker")
    p.add_argument("--master", required=True, metavar="IP:PORT", help="rank 0's TCP store")
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--iface", required=True, help="the interface gloo's traffic uses")
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument("--plan", required=True, help="JSON list of calls to run")
    return p.parse_args(argv)


def run(args: argparse.Namespace) -> None:
    os.environ["GLOO_SOCKET_IFNAME"] = args.iface
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)  # N workers share two cores with the switch
    dist.init_process_group(
        "gloo", init_method=f"tcp://{args.master}", rank=args.rank, world_size=args.n,
        timeout=datetime.timedelta(seconds=args.timeout),
    )  # fmt: skip
    try:
        for i, item in enumerate(json.loads(args.plan)):
            density = float(item.get("density", 1.0))
            x = rank_data(
                int(item.get("seed", 0)), args.rank, int(item["elements"]), item["dtype"],
                density, int(item.get("k", 64)),
            )  # fmt: skip
            t = torch.from_numpy(x)
            buf = t.clone()
            dist.barrier()
            for _ in range(int(item.get("warmup", 0))):
                buf.copy_(t)
                dist.all_reduce(buf)
            for c in range(int(item.get("repeat", 1))):
                buf.copy_(t)
                t0 = time.perf_counter()
                dist.all_reduce(buf)
                seconds = time.perf_counter() - t0
                line: dict[str, Any] = {
                    "rank": args.rank, "item": i, "call": c, "elements": int(x.size),
                    "dtype": item["dtype"], "mode": "gloo", "density": density,
                    "seconds": seconds, "stats": {},
                }  # fmt: skip
                print(json.dumps(line), flush=True)
            if item.get("save"):
                np.save(str(item["save"]).format(rank=args.rank), buf.numpy())
        dist.barrier()  # nobody leaves while a peer still needs its connections
    finally:
        dist.destroy_process_group()


def main(argv: list[str] | None = None) -> int:
    return rank_main(PROG, parse, run, argv)


if __name__ == "__main__":
    sys.exit(main())
