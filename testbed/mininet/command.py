"""``p4reduce testbed``: experiments on a Mininet network around one P4 switch
(docs/testbed.md, "Mininet"; DESIGN.md section 2).

    p4reduce testbed [--experiment single|scaling|loss|sparsity|training|standard]
                     [--workers N[,N...]] [--bw MBIT] [--delay MS] [--loss P[,P...]]
                     [--elements M] [--mode dense|sparse] [--dtype float32|int32]
                     [--density D[,D...]] [--switch embedded|bmv2] [--repeat R]
                     [--retx-ms MS] [--no-gloo] [--timeout S] [--out DIR] [--json]

Each experiment prints its table and summary, and writes ``DIR/NAME.csv`` and
``DIR/NAME.png``. It needs root (Mininet) and says so in one line otherwise. Exit status: 0
when every result was right, 1 when one was wrong or a run failed, 2 for a bad command line.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .experiments import EXPERIMENTS, STANDARD, Options, link_label
from .report import table, write_csv
from .runner import Row, run_point
from .stack import mininet_missing
from .switches import KINDS, kind

PROG = "p4reduce testbed"
CHOICES = (*EXPERIMENTS, "training", "standard")


class TestbedError(Exception):
    """A run failed (one line)."""


# ---------------------------------------------------------------------- arguments
def _number_list(kind_: type, lo: float, hi: float, what: str) -> Callable[[str], tuple]:
    def conv(text: str) -> tuple:
        out = []
        for part in text.split(","):
            try:
                v = kind_(part)
            except ValueError:
                raise argparse.ArgumentTypeError(f"{what} {part!r} is not a number") from None
            if not (lo <= v <= hi) or (isinstance(v, float) and not math.isfinite(v)):
                raise argparse.ArgumentTypeError(f"{what} {part} is outside {lo:g}..{hi:g}")
            out.append(v)
        return tuple(out)

    conv.__name__ = what
    return conv


def _number(kind_: type, lo: float, hi: float, what: str) -> Callable[[str], Any]:
    one = _number_list(kind_, lo, hi, what)

    def conv(text: str) -> Any:
        values = one(text)
        if len(values) != 1:
            raise argparse.ArgumentTypeError(f"{what}: one value, not {text!r}")
        return values[0]

    conv.__name__ = what
    return conv


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--experiment", "-e", choices=CHOICES, default="single", metavar="NAME",
        help="single: one point from the options (default); scaling, loss, sparsity, "
        "training; standard: scaling, loss, sparsity and training (as `make testbed`)",
    )  # fmt: skip
    p.add_argument(
        "--workers", "-n", type=_number_list(int, 1, 32, "worker count"), metavar="N[,N...]",
        help="hosts, one worker each (single: 2; scaling: 2,4,6,8; others: 4)",
    )  # fmt: skip
    p.add_argument(
        "--bw", type=_number(float, 0, 1000, "bandwidth"), default=10.0, metavar="MBIT",
        help="rate of every data link in Mbit/s, each direction (default 10; 0: unshaped)",
    )  # fmt: skip
    p.add_argument(
        "--delay", type=_number(float, 0, 1000, "delay"), default=0.0, metavar="MS",
        help="one-way delay of every data link in ms (netem; default 0)",
    )  # fmt: skip
    p.add_argument(
        "--loss", type=_number_list(float, 0, 0.5, "loss probability"), metavar="P[,P...]",
        help="frame loss probability per data link and direction (single: 0; loss "
        "experiment: 0,0.001,0.01,0.05)",
    )  # fmt: skip
    p.add_argument(
        "--elements", "-m", type=_number(int, 1, 1 << 26, "element count"), metavar="M",
        help="elements per tensor (single 20000, scaling 50000, loss 20000, sparsity 100000)",
    )  # fmt: skip
    p.add_argument(
        "--mode", choices=("dense", "sparse"), default="dense",
        help="single: p4reduce's program and mode (default dense)",
    )  # fmt: skip
    p.add_argument(
        "--dtype", choices=("float32", "int32"),
        help="tensor type (default float32; int32 for the loss experiment, checked exactly)",
    )  # fmt: skip
    p.add_argument(
        "--density", type=_number_list(float, 0, 1, "density"), metavar="D[,D...]",
        help="fraction of non-zero 64-element blocks per worker (sparsity: 0.01 .. 1)",
    )  # fmt: skip
    p.add_argument(
        "--switch", choices=KINDS, default="embedded",
        help="embedded: p4reduce-switch (default); bmv2: simple_switch_grpc (needs it and "
        "p4c on PATH)",
    )  # fmt: skip
    p.add_argument(
        "--repeat", type=_number(int, 1, 1000, "repeat count"), default=3, metavar="R",
        help="timed calls per point, after one warm-up; the median is reported (default 3)",
    )  # fmt: skip
    p.add_argument(
        "--retx-ms", type=_number(int, 1, 60000, "retransmission timeout"), metavar="MS",
        help="p4reduce workers' first retransmission timeout in ms (default: the "
        "registration service's, 200)",
    )  # fmt: skip
    p.add_argument(
        "--k", type=int, choices=(64, 256, 1024), default=64,
        help="elements per packet, compiled into the program (default 64); K = 1024 gives the "
        "data links a jumbo MTU (9000)",
    )  # fmt: skip
    p.add_argument("--no-gloo", action="store_true", help="skip the gloo baseline")
    p.add_argument(
        "--timeout", type=_number(float, 1, 86400, "timeout"), default=300.0, metavar="S",
        help="each point's workers must finish within S seconds (default 300)",
    )  # fmt: skip
    p.add_argument(
        "--out", type=Path, default=Path("testbed/out"), metavar="DIR",
        help="where the CSV and PNG files go (default testbed/out)",
    )  # fmt: skip
    p.add_argument(
        "--json", action="store_true", help="print one JSON object per row instead of tables"
    )


def options_of(args: argparse.Namespace) -> Options:
    return Options(
        workers=args.workers, bw=args.bw or None, delay_ms=args.delay or None, loss=args.loss,
        elements=args.elements, density=args.density, mode=args.mode, dtype=args.dtype,
        repeat=args.repeat, gloo=not args.no_gloo, retx_ms=args.retx_ms, timeout=args.timeout,
        k=args.k,
    )  # fmt: skip


# ---------------------------------------------------------------------- the run
def run_experiment(
    name: str, opts: Options, args: argparse.Namespace, say: Callable[[str], None]
) -> list[Row]:
    if name == "training":
        from .training import run_training

        return run_training(opts, kind(args.switch), args.out, say, quiet=args.json)
    exp = EXPERIMENTS[name]
    switch = kind(args.switch)
    rows: list[Row] = []
    for point in exp.points(opts):
        say(f"{name}: {point.workers} workers, links {point.shape.label()}")
        rows += run_point(point, switch, out=args.out, log=say)
    write_csv(rows, args.out / f"{name}.csv")
    title = f"{name}: {exp.title}\n{rows[0].workers if name != 'scaling' else 'N'} workers, "
    exp.figure(rows, args.out / f"{name}.png", title + link_label(rows))
    if args.json:
        for r in rows:
            print(json.dumps({"experiment": name, **r.as_dict()}), flush=True)
    else:
        print(f"\n{name}: {exp.title} ({link_label(rows)})")
        print(table(rows, exp.keys))
        for line in exp.summary(rows):
            print(f"  {line}")
        print(f"  wrote {args.out / (name + '.csv')} and {args.out / (name + '.png')}", flush=True)
    return rows


def cmd_testbed(args: argparse.Namespace) -> int:
    """The ``p4reduce testbed`` subcommand (registered in testbed/cli.py)."""
    t0 = time.perf_counter()

    def say(msg: str) -> None:
        if not args.json:
            print(f"{PROG}: [{time.perf_counter() - t0:6.1f} s] {msg}", file=sys.stderr, flush=True)

    why = mininet_missing()
    if why is not None:
        print(f"{PROG}: error: {why}", file=sys.stderr)
        return 1
    from ..local import StackError

    try:
        kind(args.switch).check()
        opts = options_of(args)
        names = (*STANDARD, "training") if args.experiment == "standard" else (args.experiment,)
        rows: list[Row] = []
        for name in names:
            rows += run_experiment(name, opts, args, say)
    except StackError as err:
        print(f"{PROG}: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 1
    wrong = [r for r in rows if not r.ok]
    if wrong:
        print(f"{PROG}: error: {len(wrong)} result(s) wrong (see the ok column)", file=sys.stderr)
        return 1
    say(f"done: {len(rows)} rows")
    return 0
