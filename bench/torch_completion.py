"""What completing collectives on delivery threads costs (host/torch/delivery.py), in one
run: the time of a small synchronous ``dist.all_reduce`` (AVG, so the values stay put) on
a "p4reduce" group (2 ranks,
loopback stack) whose completion runs on a delivery thread (the design), and the same with
the completion run inline on the session's thread (the old design, which hangs PowerSGD;
safe here since no callback waits), alternating rounds of each so that the machine's load
falls alike on both. Printed: the median per call of each, and their ratio.

    python bench/torch_completion.py [--workers 2] [--calls 200] [--rounds 5] [--elements 256]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from p4reduce.testbed.ranks import Ranks, RanksError


def rank_main(args: argparse.Namespace) -> None:
    import torch
    import torch.distributed as dist
    from p4reduce.host.torch import delivery

    dist.init_process_group("p4reduce")
    threaded = delivery.deliver
    modes = {"delivery thread": threaded, "inline (old)": lambda task: task()}
    t = torch.ones(args.elements)
    for _ in range(20):  # warm-up
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
    per_call: dict[str, list[float]] = {m: [] for m in modes}
    for _ in range(args.rounds):
        for mode, deliver in modes.items():
            delivery.deliver = deliver
            t0 = time.perf_counter()
            for _ in range(args.calls):
                dist.all_reduce(t, op=dist.ReduceOp.AVG)  # stays 1.0
            per_call[mode].append((time.perf_counter() - t0) / args.calls)
    delivery.deliver = threaded
    dist.destroy_process_group()
    if int(os.environ["RANK"]) == 0:
        print(json.dumps({m: statistics.median(v) for m, v in per_call.items()}), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--calls", type=int, default=200, help="all-reduces per round and mode")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--elements", type=int, default=256, help="float32 elements per call")
    ap.add_argument("--rank", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rank:
        rank_main(args)
        return 0
    argv = [sys.executable, __file__, "--rank"] + [
        f"--{k}={getattr(args, k)}" for k in ("calls", "rounds", "elements")
    ]
    with tempfile.TemporaryDirectory(prefix="torch-completion-") as tmp, Ranks(tmp) as ranks:
        ranks.start(argv, n=args.workers)
        try:
            ranks.wait(timeout=600)
        except RanksError as err:
            print(f"torch_completion bench: {err}", file=sys.stderr)
            return 1
        lines = Path(ranks.ranks[0].stdout).read_text().strip().splitlines()
    median = json.loads(lines[-1])
    base = median["inline (old)"]
    print(f"{'completion':<18} {'per all_reduce':>15} {'ratio':>7}")
    for mode, seconds in median.items():
        print(f"{mode:<18} {seconds * 1e6:>12.0f} us {seconds / base:>7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
