"""The training experiment: ``examples/train_ddp.py`` (DDP) with one process per Mininet
host, for two models (``mlp``, dense gradients; ``embedding``, an embedding table of which a
step touches a few rows, as in recommendation models) and three runs each: gloo, the
p4reduce torch.distributed backend in dense mode and in ``mode="auto"`` (the switch runs the
sparse program, which takes both), on the same hosts, links and switch; time per step and
the loss curves. Each p4reduce run's final parameters must lie within
``testbed/ddp_bound.py``'s tolerance of gloo's (the quantization bound carried through SGD).

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

import contextlib
import json
import math
import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ... import resources
from ..ddp_bound import param_tolerance
from ..local import StackError
from .experiments import Options, link_label
from .report import save_figure, wrap_title, write_csv
from .runner import Row
from .stack import Host, MininetStack, data_link_mtu, make_workdir
from .switches import SwitchKind

WARMUP = 5  # steps left out of the medians (fewer when a run is shorter)
LR = 0.2
MODELS = {
    # 32-256-256-10: every parameter gets a gradient at every step
    "mlp": ("--model", "mlp", "--inputs", "32", "--hidden", "256", "--depth", "2",
            "--classes", "10"),
    # 2048 x 32 embedding rows, one per sample, 32 samples per worker: a worker touches at
    # most 32 rows (1.6 %) per step, the four workers at most 128 (6 %)
    "embedding": ("--model", "embedding", "--rows", "2048", "--dim", "32", "--ids", "1",
                  "--classes", "10", "--batch", "32"),
}  # fmt: skip
RUNS = (("gloo", "ring"), ("p4reduce", "dense"), ("p4reduce", "auto"))


def find_script(name: str = "train_ddp.py") -> Path:
    """examples/NAME (``resources.example``); StackError when it is missing."""
    try:
        return resources.example(name)
    except resources.ResourceNotFound as err:
        raise StackError(str(err)) from None


def torch_env(stack: MininetStack, h: Host, port: int) -> dict[str, str]:
    """torch's env:// variables for the rank on host ``h`` (rank 0's management address
    as the master), with gloo's traffic on the host's data interface."""
    return {"RANK": str(h.rank), "LOCAL_RANK": "0", "WORLD_SIZE": str(stack.n),
            "LOCAL_WORLD_SIZE": "1", "MASTER_ADDR": stack.hosts[0].mgmt_ip,
            "MASTER_PORT": str(port), "GLOO_SOCKET_IFNAME": h.intf}  # fmt: skip


def p4reduce_args(stack: MininetStack, h: Host, job: int) -> list[str]:
    """The p4reduce worker's options of the training examples for host ``h``."""
    return ["--url", stack.url, "--job-id", str(job), "--bind-ip", h.ip, "--mac", h.mac,
            "--switch-port", str(h.switch_port)]  # fmt: skip


@contextlib.contextmanager
def sparse_stack(
    opts: Options, n: int, switch: SwitchKind, out: Path, say: Callable[[str], None]
) -> Iterator[tuple[MininetStack, Path]]:
    """A Mininet stack with the sparse program for a training experiment, and its work
    directory, removed afterwards except after a StackError (its logs are named)."""
    shape = opts.shape((opts.loss or (0.0,))[0])
    workdir = make_workdir(out)
    try:
        with MininetStack(
            n, shape, "sparse", switch=switch, k=opts.k(64), workdir=workdir,
            build_dir=out / "build", log=say, initial_timeout_ms=opts.retx_ms,
        ) as stack:  # fmt: skip
            yield stack, workdir
    except StackError as err:  # keep the logs, say where
        raise StackError(f"{err} (logs in {workdir / 'logs'})") from None
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    shutil.rmtree(workdir, ignore_errors=True)


def emit(rows: Sequence[Row], name: str, out: Path, quiet: bool, heading: str,
         lines: Sequence[str]) -> None:  # fmt: skip
    """Rows as JSON objects (``quiet``), else the heading, the lines and the files."""
    if quiet:
        for r in rows:
            print(json.dumps({"experiment": name, **r.as_dict()}), flush=True)
        return
    print(f"\n{heading}")
    for line in lines:
        print(f"  {line}")
    print(f"  wrote {out / (name + '.csv')} and {out / (name + '.png')}", flush=True)


def run_backend(
    stack: MininetStack, script: Path, model: str, backend: str, mode: str, params: Path,
    opts: Options, job: int,
) -> dict[str, Any]:  # fmt: skip
    """One training run; rank 0's summary."""
    procs = []
    for h in stack.hosts:
        env = torch_env(stack, h, 29600 + job)
        args = [sys.executable, str(script), "--backend", backend, "--steps", str(opts.steps),
                "--warmup", str(min(WARMUP, opts.steps - 1)), "--probe", "--json",
                "--timeout", f"{opts.timeout:g}",
                "--lr", str(LR), *MODELS[model], "--save-params", str(params)]  # fmt: skip
        if backend == "p4reduce":
            args += [*p4reduce_args(stack, h, job), "--mode", mode]
        procs.append(stack.spawn_in(h, f"train-{model}-{backend}-{mode}-{h.rank}", args, env=env))
    results = stack.wait(procs, opts.timeout + 30)
    summary = [ln for ln in results[0].lines if ln.get("done")]
    if not summary:
        raise StackError(
            f"train_ddp.py --model {model} --backend {backend}: rank 0 printed no summary"
        )
    return summary[-1]


def row_of(s: dict[str, Any], model: str, mode: str, stack: MininetStack, switch: str) -> Row:
    step = s["median_step_seconds"]
    losses = s["losses"]
    per_step = s.get("stats_per_step") or {}
    return Row(
        experiment="training", backend=s["backend"], mode=mode, workers=s["workers"],
        elements=s["params"], dtype="float32", density=1.0, bw_mbit=stack.shape.bw,
        delay_ms=stack.shape.delay_ms, loss=stack.shape.loss, switch=switch,
        seconds=step, seconds_min=step, seconds_max=step, calls=s["steps"] - s["warmup"],
        goodput_mbit=s["params"] * 32 / step / 1e6 if step else 0.0, link_ms=None,
        # rank 0's counts times the workers (an estimate in sparse steps, where the
        # workers' counts are alike but not equal)
        packets=per_step.get("packets_sent", 0.0) * s["workers"],
        retransmissions=per_step.get("retransmissions", 0.0) * s["workers"],
        ok=all(math.isfinite(x) for x in losses), max_abs_error=0.0, k=stack.k, mtu=data_link_mtu(stack.k),
        extra={"model": model, "allreduce_ms": s.get("median_allreduce_seconds", 0.0) * 1e3,
               "loss_first": losses[0], "loss_last": losses[-1],
               "losses": " ".join(f"{x:.6g}" for x in losses)},
    )  # fmt: skip


def compare(ref: dict[str, Any], run: dict[str, Any], ref_params: Path, params: Path,
            n: int) -> dict[str, Any]:  # fmt: skip
    """The run's final parameters against gloo's, and the bound (testbed/ddp_bound.py)."""
    a, b = np.load(ref_params), np.load(params)
    diff = float(np.max(np.abs(a.astype(np.float64) - b))) if a.size else 0.0
    pmax = [max(x, y) for x, y in zip(ref["param_max"], run["param_max"], strict=True)]
    tol = param_tolerance(n, LR, ref["input_max"], pmax).tolerance
    dloss = max(abs(x - y) for x, y in zip(ref["losses"], run["losses"], strict=True))
    return {"max_param_diff": diff, "param_tolerance": tol, "max_loss_diff": dloss,
            "within_bound": diff <= tol}  # fmt: skip


def run_training(
    opts: Options, switch: SwitchKind, out: Path, say: Callable[[str], None], *, quiet: bool
) -> list[Row]:
    script = find_script()
    n = (opts.workers or (4,))[0]
    shape = opts.shape((opts.loss or (0.0,))[0])
    say(f"training: {n} workers, links {shape.label()}, K = {opts.k(64)}")
    rows: list[Row] = []
    summaries: dict[tuple[str, str, str], dict[str, Any]] = {}
    with sparse_stack(opts, n, switch, out, say) as (stack, workdir):
        job = 0
        for model in MODELS:
            for backend, mode in RUNS:
                job += 1
                say(f"training: {model}, {backend} {mode}")
                params = workdir / f"params-{model}-{backend}-{mode}.npy"
                s = run_backend(stack, script, model, backend, mode, params, opts, job)
                s["params_path"] = params
                summaries[(model, backend, mode)] = s
                rows.append(row_of(s, model, mode, stack, switch.label))
        for r in rows:
            model = r.extra["model"]
            ref = summaries[(model, "gloo", "ring")]
            run = summaries[(model, r.backend, r.mode)]
            c = compare(ref, run, ref["params_path"], run["params_path"], n)
            r.extra.update(c)
            r.ok = r.ok and bool(c["within_bound"])
    write_csv(rows, out / "training.csv")
    label = link_label(rows)
    figure(rows, out / "training.png", f"training: DDP, {n} workers\n{label}")
    emit(rows, "training", out, quiet, f"training: DDP across the testbed ({label})",
         training_lines(rows))  # fmt: skip
    return rows


def training_lines(rows: list[Row]) -> list[str]:
    lines = []
    for r in rows:
        e = r.extra
        lines.append(
            f"{e['model']} ({r.elements:,} parameters), {r.backend} {r.mode}: step "
            f"{r.seconds * 1e3:.1f} ms, all-reduce {e['allreduce_ms']:.1f} ms, "
            f"{r.packets:.0f} packets per step, loss {e['loss_first']:.4f} -> {e['loss_last']:.4f}"
            + ("" if r.backend == "gloo" else
               f"; vs gloo: max |dparam| {e['max_param_diff']:.3g} (bound "
               f"{e['param_tolerance']:.3g}: {'within' if e['within_bound'] else 'OUTSIDE'}), "
               f"max |dloss| {e['max_loss_diff']:.3g}")
        )  # fmt: skip
    return lines


def figure(rows: list[Row], path: Path, title: str) -> None:
    """Left: median step time per model and run; right: the loss curves side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = list(dict.fromkeys(r.extra["model"] for r in rows))
    runs = list(dict.fromkeys(f"{r.backend} {r.mode}" for r in rows))
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10.5, 4.2), layout="constrained")
    width = 0.8 / len(runs)
    for i, run in enumerate(runs):
        ys = [next(r.seconds * 1e3 for r in rows if r.extra["model"] == m
                   and f"{r.backend} {r.mode}" == run) for m in models]  # fmt: skip
        xs = [g + (i - (len(runs) - 1) / 2) * width for g in range(len(models))]
        ax.bar(xs, ys, width, label=run)
        for x, y in zip(xs, ys, strict=True):
            ax.annotate(f"{y:.0f}", (x, y), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(models)), models)
    ax.set_ylabel("median time per step (ms)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    styles = {"gloo ring": "-", "p4reduce dense": "--", "p4reduce auto": ":"}
    for r in rows:
        losses = [float(x) for x in r.extra["losses"].split()]
        run = f"{r.backend} {r.mode}"
        bx.plot(range(1, len(losses) + 1), losses, styles.get(run, "-"),
                label=f"{r.extra['model']}, {run}")  # fmt: skip
    bx.set_xlabel("step")
    bx.set_ylabel("training loss (rank 0's batch)")
    bx.grid(True, alpha=0.3)
    bx.legend(fontsize=7)
    fig.suptitle(wrap_title(title, 130), fontsize=10)
    save_figure(fig, path)
