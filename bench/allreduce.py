"""All-reduce speed on the local stack: the embedded switch, the controller and worker
processes on 127.0.0.1 (``p4reduce.testbed.local.LocalStack``, as ``p4reduce check`` runs).

Printed, and written to ``--out`` as one CSV and one PNG per figure:

- ``sizes``: time and goodput per all-reduce against tensor size (dense float32, N workers),
  per switch engine and K, next to gloo (torch.distributed, N processes) in the same run;
- ``workers``: time and goodput against the number of workers (fixed size);
- ``density``: sparse time against density, next to dense on the same data (sparse program);
- ``quantize``: block_exponents, quantize and dequantize (into a second array and in place)
  throughput next to ``np.copyto`` of the same array;
- ``pps``: packets per second per worker, for every run above, next to a plain Python UDP
  echo process driven the same way (same datagram size, same window);
- ``host`` (bench/engines.py): one worker against the C reflector, the native engine (with
  its AVX2 and its baseline lane loops) and the Python engine: packets/s and CPU per
  packet, as ratios to the C client (bench/c/reflector.c) pushing the same packets through
  the same reflector in the same run (the kernel floor; target: native >= 0.8);
- ``engines`` (bench/engines.py, not in the default set: many minutes): time and worker CPU
  per all-reduce for each K (--engine-ks), worker count (--engine-workers) and size
  (--engine-sizes), native and Python engine, next to gloo measured in the same run; rows
  estimated past --engine-max-seconds are skipped with the reason printed.

Same-run baselines, so the ratios compare across machines: the UDP echo (goodput and
packets/s of a Python process that only bounces datagrams), the host kernel floor (the same
aggregation packets, ceil(M/K) per worker with the job's slots in flight, pushed by a batched C
client through the C reflector of bench/c/reflector.c: the switch's exchanges without P4 or
Python), and ``np.copyto`` for the quantization. Timings are printed, never asserted. Goodput = tensor bits / time of the
slowest worker's call; each figure is the median of ``--repeat`` calls after one warm-up.

Workers are processes by default (``--runner threads`` runs them as threads of this
process instead; see docs/testbed.md for the comparison).

    python bench/allreduce.py [--workers N] [--sizes M,M,...] [--worker-counts N,N,...]
        [--density-elements M] [--densities D,D,...] [--repeat R] [--slots S] [--k K,K,...]
        [--engines E,E] [--udp-offload on|off|on,off] [--no-gloo]
        [--quant-elements M] [--runner processes|threads] [--out DIR] [--json] [--quick]
"""

from __future__ import annotations

import argparse
import csv
import json
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import floor
import numpy as np
from p4reduce.controller.credentials import new_secret
from p4reduce.host import quantize as Q
from p4reduce.testbed.local import LocalStack, Proc
from p4reduce.testbed.worker import run_plan

from p4reduce import contracts

sys.path.insert(0, str(Path(__file__).parent))
import engines  # noqa: E402 - bench/engines.py, next to this file

ROOT = Path(__file__).resolve().parents[1]

ECHO = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
print(s.getsockname()[1], flush=True)
while True:
    data, peer = s.recvfrom(65536)
    s.sendto(data, peer)
"""


def ints(text: str) -> list[int]:
    return [int(float(x)) for x in text.split(",") if x]


def ks_list(text: str) -> list[int]:
    ks = ints(text)
    bad = [k for k in ks if k not in contracts.K_CHOICES]
    if not ks or bad:
        raise argparse.ArgumentTypeError(f"K {bad or text!r}: each one of 64, 256, 1024")
    return ks


def floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x]


def log(msg: str) -> None:
    print(f"allreduce bench: {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------- running plans
class Runner:
    """Runs a plan on n workers of a stack, as processes or as threads of this process."""

    def __init__(self, stack: LocalStack, kind: str, timeout: float) -> None:
        self.stack = stack
        self.kind = kind
        self.timeout = timeout
        self.job = 0

    def run(self, n: int, plan: list[dict[str, Any]]) -> list[dict[str, Any]]:
        self.job += 1
        if self.kind == "processes":
            procs: list[Proc] = self.stack.spawn_workers(self.job, n, plan, timeout=self.timeout)
            results = self.stack.wait_workers(procs, self.timeout * max(1, len(plan)))
            return [line for r in results for line in r.lines]
        lines: list[dict[str, Any]] = []
        errors: list[str] = []
        secret = new_secret()  # the job's, shared by the worker threads

        def work(rank: int) -> None:
            try:
                lines.extend(
                    run_plan(
                        self.stack.url,
                        self.job,
                        rank,
                        n,
                        self.stack.sockets[rank].dup(),
                        rank + 1,
                        plan,
                        slots=self.stack.slots,
                        timeout=self.timeout,
                        secret=secret,
                    )  # fmt: skip
                )
            except Exception as err:  # noqa: BLE001 - reported below
                errors.append(f"worker {rank}: {type(err).__name__}: {err}")

        threads = [threading.Thread(target=work, args=(r,), daemon=True) for r in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise RuntimeError(errors[0])
        return lines


def summarize(lines: list[dict[str, Any]], item: int) -> dict[str, float]:
    """Median over calls of: the slowest rank's time, packets/s per worker (mean over
    ranks), packets sent per worker, retransmissions (all ranks)."""
    mine = [ln for ln in lines if ln["item"] == item]
    calls = sorted({ln["call"] for ln in mine})
    secs, pps, pkts, retx = [], [], [], []
    for c in calls:
        group = [ln for ln in mine if ln["call"] == c]
        secs.append(max(ln["seconds"] for ln in group))
        sent = [ln.get("stats", {}).get("packets_sent", float("nan")) for ln in group]
        pps.append(statistics.fmean(s / ln["seconds"] for s, ln in zip(sent, group, strict=True)))
        pkts.append(statistics.fmean(sent))
        retx.append(sum(ln.get("stats", {}).get("retransmissions", 0) for ln in group))
    return {
        "seconds": statistics.median(secs),
        "pps_per_worker": statistics.median(pps),
        "packets_per_worker": statistics.median(pkts),
        "retransmissions": statistics.median(retx),
    }


def item(m: int, *, mode: str = "dense", density: float = 1.0, k: int, repeat: int) -> dict:
    return {
        "elements": m, "dtype": "float32", "mode": mode, "density": density, "seed": 1,
        "k": k, "repeat": repeat, "warmup": 1,
    }  # fmt: skip


def goodput(m: int, seconds: float) -> float:
    return m * 32 / seconds / 1e9


# ---------------------------------------------------------------------- baselines
def udp_echo(k: int, window: int, packets: int) -> dict[str, float]:
    """A Python UDP echo process: datagrams of a full aggregation packet's payload size,
    ``window`` in flight, as one worker drives the switch."""
    proc = subprocess.Popen(
        [sys.executable, "-c", ECHO], stdout=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
        s.settimeout(5)
        payload = b"\0" * (24 + 4 * k)  # a full aggregation payload (wire.full_length)
        target = ("127.0.0.1", port)
        for _ in range(min(window, packets)):  # warm up
            s.sendto(payload, target)
        for _ in range(min(window, packets)):
            s.recvfrom(65536)
        sent = got = 0
        t0 = time.perf_counter()
        while got < packets:
            while sent < packets and sent - got < window:
                s.sendto(payload, target)
                sent += 1
            s.recvfrom(65536)
            got += 1
        t = time.perf_counter() - t0
        s.close()
    finally:
        proc.kill()
        proc.wait()
    return {"pps": packets / t, "goodput_gbps": packets * k * 32 / t / 1e9}


def best(fn: Callable[[], object], reps: int, setup: Callable[[], object] | None = None) -> float:
    """The fastest of ``reps`` timed calls of fn, each after an untimed ``setup()``."""
    ts = []
    for _ in range(reps):
        if setup is not None:
            setup()
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def quantize_rows(m: int, k: int, reps: int) -> list[dict[str, Any]]:
    """block_exponents, quantize and dequantize of one float32 array next to ``np.copyto``
    of the same array, in the same run. Every call is timed right after the arrays it uses
    were last touched (by its previous repetition, or by the refill of the sums that the
    in-place dequantize overwrites), so that every figure sees the same cache state.

    quantize and dequantize into a second array each read and write the whole array once,
    as the copy does: either can at most tie with the copy, the pair reach at most about
    0.5. dequantize in place, as the protocol calls it (its int32 result buffer becomes the
    float32 result), writes over the bytes it reads and saves the second stream; the pair
    the protocol runs is quantize + in-place dequantize, the figure of the 0.5 target.
    """
    rng = np.random.default_rng(0)
    x = rng.standard_normal(m, dtype=np.float32)
    blocks = Q.to_blocks(x, k)
    dst = np.empty_like(blocks)
    rows = []
    for n in (4, 3):
        own = Q.block_exponents(blocks)
        q = np.empty(blocks.shape, dtype=np.int32)
        out = np.empty(blocks.shape, dtype=np.float32)
        sums = np.empty_like(q)
        t_copy = best(lambda: np.copyto(dst, blocks), reps)
        t_e = best(lambda: Q.block_exponents(blocks), reps)
        t_q = best(lambda: Q.quantize(blocks, own, n, own=own, out=q), reps)  # noqa: B023
        t_d = best(lambda: Q.dequantize(q, own, n, out=out), reps)  # noqa: B023
        t_di = best(
            lambda: Q.dequantize(sums, own, n, out=sums.view(np.float32)),  # noqa: B023
            reps,
            setup=lambda: np.copyto(sums, q),  # noqa: B023
        )
        t_copy = min(t_copy, best(lambda: np.copyto(dst, blocks), reps))
        if sums.tobytes() != out.tobytes():  # the float32 results, as bits
            raise RuntimeError(f"n={n}: dequantize in place differs from into a second array")
        for what, t in (
            ("np.copyto", t_copy),
            ("block_exponents", t_e),
            ("quantize", t_q),
            ("dequantize", t_d),
            ("dequantize in place", t_di),
            ("quantize+dequantize", t_q + t_d),
            ("quantize+dequantize in place", t_q + t_di),
            ("exponents+quantize+dequantize in place", t_e + t_q + t_di),
        ):
            rows.append(
                {
                    "n": n,
                    "what": what,
                    "elements": m,
                    "seconds": t,
                    "gbytes_per_s": m * 4 / t / 1e9,
                    "ratio_to_copyto": t_copy / t,
                }  # fmt: skip
            )
    return rows


# ---------------------------------------------------------------------- output
def write_csv(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    if not rows:
        return
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})


def plots(out: Path, fig: dict[str, list[dict[str, Any]]], echo: dict[str, float]) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []

    def save(name: str, f: Any) -> None:
        f.tight_layout()
        f.savefig(out / f"{name}.png", dpi=110)
        plt.close(f)
        written.append(str(out / f"{name}.png"))

    def time_goodput(name: str, rows: list[dict[str, Any]], x: str, xlabel: str, log: bool) -> None:
        if not rows:
            return
        f, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
        for (engine, k), group in groups(rows).items():
            xs = [r[x] for r in group]
            label = f"K={k}" if engine == "default" else f"{engine}, K={k}"
            a.plot(xs, [r["seconds"] * 1e3 for r in group], "o-", label=label)
            b.plot(xs, [r["goodput_gbps"] for r in group], "o-", label=label)
        a.set_xlabel(xlabel)
        a.set_ylabel("time per all-reduce (ms)")
        a.legend()
        b.axhline(echo["goodput_gbps"], color="gray", ls="--", label="UDP echo (1 worker)")
        b.set_xlabel(xlabel)
        b.set_ylabel("goodput (Gb/s)")
        b.set_yscale("log")
        b.legend()
        if log:
            a.set_xscale("log")
            a.set_yscale("log")
            b.set_xscale("log")
        f.suptitle(f"all-reduce on the embedded switch: {name}")
        save(name, f)

    time_goodput("sizes", fig["sizes"], "elements", "elements (float32)", True)
    time_goodput("workers", fig["workers"], "workers", "workers", False)

    if fig["density"]:
        f, a = plt.subplots(figsize=(6, 4))
        rows = fig["density"]
        a.plot([r["density"] for r in rows], [r["sparse_seconds"] * 1e3 for r in rows], "o-",
               label="sparse")  # fmt: skip
        a.plot([r["density"] for r in rows], [r["dense_seconds"] * 1e3 for r in rows], "s-",
               label="dense")  # fmt: skip
        a.set_xscale("log")
        a.set_xlabel("density (fraction of non-zero blocks per worker)")
        a.set_ylabel("time per all-reduce (ms)")
        a.legend()
        a.set_title(
            f"sparse vs dense, {rows[0]['elements']} elements, {rows[0]['workers']} workers"
        )
        save("density", f)

    if fig["quantize"]:
        f, a = plt.subplots(figsize=(7, 4))
        rows = fig["quantize"]
        labels = [f"{r['what']}\nn={r['n']}" for r in rows]
        a.barh(labels, [r["gbytes_per_s"] for r in rows])
        a.set_xlabel("GB/s of float32 input")
        a.set_title(f"quantization vs np.copyto, {rows[0]['elements']} elements")
        save("quantize", f)

    if fig["sizes"] or fig["workers"]:
        f, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
        rows = fig["sizes"]
        a.plot([r["elements"] for r in rows], [r["pps_per_worker"] for r in rows], "o-",
               label="per worker")  # fmt: skip
        a.set_xscale("log")
        a.set_xlabel(f"elements ({rows[0]['workers'] if rows else '-'} workers)")
        rows = fig["workers"]
        b.plot([r["workers"] for r in rows], [r["pps_per_worker"] for r in rows], "o-",
               label="per worker")  # fmt: skip
        b.plot([r["workers"] for r in rows], [r["pps_per_worker"] * r["workers"] for r in rows],
               "s--", label="all workers (into the switch)")  # fmt: skip
        b.set_xlabel(f"workers ({rows[0]['elements'] if rows else '-'} elements)")
        for ax in (a, b):
            ax.axhline(echo["pps"], color="gray", ls="--", label="UDP echo (1 worker)")
            ax.set_ylabel("packets/s sent")
            ax.set_yscale("log")
            ax.legend()
        f.suptitle("packets per second per worker")
        save("pps", f)
    return written


# ---------------------------------------------------------------------- main
def add_floors(row: dict[str, Any], n: int, m: int, k: int, slots: int) -> None:
    """The row's kernel floors, per datagram and over UDP GSO/GRO, and its ratios to them
    (floor / time: 1.0 is the kernel's speed)."""
    for name, gso in (("floor", False), ("gso_floor", True)):
        row[f"{name}_seconds"] = floor.kernel_floor(n, m, k, slots, gso, log=log)
        row[f"ratio_to_{name}"] = row[f"{name}_seconds"] / row["seconds"]


def print_runs(key: str, rows: list[dict[str, Any]]) -> None:
    """One table of timed all-reduces, varying ``key`` (elements or workers), next to the
    host kernel floor (the same packets through the C reflector; ratio = floor / time)."""
    print(f"{key:>10} {'ms':>9} {'Gb/s':>8} {'vs echo':>8} {'pkt/s/worker':>13} {'retx':>5} "
          f"{'floor ms':>9} {'vs floor':>8} {'gso floor':>9} {'vs gso':>7}")  # fmt: skip
    for r in rows:
        print(f"{r[key]:>10} {r['seconds'] * 1e3:>9.1f} {r['goodput_gbps']:>8.4f} "
              f"{r['ratio_to_echo']:>8.3f} {r['pps_per_worker']:>13,.0f} {r['retransmissions']:>5.0f} "
              f"{r['floor_seconds'] * 1e3:>9.1f} {r['ratio_to_floor']:>8.3f} "
              f"{r['gso_floor_seconds'] * 1e3:>9.1f} {r['ratio_to_gso_floor']:>7.3f}")  # fmt: skip


def groups(rows: list[dict[str, Any]]) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """Rows by (engine, K), in the order they were run."""
    out: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault((r["engine"], r["k"]), []).append(r)
    return out


def print_side_by_side(key: str, rows: list[dict[str, Any]], fixed: str) -> None:
    """ms per all-reduce, one column per (engine, K), and the kernel floor per K."""
    by = groups(rows)
    if len(by) < 2:
        return
    ks = sorted({k for _, k in by})
    cols = [f"{e} K={k}" for e, k in by] + [f"floor K={k}" for k in ks]
    print(f"\nms per all-reduce against {key} ({fixed}): engines and K side by side")
    print(f"{key:>10} " + " ".join(f"{c:>14}" for c in cols))
    for x in sorted({r[key] for r in rows}):
        cells = []
        for group in by.values():
            hit = [r for r in group if r[key] == x]
            cells.append(f"{hit[0]['seconds'] * 1e3:>14.1f}" if hit else f"{'-':>14}")
        for k in ks:
            hit = [r for r in rows if r[key] == x and r["k"] == k]
            cells.append(f"{hit[0]['floor_seconds'] * 1e3:>14.1f}" if hit else f"{'-':>14}")
        print(f"{x:>10} " + " ".join(cells))


def print_vs_gloo(rows: list[dict[str, Any]], workers: int) -> None:
    """ms per all-reduce of every (engine, K) next to gloo's and the two kernel floors (per
    datagram, UDP GSO/GRO), all measured in the same run: x gloo and x floor are time
    ratios (lower is better; x floor 1.0 is the kernel's speed)."""
    rows = [r for r in rows if "gloo_seconds" in r]
    if not rows:
        return
    print(f"\nms per all-reduce next to gloo (torch.distributed, {workers} processes) and the "
          "kernel floors, same run")  # fmt: skip
    print(f"{'elements':>10} {'engine':>8} {'K':>5} {'ms':>9} {'gloo ms':>9} {'x gloo':>8} "
          f"{'floor ms':>9} {'x floor':>8} {'gso floor':>9} {'x gso fl':>8}")  # fmt: skip
    for r in rows:
        print(f"{r['elements']:>10} {r['engine']:>8} {r['k']:>5} {r['seconds'] * 1e3:>9.1f} "
              f"{r['gloo_seconds'] * 1e3:>9.1f} {r['ratio_to_gloo']:>8.2f} "
              f"{r['floor_seconds'] * 1e3:>9.1f} {r['seconds'] / r['floor_seconds']:>8.2f} "
              f"{r['gso_floor_seconds'] * 1e3:>9.1f} "
              f"{r['seconds'] / r['gso_floor_seconds']:>8.2f}")  # fmt: skip


def run_dense_figures(
    args: argparse.Namespace, only: set[str], fig: dict[str, list[dict[str, Any]]],
    add_pps: Callable[[str, dict[str, Any], str], None], ports: int, k: int,
    engine: str | None, echo: dict[str, float], offload: str = "on",
) -> None:  # fmt: skip
    """The sizes and workers figures for one K on one engine of p4reduce-switch; ``offload``
    "off": the switch and the workers use per-datagram UDP I/O (P4REDUCE_UDP_OFFLOAD=0),
    labelled "ENGINE/dgram"."""
    label = (engine or "default") + ("/dgram" if offload == "off" else "")
    extra = ["--engine", engine] if engine else []
    with (
        floor.udp_offload_env(offload),
        LocalStack(ports, "dense", k=k, slots=args.slots, log=log, switch_args=extra) as stack,
    ):
        runner = Runner(stack, args.runner, args.timeout)
        if "sizes" in only:
            plan = [item(m, k=k, repeat=args.repeat) for m in args.sizes]
            lines = runner.run(args.workers, plan)
            for i, m in enumerate(args.sizes):
                s = summarize(lines, i)
                row = {"elements": m, "workers": args.workers, "k": k, "engine": label, **s,
                       "goodput_gbps": goodput(m, s["seconds"])}  # fmt: skip
                row["ratio_to_echo"] = row["goodput_gbps"] / echo["goodput_gbps"]
                add_floors(row, args.workers, m, k, args.slots)
                fig["sizes"].append(row)
                add_pps("sizes", row, f"M={m} K={k} {label}")
                log(f"sizes: M={m} K={k} {label}: {s['seconds'] * 1e3:.1f} ms, "
                    f"{row['goodput_gbps']:.4f} Gb/s")  # fmt: skip
        if "workers" in only:
            m = args.size_for_workers
            for n in args.worker_counts:
                lines = runner.run(n, [item(m, k=k, repeat=args.repeat)])
                s = summarize(lines, 0)
                row = {"workers": n, "elements": m, "k": k, "engine": label, **s,
                       "goodput_gbps": goodput(m, s["seconds"])}  # fmt: skip
                row["ratio_to_echo"] = row["goodput_gbps"] / echo["goodput_gbps"]
                add_floors(row, n, m, k, args.slots)
                fig["workers"].append(row)
                add_pps("workers", row, f"N={n} K={k} {label}")
                log(f"workers: N={n} K={k} {label}: {s['seconds'] * 1e3:.1f} ms, "
                    f"{row['goodput_gbps']:.4f} Gb/s")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=2, help="workers for sizes/density (2)")
    ap.add_argument("--sizes", type=ints, default=[1_000, 10_000, 100_000, 1_000_000],
                    help="tensor sizes, comma-separated (1000,10000,100000,1000000)")  # fmt: skip
    ap.add_argument("--size-for-workers", type=int, default=50_000,
                    help="tensor size of the workers figure (50000)")  # fmt: skip
    ap.add_argument("--worker-counts", type=ints, default=[1, 2, 4, 8, 16],
                    help="worker counts, comma-separated (1,2,4,8,16)")  # fmt: skip
    ap.add_argument("--density-elements", type=int, default=200_000,
                    help="tensor size of the density figure (200000)")  # fmt: skip
    ap.add_argument("--densities", type=floats, default=[0.01, 0.05, 0.2, 0.5, 1.0],
                    help="densities, comma-separated (0.01,0.05,0.2,0.5,1)")  # fmt: skip
    ap.add_argument("--repeat", type=int, default=3, help="timed calls per figure (3)")
    ap.add_argument("--slots", type=int, default=64, help="slots per job (64)")
    ap.add_argument("--k", type=ks_list, default=[64, 256, 1024],
                    help="K per build, comma-separated: sizes and workers run once per K, "
                    "printed side by side (64,256,1024; --quick: 64)")  # fmt: skip
    ap.add_argument("--engines", default=None,
                    help="p4reduce-switch engines, comma-separated (default: every one its "
                    "--engine offers; its default engine without that option)")  # fmt: skip
    ap.add_argument("--quant-elements", type=int, default=4 << 20,
                    help="array size of the quantize figure (4194304)")  # fmt: skip
    ap.add_argument("--echo-packets", type=int, default=20_000, help="UDP echo baseline (20000)")
    ap.add_argument("--runner", choices=("processes", "threads"), default="processes")
    ap.add_argument("--timeout", type=float, default=300.0, help="per plan item (300 s)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out", help="bench/out")
    ap.add_argument("--host-elements", type=int, default=1_000_000,
                    help="host figure: float32 elements per call (1000000)")  # fmt: skip
    ap.add_argument("--engine-ks", type=ks_list, default=[64, 256, 1024],
                    help="engines figure: K (64,256,1024)")  # fmt: skip
    ap.add_argument("--engine-workers", type=ints, default=[2, 4],
                    help="engines figure: worker counts (2,4)")  # fmt: skip
    ap.add_argument("--engine-sizes", type=ints, default=[1_000_000, 16_000_000],
                    help="engines figure: float32 elements (1000000,16000000)")  # fmt: skip
    ap.add_argument("--engine-max-seconds", type=float, default=600.0,
                    help="engines figure: rows estimated to run longer (warm-up + repeat "
                    "calls, from the same engine's smaller size) are skipped, with the "
                    "estimate printed (600)")  # fmt: skip
    ap.add_argument("--only", default="sizes,workers,density,quantize,host",
                    help="figures to run, comma-separated")  # fmt: skip
    ap.add_argument("--udp-offload", default="on", choices=("on", "off", "on,off", "off,on"),
                    help="UDP GSO/GRO in the switch and workers: on, off (per datagram, "
                    "rows labelled ENGINE/dgram) or both in one run (default on)")  # fmt: skip
    ap.add_argument("--no-gloo", action="store_true",
                    help="sizes figure: leave out gloo (torch.distributed) beside it")  # fmt: skip
    ap.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args(argv)
    if args.quick:  # smaller defaults; options given on the command line still win
        ap.set_defaults(
            sizes=[1_000, 10_000], size_for_workers=5_000, worker_counts=[1, 2],
            density_elements=20_000, densities=[0.05, 1.0],
            repeat=1, quant_elements=1 << 18, echo_packets=2_000, k=[64], host_elements=100_000,
            engine_ks=[64], engine_workers=[2], engine_sizes=[100_000], no_gloo=True,
        )  # fmt: skip
        args = ap.parse_args(argv)
    only = set(args.only.split(","))
    args.out.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()

    ks, k0 = args.k, args.k[0]  # density and quantize figures use the first K
    sw_engines = floor.switch_engines() if args.engines is None else args.engines.split(",")
    echoes = {k: udp_echo(k, args.slots, args.echo_packets) for k in ks}
    echo = echoes[k0]
    for k, e in echoes.items():
        log(f"UDP echo baseline, K = {k}: {e['pps']:,.0f} packets/s, {e['goodput_gbps']:.3f} Gb/s")
    fig: dict[str, list[dict[str, Any]]] = {
        "sizes": [], "workers": [], "density": [], "quantize": [], "pps": [],
        "host": [], "engines": [],
    }  # fmt: skip

    def add_pps(figure: str, row: dict[str, Any], label: str) -> None:
        fig["pps"].append(
            {
                "figure": figure,
                "run": label,
                "workers": row["workers"],
                "elements": row["elements"],
                "pps_per_worker": row["pps_per_worker"],
                "echo_pps": echo["pps"],
                "ratio_to_echo": row["pps_per_worker"] / echo["pps"],
            }  # fmt: skip
        )

    if only & {"sizes", "workers"}:
        ports = max([args.workers] + (args.worker_counts if "workers" in only else []))
        for engine in sw_engines:
            for k in ks:
                for offload in args.udp_offload.split(","):
                    run_dense_figures(
                        args, only, fig, add_pps, ports, k, engine, echoes[k], offload
                    )

    # gloo beside the sizes figure, same run, same worker count (skipped without torch)
    gloo_sizes: dict[int, float] = {}
    if "sizes" in only and fig["sizes"] and not args.no_gloo:
        try:
            for m in args.sizes:
                gloo_sizes[m] = engines.gloo_run(args.workers, m, args.repeat)["seconds"]
                log(f"gloo: M={m}, {args.workers} workers: {gloo_sizes[m] * 1e3:.1f} ms")
        except (ImportError, RuntimeError, OSError) as e:
            log(f"gloo not measured: {e}")
        for r in fig["sizes"]:
            if r["elements"] in gloo_sizes:
                r["gloo_seconds"] = gloo_sizes[r["elements"]]
                r["ratio_to_gloo"] = r["seconds"] / r["gloo_seconds"]

    if "density" in only:
        m, n = args.density_elements, args.workers
        with LocalStack(n, "sparse", k=k0, slots=args.slots, log=log) as stack:
            runner = Runner(stack, args.runner, args.timeout)
            plan = []
            for d in args.densities:
                plan.append(item(m, mode="sparse", density=d, k=k0, repeat=args.repeat))
                plan.append(item(m, mode="dense", density=d, k=k0, repeat=args.repeat))
            lines = runner.run(n, plan)
            for j, d in enumerate(args.densities):
                sp, de = summarize(lines, 2 * j), summarize(lines, 2 * j + 1)
                row = {
                    "density": d, "elements": m, "workers": n,
                    "sparse_seconds": sp["seconds"], "dense_seconds": de["seconds"],
                    "speedup": de["seconds"] / sp["seconds"],
                    "sparse_packets_per_worker": sp["packets_per_worker"],
                    "dense_packets_per_worker": de["packets_per_worker"],
                    "pps_per_worker": sp["pps_per_worker"],
                }  # fmt: skip
                fig["density"].append(row)
                add_pps("density", row, f"sparse D={d:g}")
                log(
                    f"density {d:g}: sparse {sp['seconds'] * 1e3:.1f} ms, dense {de['seconds'] * 1e3:.1f} ms"
                )

    if "quantize" in only:
        fig["quantize"] = quantize_rows(args.quant_elements, k0, 5 if args.quick else 15)

    if "host" in only:
        for gso in [False, True] if floor.gso_available() else [False]:
            fig["host"] += engines.host_rows(args.host_elements, args.k, args.slots,
                                             1 if args.quick else 5, gso)  # fmt: skip
    if "engines" in only:
        fig["engines"] = engines.engine_rows(
            args.engine_ks,
            args.engine_workers,
            args.engine_sizes,
            args.slots,
            args.repeat,
            log,
            args.engine_max_seconds,
        )

    for name, rows in fig.items():
        write_csv(args.out / f"{name}.csv", rows)
    write_csv(
        args.out / "baseline.csv",
        [{"what": "udp_echo", "k": k, "window": args.slots, **e} for k, e in echoes.items()],
    )
    pngs = plots(args.out, fig, echo)
    total = time.perf_counter() - t_start

    if args.json:
        print(
            json.dumps({"runner": args.runner, "udp_echo": echo, **fig, "seconds": total}, indent=1)
        )
        return 0
    print(f"all-reduce on the embedded switch (workers as {args.runner}); "
          f"UDP echo baseline {echo['pps']:,.0f} packets/s, {echo['goodput_gbps']:.4f} Gb/s")  # fmt: skip
    for (engine, k), rows in groups(fig["sizes"]).items():
        print(f"\ntime and goodput against size ({args.workers} workers, dense float32, "
              f"K = {k}, engine {engine})")  # fmt: skip
        print_runs("elements", rows)
    for (engine, k), rows in groups(fig["workers"]).items():
        print(f"\ntime and goodput against workers ({args.size_for_workers} elements, "
              f"K = {k}, engine {engine})")  # fmt: skip
        print_runs("workers", rows)
    print_side_by_side("elements", fig["sizes"], f"{args.workers} workers")
    print_vs_gloo(fig["sizes"], args.workers)
    print_side_by_side("workers", fig["workers"], f"{args.size_for_workers} elements")
    if fig["density"]:
        print(
            f"\nsparse against density ({args.density_elements} elements, {args.workers} workers)"
        )
        print(
            f"{'density':>10} {'sparse ms':>10} {'dense ms':>9} {'speedup':>8} {'sparse pkts':>12} {'dense pkts':>11}"
        )
        for r in fig["density"]:
            print(f"{r['density']:>10g} {r['sparse_seconds'] * 1e3:>10.1f} {r['dense_seconds'] * 1e3:>9.1f} "
                  f"{r['speedup']:>8.2f} {r['sparse_packets_per_worker']:>12.0f} {r['dense_packets_per_worker']:>11.0f}")  # fmt: skip
    if fig["quantize"]:
        print(
            f"\nquantization ({args.quant_elements} float32 elements, K = {k0}; target: "
            f"quantize+dequantize in place (the protocol dequantizes in place) >= 0.5)"
        )
        for r in fig["quantize"]:
            print(f"  n={r['n']} {r['what']:<40} {r['seconds'] * 1e3:8.2f} ms "
                  f"{r['gbytes_per_s']:7.2f} GB/s  ratio to np.copyto {r['ratio_to_copyto']:.2f}")  # fmt: skip
    if fig["host"]:
        engines.print_host(fig["host"])
    if fig["engines"]:
        engines.print_engines(fig["engines"])
    print(f"\nwrote {len(pngs)} plots and CSVs to {args.out} ({total:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
