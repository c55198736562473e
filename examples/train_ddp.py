"""DDP training of a small MLP on synthetic data, summing gradients with gloo, with the
p4reduce torch.distributed backend, or with gloo plus the p4reduce DDP comm hook.

    python examples/train_ddp.py --backend p4reduce --workers 4 --steps 30
    torchrun --nproc-per-node 4 examples/train_ddp.py --backend hook --url http://SVC:9560

Without RANK/WORLD_SIZE in the environment it starts ``--workers`` processes of itself on
127.0.0.1 (env:// rendezvous); under torchrun, or with MASTER_ADDR, MASTER_PORT, RANK and
WORLD_SIZE set by hand, it is one of them. ``--url`` (or $P4REDUCE_URL) names a running
registration service (``p4reduce-ctl serve``); without it rank 0 of the p4reduce backend
starts an embedded switch and controller on loopback.

Runs are deterministic: the weights come from ``--seed``, rank r's batch at step t from
(seed, t, r), and the labels from a fixed random teacher, so two runs that differ only in
the backend see the same data and differ only by how the gradients were summed. Rank 0
prints the loss of its batch and the step time per step (``--json``: one JSON object per
step, then a summary), and ``--save-params`` writes the final parameters (``.npy``).
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
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from p4reduce.testbed.local import terminate

from p4reduce.free_port import free_port

PROG = "train_ddp.py"
BACKENDS = ("gloo", "p4reduce", "hook")
MODELS = ("mlp", "embedding")


# ---------------------------------------------------------------------- arguments
class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        print(f"{PROG}: error: {message}", file=sys.stderr)
        sys.exit(2)


def positive(text: str) -> int:
    v = int(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"{v} is not a positive integer")
    return v


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = OneLineParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", choices=BACKENDS, default="p4reduce",
                   help="gloo; p4reduce: the torch.distributed backend; hook: gloo with the "
                   "p4reduce DDP comm hook (default p4reduce)")  # fmt: skip
    p.add_argument("--workers", "-n", type=positive, default=2,
                   help="processes to start when not launched by torchrun (2)")  # fmt: skip
    p.add_argument("--steps", type=positive, default=20, help="training steps (20)")
    p.add_argument("--batch", type=positive, default=64, help="samples per worker per step (64)")
    p.add_argument("--lr", type=float, default=0.2, help="SGD learning rate (0.2)")
    p.add_argument("--inputs", type=positive, default=32, help="input features (32)")
    p.add_argument("--hidden", type=positive, default=64, help="hidden width (64)")
    p.add_argument("--depth", type=positive, default=2, help="hidden layers (2)")
    p.add_argument("--classes", type=positive, default=10, help="classes (10)")
    p.add_argument("--model", choices=MODELS, default="mlp",
                   help="mlp: the MLP above; embedding: an embedding table (--rows x --dim, "
                   "each sample sums --ids rows) under a linear layer, as in recommendation "
                   "models: most rows get no gradient in a step (default mlp)")  # fmt: skip
    p.add_argument("--rows", type=positive, default=2048, help="embedding rows (2048)")
    p.add_argument("--dim", type=positive, default=32, help="embedding width (32)")
    p.add_argument("--ids", type=positive, default=1, help="embedding rows per sample (1)")
    p.add_argument("--seed", type=int, default=0, help="weights and data (0)")
    p.add_argument("--url", default=os.environ.get("P4REDUCE_URL"),
                   help="registration service of a running switch ($P4REDUCE_URL); "
                   "default: an embedded switch started by rank 0")  # fmt: skip
    p.add_argument("--job-id", type=int, default=os.environ.get("P4REDUCE_JOB_ID"),
                   help="job id at the registration service ($P4REDUCE_JOB_ID)")  # fmt: skip
    p.add_argument("--bind-ip", default=os.environ.get("P4REDUCE_BIND_IP"),
                   help="address of this worker's aggregation socket ($P4REDUCE_BIND_IP)")  # fmt: skip
    p.add_argument("--udp-port", type=int, default=os.environ.get("P4REDUCE_UDP_PORT"),
                   help="this worker's UDP port for the aggregation traffic, when the switch "
                   "was started knowing it ($P4REDUCE_UDP_PORT; default: a free one)")  # fmt: skip
    p.add_argument("--switch-port", type=int, default=os.environ.get("P4REDUCE_SWITCH_PORT"),
                   help="the switch port this worker is cabled to ($P4REDUCE_SWITCH_PORT; "
                   "default: rank + 1)")  # fmt: skip
    p.add_argument("--mac", default=os.environ.get("P4REDUCE_MAC"),
                   help="this worker's MAC on a real network ($P4REDUCE_MAC)")  # fmt: skip
    p.add_argument("--mode", choices=("dense", "sparse", "auto"), default="dense",
                   help="p4reduce aggregation mode (dense)")  # fmt: skip
    p.add_argument("--engine", choices=("native", "python"), default=None,
                   help="p4reduce host protocol engine (P4ReduceOptions' default: native)")  # fmt: skip
    p.add_argument("--probe", action="store_true",
                   help="run the all-reduce through a timing comm hook: per-step all-reduce "
                   "time and the largest all-reduce input over the workers")  # fmt: skip
    p.add_argument("--warmup", type=int, default=0,
                   help="first steps left out of the medians (0)")  # fmt: skip
    p.add_argument("--threads", type=positive, default=1, help="torch threads per worker (1)")
    p.add_argument("--timeout", type=float, default=300.0,
                   help="the whole run must end within this many seconds (300)")  # fmt: skip
    p.add_argument("--json", action="store_true", help="JSON lines on stdout")
    p.add_argument("--save-params", metavar="PATH", help="rank 0 saves the final parameters")
    args = p.parse_args(argv)
    p4_only = {"--url": args.url, "--udp-port": args.udp_port, "--job-id": args.job_id,
               "--switch-port": args.switch_port, "--mac": args.mac,
               "--engine": args.engine}  # fmt: skip
    given = [k for k, v in p4_only.items() if v is not None]
    if args.backend == "gloo" and given:
        p.error(f"{', '.join(given)}: only for --backend p4reduce or hook")
    if not args.lr > 0:
        p.error(f"--lr {args.lr:g} is not positive")
    return args


# ---------------------------------------------------------------------- launcher
def launched() -> bool:
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def launch(args: argparse.Namespace, argv: list[str]) -> int:
    """Start ``--workers`` processes of this script (env:// on 127.0.0.1) and wait. Rank 0's
    stdout is ours; when one rank fails, the others are stopped. Exit status: the first
    failure's, else 0."""
    port = free_port("tcp")
    procs: list[subprocess.Popen[bytes]] = []
    for r in range(args.workers):
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(args.workers),
                   LOCAL_WORLD_SIZE=str(args.workers), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port))  # fmt: skip
        out = None if r == 0 else subprocess.DEVNULL
        argv_r = [sys.executable, os.path.abspath(__file__), *argv]
        procs.append(subprocess.Popen(argv_r, env=env, stdin=subprocess.DEVNULL, stdout=out))
    deadline = time.monotonic() + args.timeout + 30  # the ranks enforce --timeout themselves
    status = 0
    try:
        while any(p.poll() is None for p in procs):
            failed = [p for p in procs if p.poll() not in (None, 0)]
            if failed:
                status = failed[0].returncode
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
    if status < 0:  # killed by a signal: report it the shell's way
        status = 128 - status
    return status


# ---------------------------------------------------------------------- model and data
def build_model(args: argparse.Namespace) -> Any:
    import torch

    torch.manual_seed(args.seed)  # the same initial weights on every rank (DDP checks)
    if args.model == "embedding":
        return embedding_model(args.rows, args.dim, args.classes)
    layers: list[Any] = []
    width = args.inputs
    for _ in range(args.depth):
        layers += [torch.nn.Linear(width, args.hidden), torch.nn.Tanh()]
        width = args.hidden
    layers.append(torch.nn.Linear(width, args.classes))
    return torch.nn.Sequential(*layers)


def embedding_model(rows: int, dim: int, classes: int) -> Any:
    """An embedding table (dense gradients: the rows a step does not touch get zeros, so a
    bucket is mostly zero blocks) summed per sample, under a linear layer."""
    import torch

    class EmbeddingModel(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.table = torch.nn.EmbeddingBag(rows, dim, mode="sum")
            self.head = torch.nn.Linear(dim, classes)

        def forward(self, ids: Any) -> Any:
            return self.head(self.table(ids))

    return EmbeddingModel()


@dataclass
class Ids:
    """The embedding model's data: rank r's batch at step t is ``ids`` row indices per
    sample, skewed towards the low rows as item popularity is (P(id < r) = (r/rows)^(1/4)),
    from a generator seeded with (seed, t, r); the label is the argmax of a fixed random
    teacher's rows summed over the sample's ids."""

    seed: int
    rows: int
    ids: int
    classes: int
    batch: int
    teacher: Any = None

    def __post_init__(self) -> None:
        import torch

        g = torch.Generator().manual_seed(self.seed * 7919 + 104723)
        self.teacher = torch.randn(self.rows, self.classes, generator=g)

    def batch_at(self, step: int, rank: int) -> tuple[Any, Any]:
        import torch

        g = torch.Generator().manual_seed(
            ((self.seed * 1_000_003 + step) * 4099 + rank) & (2**63 - 1)
        )
        # skewed as item popularity is: P(id < r) = (r / rows)^(1/4), so a few rows are hot
        # (they learn) and most are rarely touched (their gradient rows are zero)
        u = torch.rand(self.batch, self.ids, generator=g, dtype=torch.float64)
        x = (u**4 * self.rows).long().clamp_(max=self.rows - 1)
        return x, self.teacher[x].sum(dim=1).argmax(dim=1)


@dataclass
class Data:
    """Rank r's batch at step t: x ~ N(0, 1) from a generator seeded with (seed, t, r);
    labels = argmax of a fixed random linear teacher, so there is something to learn."""

    seed: int
    inputs: int
    classes: int
    batch: int
    teacher: Any = None

    def __post_init__(self) -> None:
        import torch

        g = torch.Generator().manual_seed(self.seed * 7919 + 104729)
        self.teacher = torch.randn(self.inputs, self.classes, generator=g)

    def batch_at(self, step: int, rank: int) -> tuple[Any, Any]:
        import torch

        g = torch.Generator().manual_seed(
            ((self.seed * 1_000_003 + step) * 4099 + rank) & (2**63 - 1)
        )
        x = torch.randn(self.batch, self.inputs, generator=g)
        return x, (x @ self.teacher).argmax(dim=1)


# ---------------------------------------------------------------------- timing probe
@dataclass
class Probe:
    """A comm hook around another one: per step, the time from the first bucket handed to
    the all-reduce to the last bucket's result, and the largest |input| of the all-reduce
    (the bucket divided by the world size, as DDP's own path sends it)."""

    inner: Any  # the hook that does the work
    state: Any  # its state
    world: int
    issued: list[float] = field(default_factory=list)
    done: list[float] = field(default_factory=list)
    input_max: float = 0.0

    def start_step(self) -> None:
        self.issued, self.done, self.input_max = [], [], 0.0

    def seconds(self) -> float:
        return max(self.done) - min(self.issued) if self.done and self.issued else 0.0

    def __call__(self, bucket: Any) -> Any:
        buf = bucket.buffer()
        self.input_max = max(self.input_max, float(buf.abs().max()) / self.world)
        self.issued.append(time.perf_counter())
        fut = self.inner(self.state, bucket)

        def finished(f: Any) -> Any:
            self.done.append(time.perf_counter())
            return f.value()

        return fut.then(finished)


def probe_hook(probe, bucket):
    # DDP checks the signature: a parameter named ``bucket``, and no annotation other than
    # the real classes (which ``from __future__ import annotations`` would turn into strings)
    return probe(bucket)


# ---------------------------------------------------------------------- p4reduce
def p4reduce_options(args: argparse.Namespace) -> Any:
    from p4reduce.host.torch import P4ReduceOptions

    kw: dict[str, Any] = {"mode": args.mode}
    if args.url:
        kw["url"] = args.url
    if args.job_id is not None:
        kw["job_id"] = args.job_id
    if args.bind_ip:
        kw["bind_ip"] = args.bind_ip
    if args.udp_port is not None:
        kw["udp_port"] = args.udp_port
    if args.switch_port is not None:
        kw["switch_port"] = args.switch_port
    if args.mac:
        kw["mac"] = args.mac
    if args.engine:
        kw["engine"] = args.engine
    return P4ReduceOptions(**kw)


class Aggregation:
    """Per-step aggregation statistics (``p4reduce.host.AllreduceStats`` as a dict) of the
    p4reduce process group or hook state; None for gloo."""

    def __init__(self, target: Any) -> None:
        self.target = target

    def _since_last(self) -> dict[str, Any] | None:
        if self.target is None:
            return None
        from p4reduce.host.torch import stats

        return stats(self.target, reset=True).as_dict()

    def start_step(self) -> None:
        self._since_last()  # what came before (DDP's set-up) is not the step's

    def step(self) -> dict[str, Any] | None:
        return self._since_last()


# ---------------------------------------------------------------------- one worker
def train(args: argparse.Namespace) -> dict[str, Any]:
    import numpy as np
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(args.threads)  # N workers share the machine's cores
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    timeout = timedelta(seconds=args.timeout)
    t_start = time.perf_counter()
    hook_state = None
    if args.backend == "p4reduce":
        import p4reduce.host.torch  # noqa: F401 - registers the backend

        dist.init_process_group("p4reduce", timeout=timeout, pg_options=p4reduce_options(args))
    else:
        dist.init_process_group("gloo", timeout=timeout)
    try:
        if args.backend == "hook":
            from p4reduce.host.torch import HookState, allreduce_hook

            hook_state = HookState.create(options=p4reduce_options(args))
        model = DDP(build_model(args))
        probe = None
        if args.probe:
            from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import (
                allreduce_hook as reference_hook,
            )

            if hook_state is not None:
                probe = Probe(allreduce_hook, hook_state, world)
            else:  # DDP's own path: divide by the world size, SUM on the group
                probe = Probe(reference_hook, dist.group.WORLD, world)
            model.register_comm_hook(probe, probe_hook)
        elif hook_state is not None:
            model.register_comm_hook(hook_state, allreduce_hook)
        if hook_state is not None:
            agg = Aggregation(hook_state)
        else:
            agg = Aggregation(dist.group.WORLD if args.backend == "p4reduce" else None)
        summary = loop(args, model, probe, agg, rank, world)
        dist.barrier()
    finally:
        if hook_state is not None:
            hook_state.close()
        dist.destroy_process_group()
    if rank == 0:
        if args.save_params:
            flat = torch.nn.utils.parameters_to_vector(model.parameters()).detach().numpy()
            np.save(args.save_params, flat.astype(np.float32))
        summary["seconds"] = time.perf_counter() - t_start  # set-up and teardown included
    Printer(args, rank).summary(summary)
    return summary


def loop(
    args: argparse.Namespace,
    model: Any,
    probe: Probe | None,
    agg: Aggregation,
    rank: int,
    world: int,
) -> dict[str, Any]:
    import torch
    import torch.distributed as dist

    params = sum(p.numel() for p in model.parameters())
    data: Data | Ids
    if args.model == "embedding":
        data = Ids(args.seed, args.rows, args.ids, args.classes, args.batch)
    else:
        data = Data(args.seed, args.inputs, args.classes, args.batch)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)  # plain SGD: see docs/demo.md
    loss_fn = torch.nn.CrossEntropyLoss()
    say = Printer(args, rank)
    say.start(params, world)
    steps: list[dict[str, Any]] = []
    input_max: list[float] = []
    for t in range(args.steps):
        x, y = data.batch_at(t, rank)
        if probe is not None:
            probe.start_step()
        agg.start_step()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()  # DDP sums the gradients here (it waits for every bucket)
        opt.step()
        dt = time.perf_counter() - t0
        row: dict[str, Any] = {"step": t, "loss": loss.item(), "step_seconds": dt}
        if probe is not None:
            row["allreduce_seconds"] = probe.seconds()
            input_max.append(probe.input_max)
        with torch.no_grad():
            row["param_max"] = max(float(p.abs().max()) for p in model.parameters())
        row["stats"] = agg.step()
        steps.append(row)
        say.step(row)
    summary: dict[str, Any] = {
        "done": True, "backend": args.backend, "mode": args.mode, "model": args.model,
        "workers": world, "steps": args.steps,
        "params": params, "lr": args.lr, "batch": args.batch, "seed": args.seed,
        "warmup": args.warmup,
        "losses": [r["loss"] for r in steps],
        "param_max": [r["param_max"] for r in steps],
    }  # fmt: skip
    timed = steps[min(args.warmup, len(steps) - 1) :]
    summary["median_step_seconds"] = statistics.median(r["step_seconds"] for r in timed)
    if probe is not None:
        # the largest all-reduce input of each step over all workers (gloo: a MAX all-reduce
        # on a side group, so the p4reduce group only ever carries gradients)
        side = dist.new_group(backend="gloo")
        m = torch.tensor(input_max, dtype=torch.float64)
        dist.all_reduce(m, op=dist.ReduceOp.MAX, group=side)
        summary["input_max"] = m.tolist()
        summary["median_allreduce_seconds"] = statistics.median(
            r["allreduce_seconds"] for r in timed
        )
    if steps[0]["stats"] is not None:
        keys = [k for k in steps[0]["stats"] if k != "goodput_gbps"]
        summary["stats_per_step"] = {
            k: statistics.mean(r["stats"][k] for r in timed) for k in keys
        }  # fmt: skip
        summary["stats_total"] = {k: sum(r["stats"][k] for r in steps) for k in keys}
    return summary


class Printer:
    """Rank 0's output: one line per step, human or JSON."""

    def __init__(self, args: argparse.Namespace, rank: int) -> None:
        self.args, self.on = args, rank == 0

    def emit(self, obj: dict[str, Any], text: str) -> None:
        if self.on:
            print(json.dumps(obj) if self.args.json else text, flush=True)

    def start(self, params: int, world: int) -> None:
        a = self.args
        self.emit(
            {"start": True, "backend": a.backend, "workers": world, "params": params},
            f"{a.backend}: {world} workers, {params:,} parameters, {a.steps} steps, "
            f"batch {a.batch} per worker, lr {a.lr:g}",
        )

    def step(self, row: dict[str, Any]) -> None:
        text = f"step {row['step'] + 1:4d}/{self.args.steps}  loss {row['loss']:.4f}  step {row['step_seconds'] * 1e3:8.1f} ms"
        if "allreduce_seconds" in row:
            text += f"  all-reduce {row['allreduce_seconds'] * 1e3:8.1f} ms"
        if row["stats"]:
            s = row["stats"]
            text += (
                f"  {s['packets_sent']:.0f} packets sent, {s['retransmissions']:.0f} retransmitted"
            )
        self.emit(row, text)

    def summary(self, s: dict[str, Any]) -> None:
        text = (
            f"loss {s['losses'][0]:.4f} -> {s['losses'][-1]:.4f}; median step "
            f"{s['median_step_seconds'] * 1e3:.1f} ms"
        )
        if "median_allreduce_seconds" in s:
            text += f", all-reduce {s['median_allreduce_seconds'] * 1e3:.1f} ms"
        self.emit(s, text)


# ---------------------------------------------------------------------- main
class Terminated(BaseException):
    pass


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse(argv)
    if not launched():
        return launch(args, argv)
    rank = os.environ.get("RANK", "?")

    def on_term(_sig: int, _frame: object) -> None:
        raise Terminated

    def on_alarm(_sig: int, _frame: object) -> None:
        raise TimeoutError(f"the run did not finish within {args.timeout:g} s")

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGALRM, on_alarm)  # a peer that never comes must not hang us
    signal.setitimer(signal.ITIMER_REAL, args.timeout)
    try:
        train(args)
        return 0
    except KeyboardInterrupt:
        return 130
    except Terminated:
        return 143
    except Exception as err:  # noqa: BLE001 - one line, never a traceback
        msg = " ".join(str(err).split()) or type(err).__name__
        print(f"{PROG}: rank {rank}: error: {type(err).__name__}: {msg}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
