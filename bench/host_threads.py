"""What several native driver threads could give one worker, at most: T native sessions,
each with its own socket, its own C reflector (bench/c/reflector.c, one peer) and 1/T of
the slots (the window stays the job's), each all-reducing 1/T of the tensor in its own
thread (the driver releases the GIL), against one thread doing the whole tensor with all
the slots, in the same run. The T reflector processes also share the work of the other
side, so the figure is an upper bound of what threads in the driver could give. Prints the best wall time of ``--repeat``
runs per T, the process's CPU time, and the speed-up over T = 1 (docs/host.md, "Several
driver threads").

    python bench/host_threads.py [--elements 4000000] [--k 64,1024] [--threads 1,2,4]
        [--slots 64] [--repeat 3]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
import time
from pathlib import Path

import numpy as np
from p4reduce.host import UdpTransport, run_call
from p4reduce.host.protocol import Done, Session

sys.path.insert(0, str(Path(__file__).parent))
import floor  # noqa: E402 - bench/floor.py, next to this file


def ints(text: str) -> list[int]:
    return [int(float(x)) for x in text.split(",") if x]


def one(ses: Session, t: UdpTransport, part: np.ndarray, ends: list[object], i: int) -> None:
    ends[i] = run_call(ses.allreduce(part), t)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--elements", type=int, default=4_000_000, help="float32 elements (4000000)")
    ap.add_argument("--k", type=ints, default=[64, 1024], help="K, comma-separated (64,1024)")
    ap.add_argument("--threads", type=ints, default=[1, 2, 4], help="thread counts (1,2,4)")
    ap.add_argument("--slots", type=int, default=64, help="slots per session (64)")
    ap.add_argument("--repeat", type=int, default=3, help="best of R runs per figure (3)")
    args = ap.parse_args(argv)
    x = np.random.default_rng(0).standard_normal(args.elements).astype(np.float32)
    most = max(args.threads)
    for k in args.k:
        with contextlib.ExitStack() as es:
            socks = floor.worker_sockets(most)
            for s in socks:
                es.callback(s.close)
            addrs = [es.enter_context(floor.reflector([s.getsockname()])) for s in socks]
            ts = [UdpTransport(a, sock=s.dup()) for a, s in zip(addrs, socks, strict=True)]
            for t in ts:
                es.callback(t.close)
            # per thread count: its sessions, 1/T of the slots each
            sessions = {
                n: [Session(rank=0, n=1, job_id=1, job_key=1, slots=max(1, args.slots // n),
                            k=k, engine="native") for _ in range(n)]
                for n in args.threads
            }  # fmt: skip
            for group in sessions.values():
                for ses, t in zip(group, ts, strict=False):
                    run_call(ses.allreduce(x[: 50 * k * args.slots]), t)  # warm up
            best: dict[int, tuple[float, float]] = {}
            for _ in range(args.repeat):
                for n in args.threads:
                    parts = np.array_split(x, n)
                    ends: list[object] = [None] * n
                    threads = [
                        threading.Thread(
                            target=one, args=(sessions[n][i], ts[i], parts[i], ends, i)
                        )
                        for i in range(n)
                    ]
                    c0, t0 = time.process_time(), time.perf_counter()
                    for th in threads:
                        th.start()
                    for th in threads:
                        th.join()
                    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                    if not all(isinstance(e, Done) for e in ends):
                        raise RuntimeError(f"a call did not finish: {ends}")
                    if n not in best or wall < best[n][0]:
                        best[n] = (wall, cpu)
            base = best[args.threads[0]][0]
            for n, (wall, cpu) in best.items():
                print(f"K={k} M={args.elements} threads={n}: {wall * 1e3:.1f} ms, CPU "
                      f"{cpu * 1e3:.1f} ms ({cpu / wall:.0%} of the wall time), speed-up "
                      f"{base / wall:.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
