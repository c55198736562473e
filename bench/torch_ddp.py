"""DDP training step time and all-reduce time per step with gloo, with the p4reduce
torch.distributed backend, and with the p4reduce DDP comm hook (over gloo), in one run.

Each backend trains the same model on the same data: ``examples/train_ddp.py`` with N ranks
(env:// on 127.0.0.1, ``testbed/ranks.py``), an MLP of about 1M parameters by default. The
two p4reduce runs share one local stack (``LocalStack``: the embedded switch with the dense
program and the registration service), each as its own job. Every run uses
``--probe``, a comm hook that times each step's all-reduce from the first bucket handed over
to the last bucket's result (for gloo and the backend it wraps torch's reference
``allreduce_hook``, which does what DDP's own path does; for the hook, the p4reduce hook).

Printed, and written to ``--out`` (bench/out/) as ``torch_ddp.csv`` and ``torch_ddp.png``:
per backend the median step time and all-reduce time over the steps after ``--warmup``,
each as a ratio to gloo measured in the same run, the backend's aggregation statistics
per step (packets, retransmissions) where it has them, and for p4reduce the all-reduce
against the kernel floors of the same run (bench/floor.py: the step's parameters as
aggregation packets through the C reflector, per datagram and over UDP GSO/GRO).

    python bench/torch_ddp.py [--workers 2[,4]] [--host-engines native,python] [--steps 4] [--warmup 1] [--hidden 1000]
        [--inputs 64] [--depth 2] [--backends gloo,p4reduce,hook] [--k 64,256,1024]
        [--engines E,E] [--udp-offload on|off|on,off] [--out DIR] [--json]

The p4reduce backends run once per K (a local stack per build), per switch engine and per
host protocol engine (``--host-engines``: the native C driver and the Python core), one
row each, next to gloo with the same number of ranks (``--workers 2,4``: each count).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import floor
from p4reduce.testbed.local import LocalStack, StackError
from p4reduce.testbed.ranks import Ranks, RanksError

from p4reduce import contracts
from p4reduce.free_port import free_port

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "train_ddp.py"
BACKENDS = ("gloo", "p4reduce", "hook")


def log(msg: str) -> None:
    print(f"torch_ddp bench: {msg}", file=sys.stderr, flush=True)


def params_of(inputs: int, hidden: int, depth: int, classes: int) -> int:
    widths = [inputs] + [hidden] * depth + [classes]
    return sum(a * b + b for a, b in zip(widths[:-1], widths[1:], strict=True))


def train(
    args: argparse.Namespace,
    backend: str,
    work: Path,
    extra: list[str],
    env: list[dict[str, str]] | None,
    tag: str | None = None,
) -> dict[str, Any]:
    """One training run (its files under ``work / tag``); rank 0's summary line."""
    argv = [
        sys.executable, str(EXAMPLE), "--backend", backend, "--json", "--probe",
        "--steps", str(args.steps), "--warmup", str(args.warmup),
        "--inputs", str(args.inputs), "--hidden", str(args.hidden), "--depth", str(args.depth),
        "--batch", str(args.batch), "--timeout", f"{args.timeout:g}", *extra,
    ]  # fmt: skip
    summary = None
    t0 = time.perf_counter()
    with Ranks(work / (tag or backend)) as ranks:
        ranks.start(argv, args.workers, rank_env=env)
        for line in ranks.follow(args.timeout + 30):
            if line.startswith("{"):
                obj = json.loads(line)
                if obj.get("done"):
                    summary = obj
                elif "step" in obj:
                    log(f"{backend}: step {obj['step'] + 1}/{args.steps}: "
                        f"{obj['step_seconds'] * 1e3:.1f} ms, all-reduce "
                        f"{obj['allreduce_seconds'] * 1e3:.1f} ms")  # fmt: skip
    if summary is None:
        raise RuntimeError(f"{backend}: rank 0 printed no summary")
    log(f"{backend}: done in {time.perf_counter() - t0:.1f} s")
    return summary


def row(backend: str, s: dict[str, Any], base: dict[str, Any] | None) -> dict[str, Any]:
    per = s.get("stats_per_step") or {}
    r = {
        "backend": backend,
        "workers": s["workers"],
        "params": s["params"],
        "timed_steps": s["steps"] - min(s.get("warmup", 0), s["steps"] - 1),
        "step_ms": s["median_step_seconds"] * 1e3,
        "allreduce_ms": s["median_allreduce_seconds"] * 1e3,
        "step_vs_gloo": float("nan"),
        "allreduce_vs_gloo": float("nan"),
        "packets_sent_per_step": per.get("packets_sent", float("nan")),
        "retransmissions_per_step": per.get("retransmissions", float("nan")),
        "goodput_gbps": (
            s["params"] * 32 / s["median_allreduce_seconds"] / 1e9
            if s["median_allreduce_seconds"] > 0
            else float("nan")
        ),  # fmt: skip
    }
    if base is not None:
        r["step_vs_gloo"] = r["step_ms"] / (base["median_step_seconds"] * 1e3)
        r["allreduce_vs_gloo"] = r["allreduce_ms"] / (base["median_allreduce_seconds"] * 1e3)
    return r


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})


def plot(path: Path, rows: list[dict[str, Any]], title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    f, a = plt.subplots(figsize=(7, 4))
    xs = range(len(rows))
    a.bar([x - 0.2 for x in xs], [r["step_ms"] for r in rows], 0.4, label="training step")
    a.bar([x + 0.2 for x in xs], [r["allreduce_ms"] for r in rows], 0.4, label="all-reduce")
    a.set_xticks(list(xs), [r["backend"].replace(" ", "\n", 1) for r in rows], fontsize=7)
    a.set_yscale("log")
    a.set_ylabel("ms per step (median)")
    a.legend()
    a.set_title(title, fontsize=9)
    f.tight_layout()
    f.savefig(path, dpi=110)
    plt.close(f)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", default="2",
                    help="ranks, comma-separated: each count runs every backend, next to "
                    "gloo with as many ranks (2)")  # fmt: skip
    ap.add_argument("--host-engines", default="native,python",
                    help="p4reduce host protocol engines, comma-separated: every p4reduce "
                    "run once per engine (native,python)")  # fmt: skip
    ap.add_argument("--steps", type=int, default=4, help="training steps per backend (4)")
    ap.add_argument("--warmup", type=int, default=1, help="steps left out of the medians (1)")
    ap.add_argument("--inputs", type=int, default=64, help="input features (64)")
    ap.add_argument(
        "--hidden", type=int, default=1000, help="hidden width (1000: ~1.08M parameters)"
    )
    ap.add_argument("--depth", type=int, default=2, help="hidden layers (2)")
    ap.add_argument("--batch", type=int, default=64, help="samples per worker and step (64)")
    ap.add_argument("--backends", default=",".join(BACKENDS), help="gloo,p4reduce,hook")
    ap.add_argument("--timeout", type=float, default=600.0, help="per training run (600 s)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out", help="bench/out")
    ap.add_argument("--k", default="64,256,1024",
                    help="K per build of the switch's program, comma-separated: the p4reduce "
                    "backends run once per K, printed side by side (64,256,1024)")  # fmt: skip
    ap.add_argument("--engines", default=None,
                    help="p4reduce-switch engines, comma-separated (default: every one its "
                    "--engine offers; its default engine without that option)")  # fmt: skip
    ap.add_argument("--udp-offload", default="on", choices=("on", "off", "on,off", "off,on"),
                    help="UDP GSO/GRO in the switch and the ranks: on, off (per datagram, "
                    "rows marked dgram) or both in one run (default on)")  # fmt: skip
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args(argv)
    offloads = args.udp_offload.split(",")
    try:
        ks = [int(k) for k in args.k.split(",") if k]
    except ValueError:
        ks = []
    if not ks or any(k not in contracts.K_CHOICES for k in ks):
        ap.error(f"--k {args.k!r}: comma-separated values among 64, 256, 1024")
    try:
        worker_counts = [int(w) for w in args.workers.split(",") if w]
    except ValueError:
        worker_counts = []
    if not worker_counts or min(worker_counts) < 1:
        ap.error(f"--workers {args.workers!r}: comma-separated positive counts")
    host_engines = [e for e in args.host_engines.split(",") if e]
    if not host_engines or any(e not in ("native", "python") for e in host_engines):
        ap.error(f"--host-engines {args.host_engines!r}: native and/or python")
    engines = floor.switch_engines() if args.engines is None else args.engines.split(",")
    backends = [b for b in args.backends.split(",") if b]
    if "gloo" not in backends or any(b not in BACKENDS for b in backends):
        ap.error(f"--backends: gloo (the baseline) and any of {', '.join(BACKENDS[1:])}")
    if args.steps <= args.warmup:
        ap.error("--steps must exceed --warmup")
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    params = params_of(args.inputs, args.hidden, args.depth, 10)
    log(f"{params:,} parameters, {args.workers} workers, {args.steps} steps per backend")
    workers_text = args.workers
    summaries: dict[str, dict[str, Any]] = {}
    bases: dict[str, str] = {}  # a run's name: its gloo run's (the same worker count)
    shapes: dict[str, tuple[int, int, int]] = {}  # a p4reduce run's name: (n, K, slots)
    with tempfile.TemporaryDirectory(prefix="p4reduce-torch-bench-") as tmp:
        work = Path(tmp)
        for n in worker_counts:
            args.workers = n
            gname = "gloo" if len(worker_counts) == 1 else f"gloo n={n}"
            summaries[gname] = train(args, "gloo", work, [], None, f"gloo-n{n}")
            bases[gname] = gname
            p4 = [b for b in backends if b != "gloo"]
            for engine, k, offload in [
                (e, k, o) for e in (engines if p4 else []) for k in ks for o in offloads
            ]:
                label = f"K={k}" if engine is None else f"switch {engine} K={k}"
                if offload == "off":
                    label += " dgram"
                if len(worker_counts) > 1:
                    label += f" n={n}"
                peers = [("127.0.0.1", free_port("udp")) for _ in range(n)]
                switch_args = [] if engine is None else ["--engine", engine]
                with (
                    floor.udp_offload_env(offload),
                    LocalStack(n, "dense", k=k, peers=peers, log=log, switch_args=switch_args,
                               workdir=work / f"stack-{engine}-{k}-n{n}-{offload}") as stack,
                ):  # fmt: skip
                    env = [{"P4REDUCE_UDP_PORT": str(p)} for _, p in peers]
                    job = 0
                    for host in host_engines:
                        for b in p4:
                            job += 1
                            extra = ["--url", stack.url, "--job-id", str(job), "--engine", host]
                            tag = f"{b}-{host}-{engine or 'default'}-k{k}-n{n}-{offload}"
                            name = f"{b} host {host}, {label}"
                            summaries[name] = train(args, b, work, extra, env, tag)
                            bases[name] = gname
                            shapes[name] = (n, k, stack.slots)
    rows = [row(name, s, summaries[bases[name]]) for name, s in summaries.items()]
    for r in rows:  # the kernel floors of each p4reduce run's all-reduce, measured now
        n, k, slots = shapes.get(r["backend"], (0, 0, 0))
        for name, gso in (("floor", False), ("gso_floor", True)):
            sec = floor.kernel_floor(n, r["params"], k, slots, gso, log=log) if n else math.nan
            r[f"{name}_ms"] = sec * 1e3
            r[f"allreduce_vs_{name}"] = r["allreduce_ms"] / r[f"{name}_ms"] if n else math.nan
    write_csv(args.out / "torch_ddp.csv", rows)
    title = (
        f"DDP on the embedded switch: {params:,} parameters, {workers_text} workers "
        f"(median of {args.steps - args.warmup} steps)"
    )
    plot(args.out / "torch_ddp.png", rows, title)
    total = time.perf_counter() - t0
    if args.json:
        print(json.dumps({"rows": rows, "seconds": total}, indent=1))
        return 0
    print(title)
    print(f"{'backend':<50} {'step ms':>8} {'all-reduce ms':>14} {'step/gloo':>10} "
          f"{'all-reduce/gloo':>16} {'packets/step':>13} {'retx/step':>10} {'Gb/s':>8} "
          f"{'floor ms':>9} {'x floor':>8} {'gso floor':>9} {'x gso fl':>8}")  # fmt: skip
    for r in rows:
        pk, rx = r["packets_sent_per_step"], r["retransmissions_per_step"]
        pk_text = "-" if math.isnan(pk) else f"{pk:,.0f}"
        rx_text = "-" if math.isnan(rx) else f"{rx:.1f}"
        fl = " ".join(
            f"{'-':>9} {'-':>8}" if math.isnan(r[f"{x}_ms"]) else
            f"{r[f'{x}_ms']:>9.1f} {r[f'allreduce_vs_{x}']:>8.2f}"
            for x in ("floor", "gso_floor")
        )  # fmt: skip
        print(f"{r['backend']:<50} {r['step_ms']:>8.1f} {r['allreduce_ms']:>14.1f} "
              f"{r['step_vs_gloo']:>10.2f} {r['allreduce_vs_gloo']:>16.2f} "
              f"{pk_text:>13} {rx_text:>10} {r['goodput_gbps']:>8.4f} {fl}")  # fmt: skip
    print(f"\nwrote {args.out / 'torch_ddp.csv'} and {args.out / 'torch_ddp.png'} ({total:.0f} s)")
    return 0


def run(argv: list[str] | None = None) -> int:
    """``main`` with the house's error ending: one line, exit 1, never a traceback."""
    try:
        return main(argv)
    except (RanksError, StackError, RuntimeError) as err:
        print(f"torch_ddp bench: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("torch_ddp bench: error: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(run())
