"""DDP training of a small MLP on scikit-learn's digits images (no download: the data set
ships with scikit-learn), with the gradients summed by the embedded P4 switch, dense or
compressed by block top-k with error feedback (docs/compression.md).

    python examples/train_digits.py --compress topk --ratio 0.02
    python examples/train_digits.py --compress adaptive
    python examples/train_digits.py --compress none,topk,topk-noef,adaptive --json

Schemes (``--compress``, comma-separated: run one after another in the same process group,
each from the same initial weights and data order):

- ``none``: DDP on the p4reduce backend, every gradient block through the switch;
- ``topk``: block top-k at ``--ratio`` with error feedback (``p4reduce.host.torch.topk_hook``);
- ``topk-noef``: the same without error feedback (what is not sent is lost);
- ``adaptive``: block top-k whose ratio ``AdaptiveRatio`` adjusts, starting at ``--ratio``.

Without RANK/WORLD_SIZE in the environment it starts ``--workers`` processes of itself on
127.0.0.1; under torchrun it is one of them. Rank 0 prints per scheme the test accuracy,
the switch packets this worker sent per step (after the warm-up steps, and over all
steps), the median step time, the ratio at the end and the paths the cost model chose.

``--backend gloo`` trains the same model on plain gloo (scheme ``none`` only: the
baseline). ``--eval-every N``: rank 0 also measures the test accuracy every N steps, and
the JSON gets ``curve``, [training seconds, step, accuracy] per point, the seconds being
rank 0's time in training steps (the evaluations left out): accuracy against wall time,
as ``p4reduce testbed -e training`` plots it per scheme (docs/results.md).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from contextlib import nullcontext
from datetime import timedelta
from typing import Any

from p4reduce.testbed.local import terminate

from p4reduce.free_port import free_port

PROG = "train_digits.py"
SCHEMES = ("none", "topk", "topk-noef", "adaptive")


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        print(f"{PROG}: error: {message}", file=sys.stderr)
        sys.exit(2)


def positive(text: str) -> int:
    v = int(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"{v} is not a positive integer")
    return v


def budget(text: str) -> float:
    v = float(text)
    if not v > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive fraction (or inf)")
    return v


def schemes(text: str) -> list[str]:
    names = [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in names if s not in SCHEMES]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"{text!r}: comma-separated of {', '.join(SCHEMES)}")
    return names


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = OneLineParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("--compress", type=schemes, default=["topk"],
                   help=f"scheme(s), comma-separated: {', '.join(SCHEMES)} (topk)")  # fmt: skip
    p.add_argument("--ratio", type=float, default=0.02,
                   help="fraction of blocks kept per step; adaptive: the start (0.02)")  # fmt: skip
    p.add_argument("--selection", choices=("local", "agreed"), default="local",
                   help="top-k selection rule (local); agreed: every worker the same "
                   "blocks, from this step's energies summed over the workers")  # fmt: skip
    p.add_argument("--mode", choices=("auto", "dense", "sparse", "allgather"), default="auto",
                   help="collective of the compressed gradient; auto: the cost model (auto)")  # fmt: skip
    p.add_argument("--warmup-steps", type=int, default=5,
                   help="dense steps before compressing (5)")  # fmt: skip
    p.add_argument("--no-virtual", dest="virtual", action="store_false",
                   help="top-k: the gradient at the weights, not at error feedback's virtual "
                   "iterate (the behaviour before issue 36; unstable at lr 1.0)")  # fmt: skip
    p.add_argument("--time-budget", type=budget, default=0.5, metavar="F",
                   help="adaptive: the ratio stops growing once its collective takes F of a dense "
                        "all-reduce's time (0.5; inf: grow on the kept energy alone, which makes "
                        "the ratio a function of the gradients only, not of timings)")  # fmt: skip
    p.add_argument("--dense-edges", action="store_true",
                   help="send the first and last layers whole every step")  # fmt: skip
    p.add_argument("--workers", "-n", type=positive, default=4, help="processes (4)")
    p.add_argument("--epochs", type=positive, default=15, help="epochs (15)")
    p.add_argument("--batch", type=positive, default=32, help="samples per worker per step (32)")
    p.add_argument("--lr", type=float, default=1.0, help="SGD learning rate (1.0)")
    p.add_argument("--hidden", type=positive, default=128, help="hidden width (128)")
    p.add_argument("--depth", type=positive, default=1, help="hidden layers (1)")
    p.add_argument("--slots", type=positive, default=8, help="switch slots of the job (8)")
    p.add_argument("--seed", type=int, default=0, help="weights and data order (0)")
    p.add_argument("--backend", choices=("p4reduce", "gloo"), default="p4reduce",
                   help="process group; gloo: the baseline, --compress none only (p4reduce)")  # fmt: skip
    p.add_argument("--eval-every", type=int, default=0, metavar="N",
                   help="rank 0 measures the test accuracy every N steps (0: at the end)")  # fmt: skip
    p.add_argument("--url", default=os.environ.get("P4REDUCE_URL"),
                   help="registration service of a running switch with the sparse program "
                   "($P4REDUCE_URL); default: an embedded switch started by rank 0")  # fmt: skip
    p.add_argument("--job-id", type=int, default=None, help="switch job (testbed)")
    p.add_argument("--bind-ip", default=None, help="this worker's data address (testbed)")
    p.add_argument("--mac", default=None, help="this worker's data MAC (testbed)")
    p.add_argument("--switch-port", type=int, default=None,
                   help="the switch port of this worker's host (testbed)")  # fmt: skip
    p.add_argument("--timeout", type=float, default=600.0,
                   help="the whole run must end within this many seconds (600)")  # fmt: skip
    p.add_argument("--json", action="store_true", help="one JSON object per scheme")
    args = p.parse_args(argv)
    if not 0.0 < args.ratio <= 1.0:
        p.error(f"--ratio {args.ratio:g} is not in (0, 1]")
    if not args.lr > 0:
        p.error(f"--lr {args.lr:g} is not positive")
    if args.warmup_steps < 0:
        p.error(f"--warmup-steps {args.warmup_steps} is negative")
    if args.eval_every < 0:
        p.error(f"--eval-every {args.eval_every} is negative")
    if args.backend == "gloo" and args.compress != ["none"]:
        p.error("--backend gloo trains uncompressed: --compress none")
    return args


# ---------------------------------------------------------------------- launcher
def launch(args: argparse.Namespace, argv: list[str]) -> int:
    """Start ``--workers`` processes of this script and wait; rank 0's stdout is ours."""
    port = free_port("tcp")
    procs: list[subprocess.Popen[bytes]] = []
    for r in range(args.workers):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(args.workers),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   OMP_NUM_THREADS="1")  # fmt: skip
        out = None if r == 0 else subprocess.DEVNULL
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__), *argv],
                                      env=env, stdin=subprocess.DEVNULL, stdout=out))  # fmt: skip
    deadline = time.monotonic() + args.timeout + 30
    status = 0
    try:
        while any(p.poll() is None for p in procs):
            bad = [p for p in procs if p.poll() not in (None, 0)]
            if bad:
                status = bad[0].returncode
                break
            if time.monotonic() > deadline:
                print(f"{PROG}: error: timed out after {args.timeout:g} s", file=sys.stderr)
                status = 1
                break
            time.sleep(0.05)
        else:
            status = next((p.returncode for p in procs if p.returncode), 0)
    except KeyboardInterrupt:
        status = 130
    finally:
        terminate(procs)
    return 128 - status if status < 0 else status


# ---------------------------------------------------------------------- training
def load_digits_split() -> tuple[Any, Any, Any, Any]:
    """The digits images scaled to [0, 1], split 80/20, stratified, fixed."""
    import numpy as np
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    return train_test_split(x, d.target, test_size=0.2, random_state=0, stratify=d.target)


def run_scheme(scheme: str, args: argparse.Namespace, data: tuple[Any, ...]) -> dict[str, Any]:
    import numpy as np
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from p4reduce.host.compress import AdaptiveRatio, TopKConfig
    from p4reduce.host.torch import stats
    from p4reduce.host.torch.compress import TopKHookState, edge_layers, topk_hook
    from torch.nn.parallel import DistributedDataParallel as DDP

    rank, n = dist.get_rank(), dist.get_world_size()
    xtr, xte, ytr, yte = data
    torch.manual_seed(args.seed)
    layers: list[Any] = []
    width = 64
    for _ in range(args.depth):
        layers += [torch.nn.Linear(width, args.hidden), torch.nn.ReLU()]
        width = args.hidden
    model = torch.nn.Sequential(*layers, torch.nn.Linear(width, 10))
    ddp = DDP(model)
    state = None
    if scheme != "none":
        cfg = TopKConfig(
            ratio=args.ratio,
            selection=args.selection,
            error_feedback=scheme != "topk-noef",
            warmup_steps=args.warmup_steps,
            mode=args.mode,
            policy=(
                AdaptiveRatio(ratio=args.ratio, time_budget=args.time_budget)
                if scheme == "adaptive"
                else None
            ),
        )
        dense = edge_layers(model) if args.dense_edges else ()
        state = TopKHookState.create(cfg, dense_params=dense)
        ddp.register_comm_hook(state, topk_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr)
    rng = np.random.default_rng(args.seed)
    if args.backend == "p4reduce":
        stats(reset=True)
    packets: list[int] = []
    seconds: list[float] = []
    step = 0
    curve: list[list[float]] = []

    def accuracy() -> float:
        with torch.no_grad():
            return float((model(torch.from_numpy(xte)).argmax(1).numpy() == yte).mean())

    for _epoch in range(args.epochs):
        shards = np.array_split(rng.permutation(len(xtr)), n)
        mine = shards[rank]
        for s in range(min(len(sh) for sh in shards) // args.batch):
            idx = mine[s * args.batch : (s + 1) * args.batch]
            t0 = time.perf_counter()
            opt.zero_grad()
            # top-k: the gradient at error feedback's virtual iterate (weights minus lr x
            # this rank's residual; docs/compression.md); the weights come back before step
            at = state.virtual(args.lr) if state is not None and args.virtual else nullcontext()
            with at:
                loss = F.cross_entropy(ddp(torch.from_numpy(xtr[idx])), torch.from_numpy(ytr[idx]))
                loss.backward()
            opt.step()
            seconds.append(time.perf_counter() - t0)
            packets.append(stats(reset=True).packets_sent if args.backend == "p4reduce" else 0)
            step += 1
            if rank == 0 and args.eval_every and step % args.eval_every == 0:
                curve.append([sum(seconds), step, accuracy()])
    acc = accuracy()
    if rank == 0 and args.eval_every and (not curve or curve[-1][1] != step):
        curve.append([sum(seconds), step, acc])
    after = packets[args.warmup_steps :] if scheme != "none" else packets
    out: dict[str, Any] = {
        "scheme": scheme,
        "backend": args.backend,
        "selection": args.selection if scheme != "none" else None,
        "virtual": args.virtual if scheme != "none" else None,
        "accuracy": acc,
        "epochs": args.epochs,
        "steps": step,
        "packets_per_step": statistics.mean(after) if after else 0.0,
        "packets_per_step_all": statistics.mean(packets),
        "step_seconds": statistics.median(seconds),
        "ratio": None,
        "paths": {},
    }
    if args.eval_every:
        out["curve"] = curve
    if state is not None:
        tensors = list(state.topk.states.values())
        out["ratio"] = tensors[-1].policy.ratio if tensors else None
        out["paths"] = dict(Counter(p for t in tensors for p in t.paths))
        out["kept"] = statistics.mean(r.kept for t in tensors for r in t.reports) if any(
            t.reports for t in tensors) else None  # fmt: skip
        state.close()
    return out


def worker(args: argparse.Namespace) -> int:
    import torch
    import torch.distributed as dist
    from p4reduce.host.torch import P4ReduceOptions

    torch.set_num_threads(1)
    data = load_digits_split()
    if args.backend == "gloo":
        dist.init_process_group("gloo", timeout=timedelta(seconds=120))
    else:
        testbed = {"job_id": args.job_id, "bind_ip": args.bind_ip, "mac": args.mac,
                   "switch_port": args.switch_port}  # fmt: skip
        opts = P4ReduceOptions(url=args.url, program="sparse", slots=args.slots,
                               **{k: v for k, v in testbed.items() if v is not None})  # fmt: skip
        dist.init_process_group("p4reduce", timeout=timedelta(seconds=120), pg_options=opts)
    try:
        for scheme in args.compress:
            res = run_scheme(scheme, args, data)
            if dist.get_rank() == 0:
                if args.json:
                    print(json.dumps(res), flush=True)
                else:
                    ratio = "" if res["ratio"] is None else f"  ratio {res['ratio']:.4f}"
                    print(f"{scheme:10s} accuracy {100 * res['accuracy']:.2f} %  packets/step "
                          f"{res['packets_per_step']:.1f} (all steps {res['packets_per_step_all']:.1f})"
                          f"  step {1000 * res['step_seconds']:.1f} ms{ratio}  paths {res['paths']}",
                          flush=True)  # fmt: skip
    finally:
        dist.destroy_process_group()
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        return launch(args, argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGALRM, lambda *_: (print(f"{PROG}: error: timed out", file=sys.stderr), os._exit(1)))  # fmt: skip
    signal.alarm(int(args.timeout))
    try:
        return worker(args)
    except ModuleNotFoundError as err:
        print(f"{PROG}: error: {err} (pip install 'p4reduce[dev]')", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
