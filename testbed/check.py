"""``p4reduce check``: one end-to-end correctness run on loopback (docs/testbed.md).

It starts the embedded switch, the controller's registration service and N worker processes
(``testbed.local.LocalStack``), runs one all-reduce, compares every worker's result with the
reference computed here from the same generator (``testbed.data``), and prints one JSON line:

    {"ok", "max_abs_error", "bound", "seconds", "goodput_gbps", "packets", "retransmissions", ...}

With ``--switch bmv2`` the switch is the real BMv2 (``simple_switch_grpc``, the program
compiled by ``p4c``) and the workers run in network namespaces linked to its ports
(``testbed.bmv2.Bmv2Stack``; root needed); everything else, the check included, is the same.

Exit 0 only when every worker's result is within the bound (exact for int32); 1 when it is
not or the run failed; 2 for a bad command line.
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any

import numpy as np

from .. import contracts
from .bmv2 import DEFAULT_SLOTS as BMV2_SLOTS
from .bmv2 import Bmv2Stack
from .data import DTYPES, MODES, Checker, rank_data
from .local import LocalStack

JOB_ID = 1


class CheckError(Exception):
    """The run failed (not a wrong result): one line."""


# ---------------------------------------------------------------------- arguments
def _int_in(lo: int, hi: int | None, what: str) -> Any:
    def conv(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} {text!r} is not an integer") from None
        if v < lo or (hi is not None and v > hi):
            rng = f"{lo}..{hi}" if hi is not None else f"at least {lo}"
            raise argparse.ArgumentTypeError(f"{what} {v} is outside {rng}")
        return v

    conv.__name__ = what
    return conv


def _float_in(lo: float, hi: float, what: str, *, hi_open: bool = False) -> Any:
    def conv(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} {text!r} is not a number") from None
        if not (lo <= v and (v < hi if hi_open else v <= hi)):
            raise argparse.ArgumentTypeError(
                f"{what} {text} is outside {lo:g}..{hi:g}{' (exclusive)' if hi_open else ''}"
            )
        return v

    conv.__name__ = what
    return conv


def _seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"timeout {text!r} is not a number") from None
    if not (v > 0 and math.isfinite(v)):
        raise argparse.ArgumentTypeError(f"timeout {text} must be a positive number of seconds")
    return v


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--workers", "-n", type=_int_in(1, 32, "worker count"), default=2, metavar="N",
        help="worker processes, 1..32 (default 2)",
    )  # fmt: skip
    p.add_argument(
        "--elements", "-m", type=_int_in(1, 1 << 28, "element count"), default=10_000,
        metavar="M", help="elements per tensor (default 10000)",
    )  # fmt: skip
    p.add_argument(
        "--dtype", choices=DTYPES, default="float32",
        help="float32: normal values, checked against the quantization bound; int32: "
        "uniform over the whole range (the sum wraps), checked exactly (default float32)",
    )  # fmt: skip
    p.add_argument(
        "--mode", choices=MODES, default="dense",
        help="dense: the dense program and protocol; sparse: the sparse ones (default dense)",
    )  # fmt: skip
    p.add_argument(
        "--density", type=_float_in(0.0, 1.0, "density"), default=1.0, metavar="D",
        help="fraction of the K-element blocks that are non-zero on each rank (default 1)",
    )  # fmt: skip
    p.add_argument(
        "--loss", type=_float_in(0.0, 0.5, "loss probability"), default=0.0, metavar="P",
        help="the switch drops this fraction of aggregation packets arriving from and of "
        "results leaving to every worker (its loss simulator; default 0)",
    )  # fmt: skip
    p.add_argument(
        "--seed", type=_int_in(0, 2**63 - 1, "seed"), default=0, metavar="S",
        help="data seed; rank r's tensor depends only on (seed, r) and the shape (default 0)",
    )  # fmt: skip
    p.add_argument(
        "--k", type=int, choices=contracts.K_CHOICES, default=contracts.K_DEFAULT,
        help="elements per packet, compiled into the program (default 64)",
    )  # fmt: skip
    p.add_argument(
        "--slots", type=_int_in(1, contracts.POOL_SLOTS, "slot count"), default=None, metavar="S",
        help="slots of the job: packets in flight per worker (default 64; 16 with --switch "
        "bmv2, which turns fewer packets around within a retransmission timeout)",
    )  # fmt: skip
    p.add_argument(
        "--timeout", type=_seconds, default=120.0, metavar="T",
        help="give up after T seconds (start-up, join and the all-reduce; default 120; "
        "a first start's compile of the native engine is bounded on its own)",
    )  # fmt: skip
    p.add_argument(
        "--switch", choices=("embedded", "bmv2"), default="embedded",
        help="embedded: p4reduce-switch on loopback (default); bmv2: simple_switch_grpc "
        "with the workers in network namespaces on its ports (needs root, p4c and BMv2)",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print only the JSON line")


# ---------------------------------------------------------------------- the run
def run_check(args: argparse.Namespace, log: Any = None) -> dict[str, Any]:
    """Run one check; the JSON-ready report. Raises CheckError when the run fails."""
    say = log or (lambda _m: None)
    if args.slots is None:
        args.slots = BMV2_SLOTS if args.switch == "bmv2" else 64
    t_start = time.perf_counter()
    deadline = t_start + args.timeout
    summary: dict[str, Any] = {
        "workers": args.workers, "elements": args.elements, "dtype": args.dtype,
        "mode": args.mode, "density": args.density, "loss": args.loss, "seed": args.seed,
        "k": args.k, "slots": args.slots, "switch": args.switch,
    }  # fmt: skip
    kind = Bmv2Stack if args.switch == "bmv2" else LocalStack
    with kind(
        args.workers, args.mode, k=args.k, slots=args.slots, loss=args.loss,
        join_timeout=max(1.0, args.timeout), log=say, start_timeout=min(60.0, args.timeout),
    ) as stack:  # fmt: skip
        assert stack.dir is not None
        # the native engine's one-time compile (K = 1024: minutes under load) has its own
        # bound in LocalStack and does not count against --timeout
        deadline += stack.timings.get("native", 0.0)
        outs = [stack.dir / f"result{r}.npy" for r in range(args.workers)]
        item = {
            "elements": args.elements, "dtype": args.dtype, "mode": args.mode,
            "density": args.density, "seed": args.seed, "k": args.k,
            "save": str(stack.dir / "result{rank}.npy"),
        }  # fmt: skip
        procs = stack.spawn_workers(
            JOB_ID, args.workers, [item], timeout=max(1.0, deadline - time.perf_counter())
        )
        say(f"{args.workers} workers started")

        def progress(elapsed: float, finished: int) -> None:
            say(f"running: {elapsed:.0f} s, {finished} of {args.workers} workers finished")

        results = stack.wait_workers(
            procs,
            max(1.0, deadline - time.perf_counter()),
            progress=progress,
            overall=args.timeout,
        )
        arrays = [
            rank_data(args.seed, r, args.elements, args.dtype, args.density, args.k)
            for r in range(args.workers)
        ]
        checker = Checker(arrays, k=args.k, mode=args.mode, slots=args.slots)
        del arrays
        cmps = []
        first: np.ndarray | None = None
        identical = True
        for r, path in enumerate(outs):
            if not path.exists():
                raise CheckError(f"worker {r} wrote no result")
            got = np.load(path)
            if first is None:
                first = got
            else:
                identical = identical and np.array_equal(got, first)
            cmps.append(checker.check(got))
        calls = [res.lines[-1] for res in results if res.lines]
        if len(calls) != args.workers:
            raise CheckError("a worker reported no statistics")
        seconds = max(c["seconds"] for c in calls)
        stats = [c.get("stats", {}) for c in calls]
        report = {
            "ok": all(c.ok for c in cmps) and identical,
            "max_abs_error": max(c.max_abs_error for c in cmps),
            "bound": max(c.bound for c in cmps),
            "seconds": round(seconds, 6),
            "goodput_gbps": round(args.elements * 4 * 8 / seconds / 1e9, 6) if seconds else 0.0,
            "packets": int(sum(s.get("packets_sent", 0) for s in stats)),
            "retransmissions": int(sum(s.get("retransmissions", 0) for s in stats)),
            "mismatches": max(c.mismatches for c in cmps),
            "identical": identical,
            **summary,
            "wall_seconds": round(time.perf_counter() - t_start, 3),
        }
        return report
