"""Aggregation data-plane speed: the p4src programs on the embedded switch, in process.

For the dense program at K = 64 and K = 256 and the sparse program at K = 64, one job of N
workers streams blocks into S slots (each slot used in alternating sets, as workers do); every
N-th packet completes a slot and is multicast to the N workers. Printed per program:
aggregation packets/s (worker packets in), elements aggregated/s (packets x K) and results/s,
next to the bare forwarding rate of the same program measured in the same run (an ordinary
UDP frame of the same size forwarded by the L2 table). The ratio is what compares across
machines.

    python bench/dataplane.py [--packets N] [--repeat R] [--workers N] [--json]
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import statistics
import struct
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from p4reduce.switch.frontend.compiler import CompileOptions
from p4reduce.switch.interp.load import load_pipeline
from p4reduce.switch.interp.matches import Exact
from p4reduce.switch.native.select import make_switch
from p4reduce.switch.ports.ipudp import Endpoints, build_frame

from p4reduce import contracts

ROOT = Path(__file__).resolve().parent.parent
SWITCH_IP, SWITCH_MAC = "10.0.0.254", 0x0200000000FE
AGG_PORT = contracts.AGG_PORT  # the programs' default (p4reduce/contracts/spec.py)
JOB_ID, JOB_INDEX, SLOTS = 7, 1, 512
JOB_KEY = 0x5EC2E7AB  # docs/protocol.md, "Job keys"
MSG = {"dense": 1, "sparse": 2}


def ip(text: str) -> int:
    return int(ipaddress.IPv4Address(text))


def worker_ip(rank: int) -> str:
    return f"10.0.1.{rank + 1}"


def frame(
    src_mac: int, dst_mac: int, src: str, dst: str, sport: int, dport: int, payload: bytes
) -> bytes:
    ends = Endpoints(dst_mac.to_bytes(6, "big"), src_mac.to_bytes(6, "big"), src, dst, sport, dport)
    return build_frame(payload, ends, ip_id=0)


def agg_packet(kind: str, k: int, rank: int, slot: int, set_: int, block: int) -> bytes:
    header = struct.pack(
        "!BBHHBBIIII",
        MSG[kind] << 4,
        rank,
        JOB_ID,
        (set_ << 15) | slot,
        130,
        0,
        1,
        block,
        block + SLOTS,
        JOB_KEY,
    )
    payload = struct.pack(f"!{k}i", *range(rank, rank + k))
    return frame(
        0x020000000100 + rank,
        SWITCH_MAC,
        worker_ip(rank),
        SWITCH_IP,
        5000 + rank,
        AGG_PORT,
        header + payload,
    )


def setup(kind: str, k: int, workers: int, engine: str = "python") -> Any:
    options = CompileOptions(include_dirs=[ROOT / "p4src" / "include"], defines={"K": str(k)})
    sw = make_switch(load_pipeline(ROOT / "p4src" / f"{kind}.p4", options), engine)
    t = sw.pipeline.tables
    t["SwitchIngress.local_address.switch_ipv4"].add_entry(
        [Exact(ip(SWITCH_IP))], "SwitchIngress.local_address.is_switch", [SWITCH_MAC]
    )
    mgid = 256 + JOB_INDEX
    sw.pre.mgrp_create(mgid)
    for r in range(workers):
        t["SwitchIngress.admission.workers"].add_entry(
            [Exact(JOB_ID), Exact(ip(worker_ip(r))), Exact(5000 + r)],
            "SwitchIngress.admission.admit",
            [JOB_INDEX, r, workers, 1 << r, 0, SLOTS, mgid, JOB_KEY],
        )
        t["SwitchEgress.replica.replicas"].add_entry(
            [Exact(JOB_INDEX), Exact(r)],
            "SwitchEgress.replica.to_worker",
            [0x020000000100 + r, ip(worker_ip(r)), 5000 + r],
        )
        sw.pre.node_associate(mgid, sw.pre.node_create(r, [r + 1]))
        t["SwitchIngress.forwarding.l2_forward"].add_entry(
            [Exact(0x020000000100 + r)], "SwitchIngress.forwarding.to_port", [r + 1]
        )
    return sw


def aggregation_stream(kind: str, k: int, workers: int, packets: int) -> list[tuple[int, bytes]]:
    """``packets`` worker packets: slots in order, each use in the other set, ranks in order."""
    out = []
    use = 0
    while len(out) < packets:
        slot, set_ = use % SLOTS, (use // SLOTS) % 2
        for r in range(workers):
            out.append((r + 1, agg_packet(kind, k, r, slot, set_, use)))
        use += 1
    return out[: packets - packets % workers]


def timed(fn: Callable[[], int], repeat: int) -> tuple[float, int]:
    """Median seconds over ``repeat`` runs, and what the last run returned. The median CPU
    seconds of the same runs go to CPU[fn.__name__]: on a loaded machine the wall clock
    counts other processes' time too, the CPU time of this single-threaded loop does not."""
    times, cpu, last = [], [], 0
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        last = fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    CPU[fn.__name__] = statistics.median(cpu)
    return statistics.median(times), last


CPU: dict[str, float] = {}


def measure(kind: str, k: int, workers: int, packets: int, repeat: int) -> dict[str, object]:
    sw = setup(kind, k, workers)
    stream = aggregation_stream(kind, k, workers, packets)
    process = sw.process

    def aggregate() -> int:
        results = 0
        for port, data in stream:
            results += len(process(port, data))
        return results

    # Ordinary traffic of the same size, host 0 -> host 1 through the L2 table.
    plain = frame(
        0x020000000100, 0x020000000101, worker_ip(0), worker_ip(1), 5000, 6000, stream[0][1][42:]
    )

    def forward() -> int:
        sent = 0
        for _ in range(len(stream)):
            sent += len(process(1, plain))
        return sent

    agg_s, results = timed(aggregate, repeat)
    fwd_s, forwarded = timed(forward, repeat)
    n = len(stream)
    expected = (n // workers) * workers
    if results != expected or forwarded != n:
        raise SystemExit(
            f"{kind} K={k}: {results} results (expected {expected}), "
            f"{forwarded} forwarded (expected {n}): the setup is broken"
        )
    agg_pps, fwd_pps = n / agg_s, n / fwd_s
    return {
        "program": kind,
        "k": k,
        "workers": workers,
        "packets": n,
        "aggregation_pps": round(agg_pps),
        "elements_per_s": round(agg_pps * k),
        "results_per_s": round(results / agg_s),
        "forwarding_pps": round(fwd_pps),
        "ratio_to_forwarding": round(agg_pps / fwd_pps, 4),
        **measure_native(kind, k, workers, stream, repeat, agg_pps, CPU["aggregate"]),
    }


def measure_native(
    kind: str,
    k: int,
    workers: int,
    stream: list[tuple[int, bytes]],
    repeat: int,
    py_pps: float,
    py_cpu: float,
) -> dict[str, object]:
    """The same stream on the native engine: one call per packet, and the native batch API
    (``process_batch``: the whole stream in one call into C, switch/native/_batch.c)."""
    sw = setup(kind, k, workers, "native")
    if sw.engine != "native":
        return {"native": "not available"}
    n = len(stream)
    expected = (n // workers) * workers
    process = sw.process

    def one_by_one() -> int:
        return sum(len(process(port, data)) for port, data in stream)

    def batch() -> int:
        return len(sw.process_batch(stream))

    one_s, r1 = timed(one_by_one, repeat)
    batch_s, r2 = timed(batch, repeat)
    if r1 != expected or r2 != expected:
        raise SystemExit(f"{kind} K={k}: native engine sent {r1}/{r2} results, expected {expected}")
    return {
        "native_pps": round(n / one_s),
        "native_batch_pps": round(n / batch_s),
        "native_ratio_to_python": round(n / batch_s / py_pps, 1),
        "native_cpu_ratio_to_python": round(py_cpu / max(CPU["batch"], 1e-9), 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--packets", type=int, default=8000, help="worker packets per run (default 8000)"
    )
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure; the median is kept")
    ap.add_argument("--workers", type=int, default=4, help="workers in the job (default 4)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args(argv)
    if not 1 <= args.workers <= 32:
        ap.error("--workers must be 1..32")
    rows = []
    for kind, k in (("dense", 64), ("dense", 256), ("sparse", 64)):
        packets = args.packets if k == 64 else max(args.workers, args.packets // 4)
        rows.append(measure(kind, k, args.workers, packets, args.repeat))
        if not args.json:
            print(f"  measured {kind} K={k}", file=sys.stderr)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(
        f"{'program':<8} {'K':>4} {'agg packets/s':>14} {'elements/s':>12} "
        f"{'results/s':>10} {'forwarding/s':>13} {'ratio':>7}"
        f" {'native/s':>10} {'native batch/s':>15} {'native/python':>14} {'(CPU time)':>10}"
    )
    for r in rows:
        native = (
            f" {r['native_pps']:>10,} {r['native_batch_pps']:>15,} "
            f"{r['native_ratio_to_python']:>13.1f}x {r['native_cpu_ratio_to_python']:>9.1f}x"
            if "native_pps" in r
            else "  native engine not available"
        )
        print(
            f"{r['program']:<8} {r['k']:>4} {r['aggregation_pps']:>14,} {r['elements_per_s']:>12,} "
            f"{r['results_per_s']:>10,} {r['forwarding_pps']:>13,} {r['ratio_to_forwarding']:>7.3f}"
            + native
        )
    print(
        "(python columns: the interpreter, one process() call per packet; native/s: the native"
        " engine, one call per packet; native batch/s: the native batch API, process_batch"
        " over the whole stream in one call into C; native/python: batch over the interpreter,"
        " packets/s of the same run, and the same ratio in CPU seconds of this process, which"
        " other processes' load does not inflate)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
