"""The training experiment: ``examples/train_ddp.py`` (DDP, a small MLP) with one process per
Mininet host, once with gloo and once with the p4reduce torch.distributed backend, on the
same hosts, links and switch; time per step.

Each rank is started inside its host with torch's env:// variables (``RANK``,
``WORLD_SIZE``, ``MASTER_ADDR`` = rank 0's management address, ``MASTER_PORT``) and
``GLOO_SOCKET_IFNAME`` = its data interface, so gloo's traffic (the baseline's gradients,
and the rendezvous helpers the p4reduce backend uses) crosses the P4 switch. The p4reduce
run also gets the registration service's URL, its data address, MAC and switch port, so
its gradients go through the switch's aggregation. Rank 0 prints JSON (``--json``); the
summary gives the median step time after the warm-up steps and, with ``--probe``, the
median all-reduce time per step. Both runs see the same data and initial weights, so their
losses and final parameters are compared too.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..local import StackError
from .experiments import Options
from .report import bars, table, write_csv
from .runner import Row
from .stack import MininetStack, make_workdir
from .switches import SwitchKind

STEPS, WARMUP = 30, 5
MODEL = ("--inputs", "32", "--hidden", "256", "--depth", "2", "--classes", "10")


def find_script() -> Path:
    for c in (Path(__file__).resolve().parents[2], Path.cwd()):
        if (c / "examples" / "train_ddp.py").is_file():
            return c / "examples" / "train_ddp.py"
    raise StackError("examples/train_ddp.py not found (run from a p4reduce checkout)")


def run_backend(
    stack: MininetStack, script: Path, backend: str, params: Path, timeout: float, job: int
) -> dict[str, Any]:
    """One training run; rank 0's summary."""
    master = stack.hosts[0].mgmt_ip
    procs = []
    for h in stack.hosts:
        env = {"RANK": str(h.rank), "LOCAL_RANK": "0", "WORLD_SIZE": str(stack.n),
               "LOCAL_WORLD_SIZE": "1", "MASTER_ADDR": master, "MASTER_PORT": "29600",
               "GLOO_SOCKET_IFNAME": h.intf}  # fmt: skip
        args = [sys.executable, str(script), "--backend", backend, "--steps", str(STEPS),
                "--warmup", str(WARMUP), "--probe", "--json", "--timeout", f"{timeout:g}",
                *MODEL, "--save-params", str(params)]  # fmt: skip
        if backend == "p4reduce":
            args += ["--url", stack.url, "--job-id", str(job), "--bind-ip", h.ip,
                     "--mac", h.mac, "--switch-port", str(h.switch_port)]  # fmt: skip
        procs.append(stack.spawn_in(h, f"train-{backend}-{h.rank}", args, env=env))
    results = stack.wait(procs, timeout + 30)
    summary = [ln for ln in results[0].lines if ln.get("done")]
    if not summary:
        raise StackError(f"train_ddp.py --backend {backend}: rank 0 printed no summary")
    return summary[-1]


def row_of(s: dict[str, Any], opts: Options, stack: MininetStack, switch: str) -> Row:
    step = s["median_step_seconds"]
    losses = s["losses"]
    per_step = s.get("stats_per_step") or {}
    return Row(
        experiment="training", backend=s["backend"], mode="ddp", workers=s["workers"],
        elements=s["params"], dtype="float32", density=1.0, bw_mbit=stack.shape.bw,
        delay_ms=stack.shape.delay_ms, loss=stack.shape.loss, switch=switch,
        seconds=step, seconds_min=step, seconds_max=step, calls=s["steps"] - s["warmup"],
        goodput_mbit=s["params"] * 32 / step / 1e6 if step else 0.0, link_ms=None,
        # rank 0's counts; every rank sends as many packets in dense mode
        packets=per_step.get("packets_sent", 0.0) * s["workers"],
        retransmissions=per_step.get("retransmissions", 0.0) * s["workers"],
        ok=losses[-1] < losses[0], max_abs_error=0.0,
        extra={"allreduce_ms": s.get("median_allreduce_seconds", 0.0) * 1e3,
               "loss_first": losses[0], "loss_last": losses[-1]},
    )  # fmt: skip


def run_training(
    opts: Options, switch: SwitchKind, out: Path, say: Callable[[str], None], *, quiet: bool
) -> list[Row]:
    script = find_script()
    n = (opts.workers or (4,))[0]
    loss = (opts.loss or (0.0,))[0]
    shape = opts.shape(loss)
    workdir = make_workdir(out)
    say(f"training: {n} workers, links {shape.label()}")
    rows: list[Row] = []
    saved: dict[str, Path] = {}
    try:
        with MininetStack(
            n,
            shape,
            "dense",
            switch=switch,
            workdir=workdir,
            build_dir=out / "build",
            log=say,
            initial_timeout_ms=opts.retx_ms,
        ) as stack:
            for job, backend in enumerate(("gloo", "p4reduce"), start=1):
                saved[backend] = workdir / f"params-{backend}.npy"
                s = run_backend(stack, script, backend, saved[backend], opts.timeout, job)
                rows.append(row_of(s, opts, stack, switch.name))
        diff = float(np.max(np.abs(np.load(saved["gloo"]) - np.load(saved["p4reduce"]))))
    except StackError as err:  # keep the logs, say where
        raise StackError(f"{err} (logs in {workdir / 'logs'})") from None
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    shutil.rmtree(workdir, ignore_errors=True)
    for r in rows:
        r.extra["max_param_diff"] = diff
    write_csv(rows, out / "training.csv")
    bars(
        [r.backend for r in rows],
        {"step": [r.seconds * 1e3 for r in rows],
         "all-reduce in the step": [r.extra["allreduce_ms"] for r in rows]},
        out / "training.png", ylabel="median time per step (ms)",
        title=f"training: DDP, MLP of {rows[0].elements:,} parameters, {n} workers\n"
        f"{switch.name} switch, links {shape.label()}",
    )  # fmt: skip
    if quiet:
        for r in rows:
            print(json.dumps({"experiment": "training", **r.as_dict()}), flush=True)
    else:
        print(f"\ntraining: DDP across the testbed ({switch.name} switch, links {shape.label()})")
        print(table(rows, ("workers",)))
        for r in rows:
            print(f"  {r.backend}: step {r.seconds * 1e3:.1f} ms, all-reduce "
                  f"{r.extra['allreduce_ms']:.1f} ms, loss {r.extra['loss_first']:.3f} -> "
                  f"{r.extra['loss_last']:.3f}")  # fmt: skip
        print(f"  final parameters, gloo against p4reduce: max |difference| {diff:.3g}")
        print(f"  wrote {out / 'training.csv'} and {out / 'training.png'}", flush=True)
    return rows
