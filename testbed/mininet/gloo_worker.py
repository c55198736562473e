"""The baseline worker: torch.distributed's gloo all-reduce (a ring for large tensors) on
the same tensors as ``p4reduce.testbed.worker``, inside a Mininet host.

    python -m p4reduce.testbed.mininet.gloo_worker --master IP:PORT --rank R --n N
        --iface h1-eth0 --plan JSON [--timeout S]

Rendezvous goes to rank 0's TCP store at ``--master`` (the management network); gloo's own
connections use ``--iface`` (``GLOO_SOCKET_IFNAME``), the host's data interface, so the
all-reduce crosses the P4 switch's ordinary forwarding, over the same links as p4reduce.

The plan has the items of testbed/worker.py (``elements``, ``dtype``, ``density``, ``seed``,
``k``, ``repeat``, ``warmup``, ``save``).

- ``ring`` (or anything else, the default): ``all_reduce`` of the dense tensor, gloo's ring
  for large tensors;
An item's ``workers`` (default: all) runs it on ranks 0..n-1 only, in a group of them, so
one set of processes serves the points of a scaling run. Its ``mode``:

- ``agsparse``: OmniReduce's allgather baseline (AGsparse). Each worker finds its non-zero
  K-element blocks, and three ``all_gather`` calls bring every worker's block count, block
  indices and block values (padded to the largest count, as gloo's all_gather needs equal
  sizes) to every worker, which sums them locally in rank order. The call's time covers the
  scan, the three collectives and the sum; its ``stats.bytes_sent`` is what a ring
  allgather makes each worker send: (N - 1) times the padded indices and values.

Each item: the same tensor (``testbed.data.rank_data``), a gloo barrier, the warm-up and
timed calls, one JSON line per timed call on stdout (``mode``, ``seconds``, ``stats``), and
the last result saved when asked. gloo adds int32 exactly (wrapping), and so does the local
sum, so int32 results compare exactly. Errors: one line on stderr, exit 1.
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


def agsparse(x: np.ndarray, k: int, n: int, group: Any = None) -> tuple[np.ndarray, dict[str, Any]]:
    """The all-reduced sum of ``x`` over the group (n ranks; None: the default group) by an
    allgather of the non-zero K-element blocks and their indices; (result, stats)."""
    import torch
    import torch.distributed as dist

    m = x.size
    nb = -(-m // k)
    blocks = np.zeros(nb * k, dtype=x.dtype)
    blocks[:m] = x
    blocks = blocks.reshape(nb, k)
    idx = np.flatnonzero(blocks.any(axis=1)).astype(np.int32)
    counts = [torch.zeros(1, dtype=torch.int64) for _ in range(n)]
    dist.all_gather(counts, torch.tensor([idx.size], dtype=torch.int64), group=group)
    cmax = max(int(c.item()) for c in counts)
    out = np.zeros((nb, k), dtype=x.dtype)
    if cmax:
        my_idx = np.full(cmax, -1, dtype=np.int32)
        my_idx[: idx.size] = idx
        my_val = np.zeros((cmax, k), dtype=x.dtype)
        my_val[: idx.size] = blocks[idx]
        all_idx = [torch.empty(cmax, dtype=torch.int32) for _ in range(n)]
        vt = torch.from_numpy(my_val)
        all_val = [torch.empty((cmax, k), dtype=vt.dtype) for _ in range(n)]
        dist.all_gather(all_idx, torch.from_numpy(my_idx), group=group)
        dist.all_gather(all_val, vt, group=group)
        for r in range(n):  # rank order: every worker sums alike, so results are identical
            c = int(counts[r].item())
            ix = all_idx[r].numpy()[:c]
            out[ix] += all_val[r].numpy()[:c]  # indices are unique within a rank
    sent = (n - 1) * (8 + cmax * 4 * (k + 1))
    return out.reshape(-1)[:m], {"bytes_sent": sent, "blocks_max": cmax}


def run(args: argparse.Namespace) -> None:
    os.environ["GLOO_SOCKET_IFNAME"] = args.iface
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)  # N workers share two cores with the switch
    dist.init_process_group(
        "gloo", init_method=f"tcp://{args.master}", rank=args.rank, world_size=args.n,
        timeout=datetime.timedelta(seconds=args.timeout),
    )  # fmt: skip
    plan = json.loads(args.plan)
    # an item's "workers" (n): it runs on ranks 0..n-1 only, in a group of them; every rank
    # creates every group, in the same order, as torch.distributed requires
    groups: dict[int, Any] = {}
    for item in plan:
        n = int(item.get("workers", args.n))
        if n < args.n and n not in groups:
            groups[n] = dist.new_group(list(range(n)))
    try:
        for i, item in enumerate(plan):
            n = int(item.get("workers", args.n))
            if args.rank >= n:
                continue
            group = groups.get(n)
            density = float(item.get("density", 1.0))
            x = rank_data(
                int(item.get("seed", 0)), args.rank, int(item["elements"]), item["dtype"],
                density, int(item.get("k", 64)),
            )  # fmt: skip
            mode = "agsparse" if item.get("mode") == "agsparse" else "ring"
            k = int(item.get("k", 64))
            t = torch.from_numpy(x)
            buf = t.clone()
            result = x
            dist.barrier(group=group)
            for c in range(-int(item.get("warmup", 0)), int(item.get("repeat", 1))):
                stats: dict[str, Any] = {}
                t0 = time.perf_counter()
                if mode == "agsparse":
                    result, stats = agsparse(x, k, n, group)
                else:
                    buf.copy_(t)
                    t0 = time.perf_counter()
                    dist.all_reduce(buf, group=group)
                    result = buf.numpy()
                seconds = time.perf_counter() - t0
                if c < 0:
                    continue  # a warm-up call
                line: dict[str, Any] = {
                    "rank": args.rank, "item": i, "call": c, "elements": int(x.size),
                    "dtype": item["dtype"], "mode": mode, "density": density,
                    "seconds": seconds, "stats": stats,
                }  # fmt: skip
                print(json.dumps(line), flush=True)
            if item.get("save"):
                np.save(str(item["save"]).format(rank=args.rank), result)
        dist.barrier()  # nobody leaves while a peer still needs its connections
    finally:
        dist.destroy_process_group()


def main(argv: list[str] | None = None) -> int:
    return rank_main(PROG, parse, run, argv)


if __name__ == "__main__":
    sys.exit(main())
