"""Time to accuracy: the training experiment's compressed schemes on the testbed
(``p4reduce testbed -e accuracy``, docs/results.md "Time to accuracy").

``examples/train_digits.py`` (scikit-learn's digits images, an MLP) runs once per scheme
with one process per Mininet host, on the same hosts, shaped links and switch, from the
same weights and data order: gloo, dense p4reduce, block top-k with local and with agreed
selection, and the adaptive ratio (docs/compression.md), the compressed ones through the
switch's sparse program (``--mode sparse``). Rank 0 measures the test accuracy after every
step, against its time spent in training steps (the evaluations left out). Per scheme: the
curve (accuracy against wall time, one PNG), the final accuracy, and the time to reach
``TARGET`` accuracy (the first evaluation at or above it; None when never reached).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..local import StackError
from .experiments import Options, link_label
from .report import save_figure, wrap_title, write_csv
from .runner import Row
from .stack import MininetStack, data_link_mtu
from .switches import SwitchKind
from .training import emit, find_script, p4reduce_args, sparse_stack, torch_env

TARGET = 0.90  # test accuracy the time is measured to
RATIO = 0.05  # top-k's ratio (adaptive: its start); agreed selection sends 8 of 151 blocks
SAME_AS_GLOO = 0.01  # dense p4reduce's final accuracy against gloo's (same data and weights)
EVAL_EVERY = 1  # steps between rank 0's evaluations


@dataclass(frozen=True)
class Scheme:
    label: str
    backend: str  # "gloo" or "p4reduce"
    compress: str  # train_digits.py --compress
    selection: str = "local"


SCHEMES = (
    Scheme("gloo", "gloo", "none"),
    Scheme("p4reduce dense", "p4reduce", "none"),
    Scheme("top-k local", "p4reduce", "topk", "local"),
    Scheme("top-k agreed", "p4reduce", "topk", "agreed"),
    Scheme("adaptive", "p4reduce", "adaptive", "agreed"),
)


def time_to(curve: Sequence[Sequence[float]], target: float) -> float | None:
    """Seconds of the first point of ``curve`` ([seconds, step, accuracy], in order) whose
    accuracy is at least ``target``; None when none is."""
    for seconds, _step, acc in curve:
        if acc >= target:
            return float(seconds)
    return None


def run_scheme(
    stack: MininetStack, script: Path, scheme: Scheme, opts: Options, epochs: int, job: int
) -> dict[str, Any]:
    """One training run of ``scheme``; rank 0's JSON summary (with its curve)."""
    procs = []
    for h in stack.hosts:
        env = {**torch_env(stack, h, 29700 + job), "OMP_NUM_THREADS": "1"}
        args = [str(script), "--json", "--backend", scheme.backend, "--compress", scheme.compress,
                "--selection", scheme.selection, "--mode", "sparse", "--ratio", str(RATIO),
                "--lr", f"{opts.lr:g}", "--epochs", str(epochs), "--eval-every", str(EVAL_EVERY),
                "--timeout", f"{opts.timeout:g}"]  # fmt: skip
        if scheme.backend == "p4reduce":
            args += p4reduce_args(stack, h, job)
        name = f"digits-{scheme.label.replace(' ', '-')}-{h.rank}"
        procs.append(stack.spawn_in(h, name, [sys.executable, *args], env=env))
    results = stack.wait(procs, opts.timeout + 30)
    summary = [ln for ln in results[0].lines if "curve" in ln]
    if not summary:
        raise StackError(f"train_digits.py, {scheme.label}: rank 0 printed no summary")
    return summary[-1]


def row_of(s: dict[str, Any], scheme: Scheme, stack: MininetStack, switch: str, lr: float) -> Row:
    curve = s["curve"]
    total = curve[-1][0] if curve else 0.0
    tta = time_to(curve, TARGET)
    return Row(
        experiment="accuracy", backend=scheme.backend, mode=scheme.label,
        workers=stack.n, elements=0, dtype="float32", density=1.0, bw_mbit=stack.shape.bw,
        delay_ms=stack.shape.delay_ms, loss=stack.shape.loss, switch=switch,
        seconds=total, seconds_min=total, seconds_max=total, calls=s["steps"],
        goodput_mbit=0.0, link_ms=None,
        packets=s["packets_per_step"] * stack.n, retransmissions=0.0,
        ok=math.isfinite(s["accuracy"]) and len(curve) > 0, max_abs_error=0.0,
        k=stack.k, mtu=data_link_mtu(stack.k),
        extra={"scheme": scheme.label, "accuracy": s["accuracy"], "target": TARGET,
               "time_to_target": tta, "epochs": s["epochs"], "lr": lr,
               "ratio_end": s.get("ratio"),
               "step_ms": s["step_seconds"] * 1e3,
               "curve": " ".join(f"{t:.4f}:{a:.4f}" for t, _, a in curve)},
    )  # fmt: skip


def run_accuracy(
    opts: Options, switch: SwitchKind, out: Path, say: Callable[[str], None], *, quiet: bool
) -> list[Row]:
    script = find_script("train_digits.py")
    n = (opts.workers or (4,))[0]
    shape = opts.shape((opts.loss or (0.0,))[0])
    say(f"accuracy: {n} workers, links {shape.label()}, K = {opts.k(64)}, {opts.epochs} "
        f"epochs, lr {opts.lr:g}")  # fmt: skip
    rows: list[Row] = []
    with sparse_stack(opts, n, switch, out, say) as (stack, _workdir):
        for job, scheme in enumerate(SCHEMES, start=1):
            if scheme.backend == "gloo" and not opts.gloo:
                continue
            say(f"accuracy: {scheme.label}")
            s = run_scheme(stack, script, scheme, opts, opts.epochs, job)
            rows.append(row_of(s, scheme, stack, switch.label, opts.lr))
    check_dense(rows)
    write_csv(rows, out / "accuracy.csv")
    label = link_label(rows)
    title = f"time to accuracy: digits MLP, {n} workers, SGD lr {opts.lr:g}, top-k {RATIO:g}"
    figure(rows, out / "accuracy.png", f"{title}\n{label}")
    heading = f"accuracy: time to {100 * TARGET:.0f} % test accuracy ({label})"
    emit(rows, "accuracy", out, quiet, heading, accuracy_lines(rows))
    return rows


def check_dense(rows: Sequence[Row]) -> None:
    """Dense p4reduce trains what gloo trains (the same data, weights and steps; the sums
    differ by the switch's quantization only): its final accuracy within SAME_AS_GLOO of
    gloo's, else its row is not ok."""
    gloo = [r for r in rows if r.backend == "gloo"]
    for r in rows:
        if r.mode == "p4reduce dense" and gloo:
            diff = abs(r.extra["accuracy"] - gloo[0].extra["accuracy"])
            r.extra["vs_gloo"] = diff
            r.ok = r.ok and diff <= SAME_AS_GLOO


def accuracy_lines(rows: Sequence[Row]) -> list[str]:
    lines = [f"{'scheme':16s} {'final acc':>9s} {'to ' + format(TARGET, '.0%'):>9s} "
             f"{'train s':>8s} {'step ms':>8s} {'pkts/step':>9s}"]  # fmt: skip
    for r in rows:
        e = r.extra
        tta = "never" if e["time_to_target"] is None else f"{e['time_to_target']:.2f} s"
        lines.append(f"{e['scheme']:16s} {100 * e['accuracy']:8.2f}% {tta:>9s} "
                     f"{r.seconds:7.2f}s {e['step_ms']:8.1f} {r.packets:9.1f}")  # fmt: skip
    return lines


def figure(rows: Sequence[Row], path: Path, title: str) -> None:
    """Test accuracy against rank 0's training time, one curve per scheme, the target as
    a dashed line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.5), layout="constrained")
    for r in rows:
        pts = [p.split(":") for p in r.extra["curve"].split()]
        ax.plot([float(t) for t, _ in pts], [100 * float(a) for _, a in pts], label=r.mode)
    ax.axhline(100 * TARGET, color="grey", linestyle="--", linewidth=1)
    ax.set_xlabel("training time, rank 0 (s)")
    ax.set_ylabel("test accuracy (%)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.suptitle(wrap_title(title, 90), fontsize=10)
    save_figure(fig, path)
