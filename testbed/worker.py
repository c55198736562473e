"""One worker of a local stack: ``python -m p4reduce.testbed.worker`` (started by
``LocalStack.spawn_workers``, not meant to be run by hand).

It takes its already-bound UDP socket by file descriptor (``--fd``, passed with
``subprocess.Popen(pass_fds=...)``), or binds one on ``--bind IP`` and registers it with
``--mac MAC`` (a worker inside a Mininet host, testbed/mininet/), joins the job at the
registration service, then runs the plan: a JSON list of items, each

    {"elements": M, "dtype": "float32"|"int32", "mode": "dense"|"sparse",
     "density": 1.0, "seed": 0, "k": 64, "repeat": 1, "warmup": 0, "save": null|"PATH",
     "group": null|G}

(``{rank}`` in ``save`` is replaced by the worker's rank.) Consecutive items with the same
``group`` run together: one barrier, each item's warm-up, then their timed calls
interleaved (``item_groups``), in an order where every item follows every item equally
often (``call_order``).

For each item it generates this rank's tensor (``testbed.data.rank_data``), waits at a
barrier, runs ``warmup`` untimed and ``repeat`` timed all-reduces, saves the last result to
``save`` (``.npy``) when given, and prints one JSON line per timed call on stdout:

    {"rank", "item", "call", "elements", "dtype", "mode", "density", "seconds", "stats", "took"}

``seconds`` is the wall time of the call measured here; ``stats`` is the session's
``last_stats.as_dict()``; ``took`` the mode the call used (``last_mode``: what
``mode="auto"`` chose). With ``$P4REDUCE_CPU_INTF`` set (the Mininet testbed sets it), the
last timed call's line of each item also carries ``cpu``: this process's CPU time and its
data interface's packets over all the item's timed calls (``testbed.cpu.window``); with
``$P4REDUCE_CPU_WATCH`` (``NAME=PID,...``, rank 0 only) also those processes' CPU time and
the machine's. Errors: one line on stderr, exit 1.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ..cli_common import OneLineArgumentParser, rank_main
from . import cpu
from .data import rank_data

PROG = "p4reduce-worker"
CPU_INTF_ENV = "P4REDUCE_CPU_INTF"  # the data interface whose packets a window counts
CPU_WATCH_ENV = "P4REDUCE_CPU_WATCH"  # NAME=PID,...: processes whose CPU a window reads


def cpu_probe() -> tuple[str, dict[str, int]] | None:
    """(interface, watched processes) from the environment, or None: no CPU windows."""
    intf = os.environ.get(CPU_INTF_ENV)
    if not intf:
        return None
    watch = {}
    for part in filter(None, os.environ.get(CPU_WATCH_ENV, "").split(",")):
        name, _, pid = part.partition("=")
        if name and pid.isdigit():
            watch[name] = int(pid)
    return intf, watch


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = OneLineArgumentParser(
        exit_status=2, prog=PROG, description="a worker of p4reduce's local stack"
    )
    p.add_argument("--url", required=True)
    p.add_argument("--job", type=int, required=True)
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--n", type=int, required=True)
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--fd", type=int, help="an already-bound UDP socket")
    where.add_argument("--bind", metavar="IP", help="bind a UDP socket on this address")
    p.add_argument("--mac", help="the MAC to register (the interface's, on a real network)")
    p.add_argument("--switch-port", type=int, required=True)
    p.add_argument("--slots", type=int, default=None)
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--plan", required=True, help="JSON list of calls to run")
    return p.parse_args(argv)


def _stats(session: Any) -> dict[str, Any]:
    st = getattr(session, "last_stats", None)
    if st is None:
        return {}
    return st.as_dict() if hasattr(st, "as_dict") else dict(vars(st))


def run_plan(
    url: str,
    job_id: int,
    rank: int,
    n: int,
    sock: socket.socket | None,
    switch_port: int,
    plan: list[dict[str, Any]],
    *,
    bind_ip: str = "127.0.0.1",
    mac: str | None = None,
    slots: int | None = None,
    timeout: float = 60.0,
    emit: Callable[[dict[str, Any]], None] | None = None,
    secret: str | None = None,
    session: Any = None,
) -> list[dict[str, Any]]:
    """Join, run the plan, leave; the per-call lines (also handed to ``emit`` as they come).
    The worker process calls this; bench/allreduce.py calls it from threads too. Without
    ``sock``, the session binds one on ``bind_ip`` and registers it with ``mac``. ``secret``:
    the job's (default ``$P4REDUCE_JOB_SECRET``, which the stacks set). ``session``: an open
    session to use (and close) instead of joining (testbed/mininet/tree_worker.py)."""
    from p4reduce.host.api import AllreduceSession

    lines: list[dict[str, Any]] = []
    probe = cpu_probe()
    if session is None:
        session = AllreduceSession.join(
            url, job_id, rank, n, sock=sock, bind_ip=bind_ip, mac=mac, switch_port=switch_port,
            slots=slots, timeout=timeout, secret=secret,
        )  # fmt: skip
    try:
        for group in item_groups(plan):
            # each item's tensor and result buffer, then one barrier for the group
            data = []
            for i in group:
                item = plan[i]
                x = rank_data(
                    int(item.get("seed", 0)), rank, int(item["elements"]), item["dtype"],
                    float(item.get("density", 1.0)), int(item.get("k", 64)),
                )  # fmt: skip
                data.append((i, item, x, np.empty_like(x)))
            session.barrier()
            for _, item, x, out in data:
                for _ in range(int(item.get("warmup", 0))):
                    session.allreduce(x, op="sum", mode=item.get("mode", "dense"), out=out)
            repeat = max(int(item.get("repeat", 1)) for _, item, _, _ in data)
            # a CPU window only for an item timed alone: a group's calls are interleaved
            probing = probe is not None and len(data) == 1
            if probing:
                before = cpu.snapshot(probe[0], probe[1], machine=bool(probe[1]))
            done = [0] * len(data)
            for j in call_order(len(data), [int(d[1].get("repeat", 1)) for d in data]):
                i, item, x, out = data[j]
                c, done[j] = done[j], done[j] + 1
                mode = item.get("mode", "dense")
                t0 = time.perf_counter()
                session.allreduce(x, op="sum", mode=mode, out=out)
                seconds = time.perf_counter() - t0
                line = {
                    "rank": rank, "item": i, "call": c, "elements": int(x.size),
                    "dtype": item["dtype"], "mode": mode,
                    "density": float(item.get("density", 1.0)),
                    "seconds": seconds, "stats": _stats(session),
                    "took": getattr(session, "last_mode", None),
                }  # fmt: skip
                if probing and c == repeat - 1:
                    after = cpu.snapshot(probe[0], probe[1], machine=bool(probe[1]))  # type: ignore[index]
                    pids = {f"{n}_pid": pid for n, pid in probe[1].items()}  # type: ignore[index]
                    line["cpu"] = {**cpu.window(before, after), **pids}
                lines.append(line)
                if emit is not None:
                    emit(line)
            for _, item, _, out in data:
                if item.get("save"):
                    np.save(str(item["save"]).format(rank=rank), out)
    finally:
        session.close()
    return lines


def item_groups(plan: list[dict[str, Any]]) -> list[list[int]]:
    """The plan's items in the order they run: consecutive items with the same ``group``
    (not None) run together, their timed calls interleaved (``call_order``), so that a
    slow stretch of a loaded machine hits every item of the group alike rather than one of
    them; every other item alone."""
    groups: list[list[int]] = []
    for i, item in enumerate(plan):
        g = item.get("group")
        if groups and g is not None and plan[groups[-1][0]].get("group") == g:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def call_order(items: int, repeats: list[int]) -> list[int]:
    """The order of a group's timed calls, as item indices: a de Bruijn sequence over the
    items, repeated, so that every item follows every item (itself included) equally often,
    until each item has its ``repeats``. A plain round robin (0, 1, 2, 0, 1, 2, ...) would
    always put the same item after the same one, and a call inherits its predecessor's
    wake: measured on loopback (4 workers, sparse/dense/auto at 0.1 % density), a sparse
    call took 2.5 ms after a sparse one and 3.3 ms after a 2,148-packet dense one, so in
    a round robin the path after dense (``auto``) paid for dense."""
    cycle = de_bruijn_pairs(items)
    left = list(repeats)
    order: list[int] = []
    while any(n > 0 for n in left):
        for j in cycle:
            if left[j] > 0:
                left[j] -= 1
                order.append(j)
    return order


def de_bruijn_pairs(n: int) -> list[int]:
    """A cyclic sequence over 0..n-1 that holds every ordered pair (a, b) exactly once as
    consecutive elements, the last wrapping to the first (the de Bruijn sequence B(n, 2)):
    n * n elements, each value n times. It is the Lyndon words of length 1 and 2 in
    lexicographic order, a then (a, b) for every b > a: 0, 0 1, 0 2, 1, 1 2, 2 for n = 3."""
    seq: list[int] = []
    for a in range(n):
        seq.append(a)
        for b in range(a + 1, n):
            seq += (a, b)
    return seq


def run(args: argparse.Namespace) -> None:
    sock = socket.socket(fileno=args.fd) if args.fd is not None else None
    run_plan(
        args.url, args.job, args.rank, args.n, sock, args.switch_port, json.loads(args.plan),
        bind_ip=args.bind or "127.0.0.1", mac=args.mac, slots=args.slots, timeout=args.timeout,
        emit=lambda line: print(json.dumps(line), flush=True),
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    return rank_main(PROG, parse, run, argv)


if __name__ == "__main__":
    sys.exit(main())
