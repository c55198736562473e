"""Several native driver threads per call (``threads=``, docs/host.md, "Several driver
threads"): the same all-reduce with threads = 1, 2, 4 in the same run, the thread counts
interleaved call by call so that the machine's load falls on each alike; each figure is
the median of ``--repeat`` calls and its ratio to threads = 1's (speed-up = t1 / tT).

- ``switch`` (the default): ``--workers`` worker threads of this process, each an
  ``AllreduceSession`` with that many driver threads, all-reducing ``--elements`` float32
  through the local stack's embedded switch (``p4reduce-switch --engine native``), dense,
  one stack per K. The CPU column is this process's (every worker and driver thread; not
  the switch process's) per call; retx/call: retransmissions per call, all ranks.
- ``reflector``: one worker against the C reflector (bench/c/reflector.c, one peer: the
  host side alone, the kernel's and the reflector's costs around it).

    python bench/host_threads.py [--target switch|reflector|both] [--elements 1000000]
        [--k 64,256,1024] [--threads 1,2,4] [--workers 2] [--slots 64] [--repeat 5]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from p4reduce.host import AllreduceSession, UdpTransport, run_call
from p4reduce.host.protocol import Done, Session
from p4reduce.testbed.local import LocalStack, StackError

sys.path.insert(0, str(Path(__file__).parent))
import floor  # noqa: E402 - bench/floor.py, next to this file


def ints(text: str) -> list[int]:
    return [int(float(x)) for x in text.split(",") if x]


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    c0, t0 = time.process_time(), time.perf_counter()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def interleaved(
    threads: list[int], repeat: int, call: Callable[[int], int]
) -> dict[int, tuple[float, float, float]]:
    """call(T) (returns its retransmissions) once per thread count per round, ``repeat``
    rounds; per T the median wall and CPU seconds and the mean retransmissions."""
    walls: dict[int, list[float]] = {t: [] for t in threads}
    cpus: dict[int, list[float]] = {t: [] for t in threads}
    retx: dict[int, list[int]] = {t: [] for t in threads}
    for _ in range(repeat):
        for t in threads:
            out: list[int] = []
            wall, cpu = timed(lambda t=t, out=out: out.append(call(t)))
            walls[t].append(wall)
            cpus[t].append(cpu)
            retx[t] += out
    return {
        t: (statistics.median(walls[t]), statistics.median(cpus[t]), statistics.mean(retx[t]))
        for t in threads
    }


def switch_rows(args: argparse.Namespace, k: int) -> dict[int, tuple[float, float, float]]:
    n = args.workers
    xs = [np.random.default_rng(r).standard_normal(args.elements).astype(np.float32)
          for r in range(n)]  # fmt: skip
    outs = [np.empty_like(x) for x in xs]
    with (
        LocalStack(
            n, "dense", k=k, slots=args.slots, start_timeout=300, switch_args=["--engine", "native"]
        ) as stack,  # fmt: skip
        concurrent.futures.ThreadPoolExecutor(n) as ex,
    ):
        sessions: dict[int, list[AllreduceSession]] = {}
        for job, t in enumerate(args.threads, start=1):
            secret = f"p4reduce-bench-secret-of-job-{job}"
            futs = [
                ex.submit(
                    AllreduceSession.join,
                    stack.url,
                    job,
                    r,
                    n,
                    sock=stack.sockets[r].dup(),
                    switch_port=r + 1,
                    timeout=120,
                    secret=secret,
                    threads=t,
                )  # fmt: skip
                for r in range(n)
            ]
            sessions[t] = [f.result() for f in futs]
        try:

            def call(t: int) -> int:
                futs = [ex.submit(s.allreduce, xs[r], out=outs[r])
                        for r, s in enumerate(sessions[t])]  # fmt: skip
                for f in futs:
                    f.result()
                return sum(s.last_stats.retransmissions for s in sessions[t])

            for t in args.threads:  # warm up: a fresh switch's first calls are slow
                call(t)
            want = np.sum(xs, axis=0, dtype=np.float64)
            assert np.allclose(outs[0], want, rtol=1e-4, atol=1e-3), "a wrong sum"
            return interleaved(args.threads, args.repeat, call)
        finally:
            for group in sessions.values():
                for s in group:
                    s.close()


def reflector_rows(args: argparse.Namespace, k: int) -> dict[int, tuple[float, float, float]]:
    x = np.random.default_rng(0).standard_normal(args.elements).astype(np.float32)
    (sock,) = floor.worker_sockets(1)
    try:
        with floor.reflector([sock.getsockname()]) as addr, \
                UdpTransport(addr, sock=sock.dup()) as tr:  # fmt: skip
            sessions = {t: Session(rank=0, n=1, job_id=1, job_key=1, slots=args.slots, k=k,
                                   engine="native", threads=t) for t in args.threads}  # fmt: skip

            def call(t: int) -> int:
                end = run_call(sessions[t].allreduce(x), tr)
                if not isinstance(end, Done):
                    raise RuntimeError(f"threads={t}: {end}")
                return end.stats.retransmissions

            for t in args.threads:
                call(t)
            return interleaved(args.threads, args.repeat, call)
    finally:
        sock.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", choices=("switch", "reflector", "both"), default="switch")
    ap.add_argument("--elements", type=int, default=1_000_000, help="float32 elements (1000000)")
    ap.add_argument("--k", type=ints, default=[64, 256, 1024], help="K (64,256,1024)")
    ap.add_argument("--threads", type=ints, default=[1, 2, 4], help="thread counts (1,2,4)")
    ap.add_argument("--workers", type=int, default=2, help="switch: workers (2)")
    ap.add_argument("--slots", type=int, default=64, help="slots per job (64)")
    ap.add_argument("--repeat", type=int, default=5, help="timed calls per figure (5)")
    args = ap.parse_args(argv)
    if args.threads[0] != 1:
        args.threads.insert(0, 1)  # the baseline
    targets = ["switch", "reflector"] if args.target == "both" else [args.target]
    load = os.getloadavg()
    print(f"{os.cpu_count()} CPUs, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; "
          f"M = {args.elements} float32, {args.slots} slots, median of {args.repeat} calls")  # fmt: skip
    print(f"{'target':>10} {'K':>5} {'threads':>7} {'ms':>9} {'CPU ms':>8} {'CPU/wall':>8} "
          f"{'speed-up':>8} {'retx/call':>9}")  # fmt: skip
    for target in targets:
        for k in args.k:
            try:
                rows = (switch_rows if target == "switch" else reflector_rows)(args, k)
            except StackError as err:
                print(f"{target:>10} {k:>5}  the local stack did not start: {err}")
                continue
            base = rows[1][0]
            for t, (wall, cpu, retx) in rows.items():
                print(f"{target:>10} {k:>5} {t:>7} {wall * 1e3:>9.1f} {cpu * 1e3:>8.1f} "
                      f"{cpu / wall:>8.0%} {base / wall:>8.2f} {retx:>9.1f}", flush=True)  # fmt: skip
    load = os.getloadavg()
    print(f"load average at the end {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
