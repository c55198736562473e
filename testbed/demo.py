"""``p4reduce demo``: DDP training whose gradients the embedded P4 switch sums, next to the
same training summed by gloo.

1. A gloo reference run: ``examples/train_ddp.py --backend gloo`` with N ranks (env://, as
   torchrun starts them), which also records each step's largest all-reduce input.
2. The local stack (``LocalStack``): ``p4src/dense.p4`` compiled, ``p4reduce-switch`` with
   one loopback port per rank (switch port r + 1 stands for 127.0.0.1:PORT_r, a port free
   a moment ago), ``p4reduce-ctl push`` and ``p4reduce-ctl serve``.
3. The same training with ``--backend p4reduce --url URL``: rank r binds PORT_r
   (``P4ReduceOptions.udp_port``). Rank 0's per-step lines are shown as they come, next to
   the gloo loss of the same step.
4. The verdict: the loss fell, and max |Δparameter| against the gloo run lies within the
   tolerance of ``testbed/ddp_bound.py`` (docs/demo.md derives it). Aggregation statistics
   per step come from the backend, the switch's own counters from ``p4reduce-ctl stats``.

With ``--switch bmv2`` step 2 is ``testbed.bmv2.Bmv2Stack`` instead: the real BMv2
(``simple_switch_grpc``, the program compiled by ``p4c``) with each rank of step 3 in a
network namespace of its own, its UDP socket on the namespace's data address (a veth on a
BMv2 port) and the rendezvous and the registration service on a management bridge. The
gloo reference stays on loopback: it needs no switch.

Every process started is stopped on the way out, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .. import contracts, resources
from ..free_port import free_port
from .bmv2 import Bmv2Stack
from .bmv2 import missing as bmv2_missing
from .ddp_bound import param_tolerance
from .local import LocalStack, StackError
from .ranks import Ranks, RanksError

JOB_ID = 1


class DemoError(Exception):
    """The demo could not run (a part did not start, a rank failed): one line."""


def positive(text: str) -> int:
    v = int(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive integer")
    return v


def steps(text: str) -> int:
    v = int(text)
    if v < 2:
        raise argparse.ArgumentTypeError(f"{v} steps: at least 2 (to see the loss fall)")
    return v


def learning_rate(text: str) -> float:
    v = float(text)
    if not 0 < v < float("inf"):
        raise argparse.ArgumentTypeError(f"{text} is not a positive learning rate")
    return v


def workers(text: str) -> int:
    v = int(text)
    if not 1 <= v <= 32:
        raise argparse.ArgumentTypeError(f"worker count {v} is outside 1..32")
    return v


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers", "-n", type=workers, default=4, help="worker processes (4)")
    p.add_argument("--steps", type=steps, default=30, help="training steps, at least 2 (30)")
    p.add_argument("--batch", type=positive, default=64, help="samples per worker and step (64)")
    p.add_argument("--lr", type=learning_rate, default=0.2, help="SGD learning rate (0.2)")
    p.add_argument("--hidden", type=positive, default=64, help="hidden width of the MLP (64)")
    p.add_argument("--seed", type=int, default=0, help="weights and data (0)")
    p.add_argument("--k", type=int, choices=contracts.K_CHOICES, default=contracts.K_DEFAULT,
                   help="elements per packet, compiled into the switch's program (64)")  # fmt: skip
    p.add_argument("--timeout", type=float, default=180.0,
                   help="each training run must finish within this many seconds (180)")  # fmt: skip
    p.add_argument("--switch", choices=("embedded", "bmv2"), default="embedded",
                   help="embedded: p4reduce-switch on loopback (default); bmv2: "
                   "simple_switch_grpc, each rank in a network namespace on one of its ports "
                   "(needs root, p4c and BMv2)")  # fmt: skip
    p.add_argument("--json", action="store_true",
                   help="print only one JSON line: the verdict and the figures")  # fmt: skip


def find_example() -> Path:
    """``examples/train_ddp.py``: ``$P4REDUCE_EXAMPLES``, the installed package data, or the
    checkout's (p4reduce.resources)."""
    try:
        return resources.example("train_ddp.py")
    except resources.ResourceNotFound as err:
        raise DemoError(str(err)) from None


class Demo:
    """One demo run; ``run()`` returns the report (a dict) or raises DemoError."""

    def __init__(self, args: argparse.Namespace, log: Callable[[str], None]) -> None:
        self.args = args
        self.log = log
        self.example = find_example()

    def train_argv(self, backend: str, params: Path, *extra: str) -> list[str]:
        a = self.args
        return [
            sys.executable, str(self.example), "--backend", backend, "--json",
            "--steps", str(a.steps), "--batch", str(a.batch), "--lr", repr(a.lr),
            "--hidden", str(a.hidden), "--seed", str(a.seed), "--timeout", f"{a.timeout:g}",
            "--save-params", str(params), *extra,
        ]  # fmt: skip

    def run(self) -> dict[str, Any]:
        a = self.args
        t0 = time.perf_counter()
        if a.switch == "bmv2" and (why := bmv2_missing()):
            raise DemoError(why)  # before the gloo run, not after it
        with tempfile.TemporaryDirectory(prefix="p4reduce-demo-") as tmp:
            work = Path(tmp)
            ref = self.reference(work)
            stack: LocalStack | Bmv2Stack
            if a.switch == "bmv2":
                stack = Bmv2Stack(a.workers, "dense", k=a.k, workdir=work / "stack", log=self.log)
            else:
                # the ranks bind these ports themselves; nothing else on 127.0.0.1 is expected
                # to take a just-freed port in the seconds before they do
                peers = [("127.0.0.1", free_port("udp")) for _ in range(a.workers)]
                stack = LocalStack(
                    a.workers, "dense", k=a.k, peers=peers, workdir=work / "stack", log=self.log
                )
            with stack:
                run, switch = self.on_switch(work, stack, ref)
            ref_params = np.load(work / "gloo.npy").astype(np.float64)
            p4_params = np.load(work / "p4reduce.npy").astype(np.float64)
        return self.report(ref, run, switch, ref_params, p4_params, time.perf_counter() - t0)

    def reference(self, work: Path) -> dict[str, Any]:
        a = self.args
        self.log(f"gloo reference run: {a.workers} workers, {a.steps} steps")
        argv = self.train_argv("gloo", work / "gloo.npy", "--probe")
        summary = self.train("gloo", work / "gloo", argv, None, None)
        self.log(
            f"gloo reference done: loss {summary['losses'][0]:.4f} -> {summary['losses'][-1]:.4f}"
        )
        return summary

    def on_switch(
        self, work: Path, stack: LocalStack | Bmv2Stack, ref: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        a = self.args
        argv = self.train_argv(
            "p4reduce", work / "p4reduce.npy", "--url", stack.url, "--job-id", str(JOB_ID)
        )
        where: dict[str, Any] = {}
        if isinstance(stack, Bmv2Stack):
            # each rank in its host namespace: data address on a BMv2 port, rendezvous at
            # rank 0's management address
            ports = [stack.rank_env(r) for r in range(a.workers)]
            where = {"rank_prefix": [h.enter() for h in stack.hosts],
                     "master_addr": stack.hosts[0].mgmt_ip}  # fmt: skip
        else:
            ports = [{"P4REDUCE_UDP_PORT": str(port)} for _, port in stack.worker_addresses()]
        self.log(f"{a.workers} workers start: DDP over the torch.distributed backend p4reduce")

        def check() -> str | None:
            for part in (stack.switch, stack.serve):
                if part is not None and not part.alive():
                    return f"{part.name} exited unexpectedly: {part.error()}"
            return None

        summary = self.train(
            "p4reduce", work / "p4reduce", argv, ports, check, ref["losses"], **where
        )
        switch = stack.ctl("stats")
        return summary, switch

    def train(
        self,
        name: str,
        work: Path,
        argv: list[str],
        rank_env: list[dict[str, str]] | None,
        check: Callable[[], str | None] | None,
        ref_losses: list[float] | None = None,
        **where: Any,
    ) -> dict[str, Any]:
        """Run the ranks of the ``name`` run; show rank 0's steps; return its summary line.
        ``where``: ``Ranks.start``'s ``rank_prefix`` and ``master_addr``."""
        summary: dict[str, Any] | None = None
        with Ranks(work) as ranks:
            ranks.start(argv, self.args.workers, rank_env=rank_env, **where)
            try:
                for line in ranks.follow(self.args.timeout + 30, check=check):
                    if not line.startswith("{"):
                        continue
                    obj = json.loads(line)
                    if obj.get("done"):
                        summary = obj
                    elif "step" in obj and ref_losses is not None:
                        self.log(step_line(obj, self.args.steps, ref_losses))
            except RanksError as err:
                raise DemoError(f"{name} run: {err}") from None
        if summary is None:
            raise DemoError(f"{name} run: rank 0 printed no summary")
        return summary

    def report(
        self,
        ref: dict[str, Any],
        run: dict[str, Any],
        switch: dict[str, Any],
        ref_params: np.ndarray,
        p4_params: np.ndarray,
        seconds: float,
    ) -> dict[str, Any]:
        a = self.args
        if ref_params.shape != p4_params.shape:
            raise DemoError(f"parameter counts differ: {ref_params.size} and {p4_params.size}")
        diff = float(np.max(np.abs(ref_params - p4_params))) if ref_params.size else 0.0
        pmax = [max(x, y) for x, y in zip(ref["param_max"], run["param_max"], strict=True)]
        tol = param_tolerance(a.workers, a.lr, ref["input_max"], pmax)
        losses = run["losses"]
        q = max(1, len(losses) // 4)
        first, last = float(np.mean(losses[:q])), float(np.mean(losses[-q:]))
        fell = len(losses) >= 2 and last < first
        within = diff <= tol.tolerance
        return {
            "ok": bool(within and fell),
            "max_abs_param_diff": diff,
            "tolerance": tol.tolerance,
            "tolerance_from_gradients": tol.from_gradients,
            "tolerance_from_updates": tol.from_updates,
            "loss_first": losses[0],
            "loss_last": losses[-1],
            "loss_fell": fell,
            "max_abs_loss_diff": max(abs(x - y) for x, y in zip(losses, ref["losses"], strict=True)),
            "losses": losses,
            "gloo_losses": ref["losses"],
            "workers": a.workers,
            "steps": a.steps,
            "params": run["params"],
            "lr": a.lr,
            "batch": a.batch,
            "seed": a.seed,
            "switch_kind": a.switch,
            "median_step_seconds": run["median_step_seconds"],
            "gloo_median_step_seconds": ref["median_step_seconds"],
            "aggregation_per_step": run.get("stats_per_step"),
            "aggregation_total": run.get("stats_total"),
            "switch": switch_summary(switch),
            "seconds": round(seconds, 3),
        }  # fmt: skip


def switch_summary(stats: dict[str, Any]) -> dict[str, Any]:
    """The switch's counters (``p4reduce-ctl stats --json``) summed over its job indices:
    the demo's job (its id is gone once the last rank left, its counters are not) and
    index 0, the packets of unknown senders."""
    keys = ("aggregated", "contributions", "results_multicast", "retransmits_answered",
            "duplicates", "results_sent")  # fmt: skip
    out: dict[str, Any] = {k: 0 for k in keys}
    drops: dict[str, int] = {}
    for job in stats.get("jobs", []):
        for k in keys:
            out[k] += int(job.get(k, 0))
        for reason, count in job.get("drops", {}).items():
            drops[reason] = drops.get(reason, 0) + int(count)
    out["drops"] = drops
    return out


def step_line(obj: dict[str, Any], steps: int, ref_losses: list[float]) -> str:
    t = obj["step"]
    text = f"step {t + 1:3d}/{steps}  loss {obj['loss']:.4f} (gloo {ref_losses[t]:.4f})  {obj['step_seconds'] * 1e3:7.1f} ms"
    s = obj.get("stats")
    if s:
        text += f"  {s['packets_sent']:.0f} packets sent, {s['retransmissions']:.0f} retransmitted"
    return text


def human(r: dict[str, Any]) -> str:
    lines = []
    agg = r["aggregation_per_step"]
    if agg:
        lines.append(
            f"aggregation per step (rank 0): {agg['packets_sent']:.0f} packets sent, "
            f"{agg['packets_received']:.0f} received, {agg['retransmissions']:.0f} retransmitted, "
            f"{agg['bytes_sent'] / 1e3:.1f} kB up, {agg['seconds'] * 1e3:.1f} ms in all-reduce"
        )
    sw = r["switch"]
    drops = {k: v for k, v in sw["drops"].items() if v}
    lines.append(
        f"switch counters: {sw['aggregated']:,} packets aggregated, "
        f"{sw['results_multicast']:,} results multicast, {sw['results_sent']:,} sent, "
        f"{sw['retransmits_answered']:,} retransmissions answered, drops: "
        + (", ".join(f"{k}={v}" for k, v in drops.items()) or "none")
    )
    lines.append(
        f"loss {r['loss_first']:.4f} -> {r['loss_last']:.4f} over {r['steps']} steps: "
        + ("falling" if r["loss_fell"] else "NOT falling")
        + f" (largest gap to gloo's loss {r['max_abs_loss_diff']:.2g})"
    )
    rel = "<=" if r["max_abs_param_diff"] <= r["tolerance"] else ">"
    lines.append(
        f"final parameters: max |p4reduce - gloo| = {r['max_abs_param_diff']:.3g} {rel} "
        f"tolerance {r['tolerance']:.3g} ({r['params']:,} parameters; docs/demo.md)"
    )
    lines.append(
        f"{'OK' if r['ok'] else 'FAILED'}: {r['workers']} workers, median step "
        f"{r['median_step_seconds'] * 1e3:.1f} ms (gloo {r['gloo_median_step_seconds'] * 1e3:.1f} ms), "
        f"run {r['seconds']:.1f} s"
    )
    return "\n".join(lines)


def run_demo(args: argparse.Namespace) -> int:
    """The command: exit 0 when the verdict is ok, 1 when it is not or the run failed."""
    prog = "p4reduce demo"
    t0 = time.perf_counter()

    def log(msg: str) -> None:
        if not args.json:
            print(f"[{time.perf_counter() - t0:5.1f} s] {msg}", flush=True)

    if not args.json:
        switch = "BMv2 (simple_switch_grpc)" if args.switch == "bmv2" else "the embedded P4 switch"
        print(
            f"{prog}: DDP training with {args.workers} workers, gradients summed by {switch}, "
            "checked against gloo",
            flush=True,
        )
    try:
        report = Demo(args, log).run()
    except (DemoError, StackError) as err:
        msg = " ".join(str(err).split())
        if args.json:
            print(json.dumps({"ok": False, "error": msg}), flush=True)
        print(f"{prog}: error: {msg}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(report), flush=True)
    else:
        print(human(report), flush=True)
    return 0 if report["ok"] else 1
