"""Gradient compression on the embedded switch: test accuracy, switch packets per step and
step time per scheme, from one training run of ``examples/train_digits.py`` (scikit-learn's
digits images, an MLP, N workers, every scheme in the same process group from the same
weights and data order).

Schemes: dense DDP on the p4reduce backend (the baseline), block top-k with error feedback,
block top-k without it, the adaptive ratio, all with ``--mode`` (default sparse: every
compressed step through the switch's sparse program); ``--auto`` adds a run of top-k with
``--mode auto`` (the cost model may pick the allgather over gloo, whose traffic is not
switch packets).

Printed, and written to ``--out`` (bench/out/) as ``compress.csv`` and ``compress.png``:
per scheme the accuracy, packets per step after the warm-up (and as a ratio to dense: the
packet reduction), the median step time as a ratio to dense measured in the same run.

    python bench/compress.py [--workers 4] [--epochs 15] [--ratio 0.02] [--auto] [--out DIR]

``--packets``: instead, the switch packets per compressed step of top-k with agreed and
with local selection at 2, 4 and 8 workers (``--ratio``, default 0.05 there), against the
bound of issue 36: agreed selection's data packets <= 1.2 x ratio x dense's data packets +
its telemetry (the energies' ceil(B/K) blocks and the tail's block). Priming packets (one
header-only packet per slot per call, min(S, blocks)) are listed apart: they are a fixed
cost per call, about 8 of the 159 packets of a dense step of the digits MLP (151 blocks).

    python bench/compress.py --packets [--ratio 0.05]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "train_digits.py"
SCHEMES = "none,topk,topk-noef,adaptive"


def train(args: argparse.Namespace, schemes: str, mode: str, *extra: str) -> list[dict[str, Any]]:
    cmd = [sys.executable, str(EXAMPLE), "--json", "--compress", schemes, "--mode", mode,
           "--workers", str(args.workers), "--epochs", str(args.epochs),
           "--ratio", str(args.ratio), "--timeout", str(args.timeout), *extra]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or ["(no output)"]
        raise SystemExit(f"compress.py: error: train_digits.py failed: {tail[0]}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["name"] for r in rows]
    f, ax = plt.subplots(1, 3, figsize=(12, 3.6))
    ax[0].bar(names, [100 * r["accuracy"] for r in rows], color="tab:green")
    ax[0].set_ylabel("test accuracy (%)")
    lo = min(100 * r["accuracy"] for r in rows)
    ax[0].set_ylim(max(0, lo - 5), 100)
    ax[1].bar(names, [r["packets_per_step"] for r in rows], color="tab:blue")
    ax[1].set_ylabel("switch packets per step (worker 0)")
    ax[2].bar(names, [r["step_vs_dense"] for r in rows], color="tab:orange")
    ax[2].set_ylabel("step time / dense step time")
    for a in ax:
        a.tick_params(axis="x", rotation=30)
    f.suptitle("block top-k on the embedded switch (digits, same epochs)")
    f.tight_layout()
    f.savefig(path, dpi=110)


BLOCKS, K, SLOTS = 151, 64, 8  # the example's MLP (9,610 parameters), K, its --slots


def packets(args: argparse.Namespace) -> int:
    """Packets per compressed step, agreed and local selection, at 2, 4 and 8 workers."""
    prime_dense = min(SLOTS, BLOCKS)
    energies = math.ceil(BLOCKS / K)  # the agreed rule's energies: B floats
    tail = energies + 1  # the energies' blocks and the payload's tail block
    print(f"top-k {args.ratio:g}, sparse path, digits MLP ({BLOCKS} blocks, K {K}, "
          f"S {SLOTS}); worker 0's packets per step after the warm-up")  # fmt: skip
    print(f"{'n':>2s} {'selection':9s} {'pkts/step':>9s} {'priming':>7s} {'data':>6s} "
          f"{'dense data':>10s} {'bound':>6s}  {'of dense':>8s}  ok")  # fmt: skip
    ok = True
    for n in (2, 4, 8):
        args.workers = n
        # enough steps after 2 warm-up steps at any n (44, 22 and 10 steps per 2 epochs)
        args.epochs = 2
        for selection in ("agreed", "local"):
            runs = train(args, "none,topk", "sparse", "--selection", selection,
                         "--warmup-steps", "2")  # fmt: skip
            dense, topk = runs[0], runs[1]
            dense_data = dense["packets_per_step"] - prime_dense
            prime = prime_dense + (min(SLOTS, energies) if selection == "agreed" else 0)
            data = topk["packets_per_step"] - prime
            bound = 1.2 * args.ratio * dense_data + (tail if selection == "agreed" else 1)
            good = data <= bound
            if selection == "agreed":
                ok &= good
            print(f"{n:2d} {selection:9s} {topk['packets_per_step']:9.1f} {prime:7d} "
                  f"{data:6.1f} {dense_data:10.1f} {bound:6.1f}  "
                  f"{topk['packets_per_step'] / dense['packets_per_step']:8.3f}  "
                  f"{('yes' if good else 'NO') if selection == 'agreed' else '-'}",
                  flush=True)  # fmt: skip
    print("agreed selection within the bound at 2, 4, 8 workers" if ok else
          "compress.py: agreed selection over the bound")  # fmt: skip
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="compress.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--epochs", type=int, default=15)
    p.add_argument("--ratio", type=float, default=None, help="0.02; --packets: 0.05")
    p.add_argument("--packets", action="store_true",
                   help="packets per step, agreed and local selection, 2/4/8 workers")  # fmt: skip
    p.add_argument("--mode", default="sparse", choices=("sparse", "dense", "allgather", "auto"))
    p.add_argument("--auto", action="store_true", help="add top-k with --mode auto")
    p.add_argument("--timeout", type=float, default=1200.0)
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    args = p.parse_args(argv)
    if args.ratio is None:
        args.ratio = 0.05 if args.packets else 0.02
    if args.packets:
        return packets(args)
    runs = train(args, SCHEMES, args.mode)
    for r in runs:
        r["name"] = r["scheme"]
    if args.auto:
        extra = train(args, "topk", "auto")
        for r in extra:
            r["name"] = "topk-auto"
        runs += extra
    dense = next(r for r in runs if r["scheme"] == "none")
    rows = []
    for r in runs:
        rows.append({
            "name": r["name"],
            "accuracy": r["accuracy"],
            "accuracy_vs_dense_points": 100 * (r["accuracy"] - dense["accuracy"]),
            "packets_per_step": r["packets_per_step"],
            "packet_reduction": dense["packets_per_step"] / r["packets_per_step"]
            if r["packets_per_step"] else float("inf"),
            "step_ms": 1000 * r["step_seconds"],
            "step_vs_dense": r["step_seconds"] / dense["step_seconds"],
            "ratio": r["ratio"],
            "paths": r["paths"],
        })  # fmt: skip
    print(f"{'scheme':12s} {'acc %':>6s} {'Δ pts':>6s} {'pkts/step':>9s} {'fewer':>6s} "
          f"{'step ms':>8s} {'vs dense':>8s}  ratio   paths")  # fmt: skip
    for r in rows:
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.4f}"
        print(f"{r['name']:12s} {100 * r['accuracy']:6.2f} {r['accuracy_vs_dense_points']:+6.2f} "
              f"{r['packets_per_step']:9.1f} {r['packet_reduction']:5.1f}x {r['step_ms']:8.1f} "
              f"{r['step_vs_dense']:8.2f}  {ratio:6s}  {r['paths']}")  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "compress.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    plot(rows, args.out / "compress.png")
    print(f"wrote {args.out / 'compress.csv'} and {args.out / 'compress.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
