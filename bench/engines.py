"""The host's protocol engines side by side, for bench/allreduce.py (``--only host,engines``).

- ``host``: one worker against the C reflector (bench/c/reflector.c ``serve`` with one
  peer: it answers each packet at once, marked as a result, as a one-worker switch),
  native and Python engine: packets per second (sent + received) and the worker's CPU
  time per packet, as a ratio to the kernel floor measured in the same run: the C client
  (reflector.c ``client``) sending the same number of packets of the same size, the same
  window in flight, through the same reflector with sendmmsg/recvmmsg batches and no
  protocol work.
- ``engines``: time and worker CPU per all-reduce on the local stack (embedded switch),
  dense float32, for each K, worker count and size, native and Python engine, next to
  gloo (torch.distributed, the same number of processes on this machine) in the same run.
  The software switch is the bottleneck of the switch figures (docs/host.md).
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import floor
import numpy as np
from p4reduce.host import AllreduceSession, UdpTransport, run_call
from p4reduce.host.protocol import Done, Session
from p4reduce.testbed.local import LocalStack, StackError

ROOT = Path(__file__).resolve().parents[1]
ENGINES = ("native", "python")
# the host figure's: "native baseline" is the native engine with the baseline (non-AVX2)
# copy of its lane loops (host/_engine/lanes.c, use_avx2), to show what AVX2 gives
HOST_ENGINES = ("native", "native baseline", "python")


def lanes(avx2: bool) -> bool:
    """Pick the copy of the native core's lane loops; returns whether AVX2 runs."""
    from p4reduce.host.protocol import native

    return bool(native._C.use_avx2(avx2)) if native.available() else False


def host_rows(
    m: int, ks: list[int], slots: int, reps: int, gso: bool = False
) -> list[dict[str, Any]]:
    """Packets/s and CPU per packet of one worker against the C reflector, per engine, and
    the kernel floor: bench/c/reflector.c's batched C client pushing the same number of
    packets of the same size with the same window through the same reflector. The runs of
    the floor and of the engines alternate, best of ``reps`` each (the machine's load
    drifts; the best run is the one least disturbed by it). ``gso``: the reflector, the C
    client and the native engines on UDP GSO/GRO (the Python engine is left out: it has no
    offload), rows marked ``offload``."""
    rows = []
    socks = floor.worker_sockets(1)
    x = np.random.default_rng(0).standard_normal(m).astype(np.float32)
    engines = [e for e in HOST_ENGINES if not (gso and e == "python")]
    try:
        with (
            floor.udp_offload_env("on" if gso else "off"),
            floor.reflector([s.getsockname() for s in socks], gso=gso) as addr,
        ):
            for k in ks:
                best: dict[str, tuple[float, float, int]] = {}
                runs: dict[str, Any] = {}
                for engine in engines:
                    ses = Session(rank=0, n=1, job_id=1, job_key=1, slots=slots, k=k,
                                  engine=engine.split()[0])  # fmt: skip
                    t = UdpTransport(addr, sock=socks[0].dup())
                    run_call(ses.allreduce(x[: 50 * k * slots]), t)  # warm up
                    runs[engine] = (ses, t)
                packets = floor.dense_packets(1, 1, slots, k)
                # the call's packets without retransmissions: every block and one priming
                # packet per slot in use
                blocks = -(-m // k)
                rounds = blocks + min(slots, blocks)
                try:
                    for _ in range(reps):
                        for engine in engines:
                            ses, t = runs[engine]
                            lanes(engine != "native baseline")
                            c0, t0 = time.process_time(), time.perf_counter()
                            try:
                                end = run_call(ses.allreduce(x), t)
                            finally:
                                lanes(True)
                            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                            assert isinstance(end, Done), end
                            st = end.stats
                            pkts = st.packets_sent + st.packets_received
                            if engine not in best or wall < best[engine][0]:
                                best[engine] = (wall, cpu, pkts)
                        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
                        c0 = ru.ru_utime + ru.ru_stime
                        r = floor.run_client(addr, socks, packets, rounds, slots, gso=gso)
                        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
                        cpu = ru.ru_utime + ru.ru_stime - c0  # the client process's CPU
                        pkts = int(r["packets_in"] + r["results"])
                        if "C client" not in best or r["seconds"] < best["C client"][0]:
                            best["C client"] = (r["seconds"], cpu, pkts)
                finally:
                    for _, t in runs.values():
                        t.close()
                c_pps = best["C client"][2] / best["C client"][0]
                c_cpu = best["C client"][1] / best["C client"][2]
                for engine, (wall, cpu, pkts) in best.items():
                    rows.append({
                        "k": k, "engine": engine, "offload": "gso" if gso else "-",
                        "elements": m, "slots": slots,
                        "pps": pkts / wall, "cpu_us_per_packet": cpu / pkts * 1e6,
                        "seconds": wall, "cpu_seconds": cpu, "floor_pps": c_pps,
                        "ratio_to_floor": pkts / wall / c_pps,
                        "cpu_ratio_to_floor": c_cpu / (cpu / pkts),
                    })  # fmt: skip
    finally:
        for s in socks:
            s.close()
    return rows


def _switch_run(
    stack: LocalStack, job: int, n: int, m: int, engine: str, repeat: int
) -> dict[str, float]:
    """n worker threads of this process, one all-reduce of m float32 per call."""
    sessions: list[AllreduceSession | None] = [None] * n
    times: list[list[float]] = [[] for _ in range(n)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(n)

    def work(r: int) -> None:
        try:
            s = AllreduceSession.join(
                stack.url, job, r, n, sock=stack.sockets[r].dup(), switch_port=r + 1,
                engine=engine, timeout=120, secret=f"p4reduce-bench-secret-of-job-{job}",
            )  # fmt: skip
            sessions[r] = s
            x = np.random.default_rng(r).standard_normal(m).astype(np.float32)
            out = np.empty_like(x)
            s.allreduce(x, out=out)  # warm up
            for _ in range(repeat):
                barrier.wait()
                t0 = time.perf_counter()
                s.allreduce(x, out=out)
                times[r].append(time.perf_counter() - t0)
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)
            barrier.abort()

    threads = [threading.Thread(target=work, args=(r,)) for r in range(n)]
    c0 = time.process_time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    cpu = time.process_time() - c0
    for s in sessions:
        if s is not None:
            s.close()
    if errors:
        raise errors[0]
    per_call = [max(times[r][i] for r in range(n)) for i in range(repeat)]
    # CPU of all n workers (this process) over warm-up + repeat calls, per call
    return {"seconds": statistics.median(per_call), "cpu_seconds": cpu / (repeat + 1)}


_GLOO = """
import json, os, sys, time
import torch, torch.distributed as dist
rank, n, m, repeat, store = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
torch.set_num_threads(1)
dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=n)
x = torch.randn(m)
dist.all_reduce(x.clone())
ts = []
c0 = time.process_time()
for _ in range(repeat):
    y = x.clone()
    dist.barrier()
    t0 = time.perf_counter()
    dist.all_reduce(y)
    ts.append(time.perf_counter() - t0)
print(json.dumps({"times": ts, "cpu": (time.process_time() - c0) / repeat}), flush=True)
dist.destroy_process_group()
"""


def gloo_run(n: int, m: int, repeat: int) -> dict[str, float]:
    """torch.distributed's gloo all_reduce of m float32 by n processes on this machine."""
    with tempfile.TemporaryDirectory() as d:
        store = os.path.join(d, "store")
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _GLOO, str(r), str(n), str(m), str(repeat), store],
                stdout=subprocess.PIPE,
                text=True,
                stdin=subprocess.DEVNULL,
                env=os.environ | {"OMP_NUM_THREADS": "1"},
            )  # fmt: skip
            for r in range(n)
        ]
        outs = []
        for p in procs:
            out, _ = p.communicate(timeout=600)
            if p.returncode != 0:
                raise RuntimeError(f"gloo rank exited {p.returncode}")
            outs.append(json.loads(out.strip().splitlines()[-1]))
    per_call = [max(o["times"][i] for o in outs) for i in range(repeat)]
    return {"seconds": statistics.median(per_call), "cpu_seconds": sum(o["cpu"] for o in outs)}


def engine_rows(
    ks: list[int], workers: list[int], sizes: list[int], slots: int, repeat: int, log: Any,
    max_seconds: float = float("inf"),
) -> list[dict[str, Any]]:  # fmt: skip
    """One row per (K, workers, size, engine), next to gloo's time for the same workers and
    size. A row whose estimated run time (the same engine's row of the next smaller size,
    scaled by the size, for the warm-up and ``repeat`` calls) exceeds ``max_seconds`` is
    not run: its row says so (``skipped``)."""
    rows: list[dict[str, Any]] = []
    gloo: dict[tuple[int, int], dict[str, float]] = {}
    sizes = sorted(sizes)
    for n in workers:
        for m in sizes:
            gloo[n, m] = gloo_run(n, m, repeat)
            log(f"gloo n={n} M={m}: {gloo[n, m]['seconds'] * 1e3:.1f} ms")
    for k in ks:
        try:
            rows.extend(_engine_rows_k(k, workers, sizes, slots, repeat, log, max_seconds, gloo))
        except StackError as err:  # e.g. the switch's engine compiling too slowly: say so
            why = f"the local stack did not start: {' '.join(str(err).split())}"
            log(f"switch K={k}: {why}")
            rows.extend(
                {
                    "k": k,
                    "workers": n,
                    "elements": m,
                    "engine": engine,
                    "seconds": float("nan"),
                    "cpu_seconds": float("nan"),
                    "gloo_seconds": gloo[n, m]["seconds"],
                    "gloo_cpu_seconds": gloo[n, m]["cpu_seconds"],
                    "time_ratio_to_gloo": float("nan"),
                    "skipped": why,
                }  # fmt: skip
                for n in workers
                for m in sizes
                for engine in ENGINES
            )
    return rows


def _engine_rows_k(
    k: int, workers: list[int], sizes: list[int], slots: int, repeat: int, log: Any,
    max_seconds: float, gloo: dict[tuple[int, int], dict[str, float]],
) -> list[dict[str, Any]]:  # fmt: skip
    rows: list[dict[str, Any]] = []
    with LocalStack(max(workers), "dense", k=k, slots=slots, log=log,
                    start_timeout=180) as stack:  # fmt: skip
        # A fresh switch's first calls are slow (seconds, with retransmissions): one
        # discarded run first, so neither engine's figure takes that hit.
        _switch_run(stack, 1, min(workers), min(sizes), "python", 2)
        job = 2
        for n in workers:
            done: dict[str, tuple[int, float]] = {}  # engine: (size, seconds) of its last row
            for m in sizes:
                for engine in ENGINES:
                    g = gloo[n, m]
                    row: dict[str, Any] = {
                        "k": k, "workers": n, "elements": m, "engine": engine,
                        "seconds": float("nan"), "cpu_seconds": float("nan"),
                        "gloo_seconds": g["seconds"], "gloo_cpu_seconds": g["cpu_seconds"],
                        "time_ratio_to_gloo": float("nan"), "skipped": "",
                    }  # fmt: skip
                    if engine in done:
                        m0, t0 = done[engine]
                        est = t0 * m / m0 * (repeat + 1)
                        if est > max_seconds:
                            row["skipped"] = (
                                f"estimated {est:.0f} s (from {m0} elements: "
                                f"{t0:.2f} s per call) > --engine-max-seconds {max_seconds:g}"
                            )
                            rows.append(row)
                            log(f"switch K={k} n={n} M={m} {engine}: {row['skipped']}")
                            continue
                    r = _switch_run(stack, job, n, m, engine, repeat)
                    job += 1
                    done[engine] = (m, r["seconds"])
                    row.update(seconds=r["seconds"], cpu_seconds=r["cpu_seconds"],
                               time_ratio_to_gloo=r["seconds"] / g["seconds"])  # fmt: skip
                    rows.append(row)
                    log(f"switch K={k} n={n} M={m} {engine}: {r['seconds'] * 1e3:.1f} ms, "
                        f"CPU {r['cpu_seconds'] * 1e3:.1f} ms")  # fmt: skip
    return rows


def print_host(rows: list[dict[str, Any]]) -> None:
    print("\nhost side: one worker against the C reflector (dense float32, "
          f"{rows[0]['elements']} elements, {rows[0]['slots']} slots in flight); floor: "
          "the C client sending and receiving the same packets with sendmmsg/recvmmsg "
          "(target: native >= 0.8 of it); ratios: packets/s and packets per CPU second "
          "over the C client's; offload gso: the worker, the client and the reflector on UDP "
          "GSO/GRO")  # fmt: skip
    print(f"{'K':>5} {'engine':>15} {'offload':>7} {'packets/s':>11} {'CPU us/pkt':>11} "
          f"{'ratio to C client':>18} {'CPU ratio':>10}")  # fmt: skip
    for r in rows:
        print(f"{r['k']:>5} {r['engine']:>15} {r['offload']:>7} {r['pps']:>11,.0f} "
              f"{r['cpu_us_per_packet']:>11.2f} {r['ratio_to_floor']:>18.2f} "
              f"{r['cpu_ratio_to_floor']:>10.2f}")  # fmt: skip


def print_engines(rows: list[dict[str, Any]]) -> None:
    print("\ntime and worker CPU per all-reduce, dense float32, embedded switch (the native "
          "switch engine unless p4reduce-switch lacks it), next to gloo in the same run")  # fmt: skip
    print(f"{'K':>5} {'n':>3} {'elements':>10} {'engine':>7} {'ms':>9} {'CPU ms':>8} "
          f"{'gloo ms':>8} {'gloo CPU':>9} {'x gloo':>7}")  # fmt: skip
    for r in rows:
        head = f"{r['k']:>5} {r['workers']:>3} {r['elements']:>10} {r['engine']:>7} "
        gloo = f"{r['gloo_seconds'] * 1e3:>8.1f} {r['gloo_cpu_seconds'] * 1e3:>9.1f}"
        if r["skipped"]:
            print(f"{head}{'-':>9} {'-':>8} {gloo}   skipped: {r['skipped']}")
            continue
        print(f"{head}{r['seconds'] * 1e3:>9.1f} {r['cpu_seconds'] * 1e3:>8.1f} {gloo} "
              f"{r['time_ratio_to_gloo']:>7.1f}")  # fmt: skip
