"""``p4reduce testbed``: experiments on a Mininet network around one P4 switch
(docs/testbed.md, "Mininet"; docs/architecture.md).

    p4reduce testbed [--experiment single|scaling|loss|sparsity|training|racks|standard]
                     [--workers N[,N...]] [--racks R[,R...]] [--per-rack W[,W...]]
                     [--bw MBIT] [--delay MS] [--loss P[,P...]]
                     [--elements M] [--mode dense|sparse] [--dtype float32|int32]
                     [--density D[,D...]] [--switch embedded|bmv2|embedded,bmv2] [--repeat R]
                     [--slots S] [--retx-ms MS] [--no-gloo] [--timeout S] [--out DIR] [--json]

Each experiment prints its table and summary, and writes ``DIR/NAME.csv`` and
``DIR/NAME.png``. ``--switch embedded,bmv2`` runs each experiment once per switch (the
second's files are ``NAME-bmv2.*``) and then prints their times side by side
(``DIR/NAME-switches.csv``). It needs root (Mininet) and says so in one line otherwise. Exit status: 0
when every result was right, 1 when one was wrong or a run failed, 2 for a bad command line.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ... import contracts
from ...controller.service import Timeouts
from ..local import StackError
from .experiments import EXPERIMENTS, STANDARD, Options, link_label
from .report import table, write_csv
from .runner import Row, run_points
from .stack import mininet_missing
from .switches import ENGINES, K_CHOICES, KINDS, SwitchKind, kind, supported_ks

# BMv2 (the default simple_switch_grpc build) turns around a few hundred K = 256 aggregation
# packets per second on the 2-core machine (docs/results.md), slower than one 10 Mbit/s link.
# Slots sized to the link (25 there) queued up to 8 x 25 packets in front of it, longer than
# the first retransmission timeout: retransmission storms (53 s for one 4-worker call). Its
# jobs get this many slots unless --slots says otherwise.
BMV2_SLOTS = 4
# Its round trip on the loaded 2-core machine reached hundreds of milliseconds with 8 workers
# (8 x 4 packets in, each result replicated 8 times), past the 100-200 ms first retransmission
# timeouts meant for the embedded switch (80 ms for the loss experiment): retransmissions
# then added load and calls took 18-60 s instead of about 4. BMv2's jobs start at this
# timeout unless --retx-ms says otherwise.
BMV2_RETX_MS = 1000

PROG = "p4reduce testbed"
CHOICES = (*EXPERIMENTS, "training", "accuracy", "tenants", "racks", "standard")


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


def _k_list(text: str) -> tuple[int, ...]:
    ks = _number_list(int, 1, 1 << 16, "K")(text)
    bad = [k for k in ks if k not in K_CHOICES]
    if bad:
        raise argparse.ArgumentTypeError(f"K {bad[0]}: one of {', '.join(map(str, K_CHOICES))}")
    return ks


def _switch_list(text: str) -> tuple[str, ...]:
    names = tuple(text.split(","))
    bad = [n for n in names if n not in KINDS]
    if bad or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(
            f"switch {bad[0] if bad else text!r}: one of {', '.join(KINDS)}, or several "
            "different ones separated by commas"
        )
    return names


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--experiment", "-e", choices=CHOICES, default="single", metavar="NAME",
        help="single: one point from the options (default); scaling, sparsity, loss, "
        "tenants, training, accuracy (time to accuracy of the compressed schemes), racks "
        "(leaf-spine: ToRs under a spine, --racks, --per-rack); standard: all but racks (as "
        "`make testbed`)",
    )  # fmt: skip
    p.add_argument(
        "--workers", "-n", type=_number_list(int, 1, 32, "worker count"), metavar="N[,N...]",
        help="hosts, one worker each (single: 2; scaling: 2,4,8,16; others: 4)",
    )  # fmt: skip
    p.add_argument(
        "--bw", type=_number_list(float, 0, 10000, "bandwidth"), metavar="MBIT[,MBIT...]",
        help="rate of every data link in Mbit/s, each direction (default 10; scaling: 10 and "
        "100; 0: unshaped); a list for scaling",
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
        help="elements per tensor (single 20000; scaling 65536 at 10 Mbit/s, 1048576 faster; "
        "loss 20000; sparsity 131072; tenants 65536)",
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
        help="fraction of non-zero K-element blocks per worker (sparsity: 0.001 .. 1)",
    )  # fmt: skip
    p.add_argument(
        "--switch", type=_switch_list, default=("embedded",), metavar="embedded|bmv2[,...]",
        help="embedded: p4reduce-switch (default); bmv2: simple_switch_grpc (needs it and "
        "p4c: /opt/p4lang or PATH); embedded,bmv2: each experiment on both, then their "
        "times side by side",
    )  # fmt: skip
    p.add_argument(
        "--repeat", type=_number(int, 1, 1000, "repeat count"), default=None, metavar="R",
        help="timed calls per point, after one warm-up; the median is reported (default 3; "
        "scaling 9; sparsity 25 below 10 %% density, 9 above; tenants at least 5)",
    )  # fmt: skip
    p.add_argument(
        "--slots", type=_number(int, 1, contracts.POOL_SLOTS, "slot count"), metavar="S",
        help="slots per p4reduce job (default: sized to the link, 22 ms of its time in "
        "flight, 16 to 64)",
    )  # fmt: skip
    p.add_argument(
        "--retx-ms", type=_number(int, 1, 60000, "retransmission timeout"), metavar="MS",
        help="p4reduce workers' first retransmission timeout in ms (default: the "
        f"registration service's, {Timeouts().initial_ms}; {BMV2_RETX_MS} against bmv2)",
    )  # fmt: skip
    p.add_argument(
        "--k", type=_k_list, metavar="K[,K...]",
        help="elements per packet, compiled into the program: 64, 256 or 1024 (default 64; "
        "scaling 256 and 1024, sparsity 256); a list for scaling. K = 1024 gives the data "
        "links a jumbo MTU (9000)",
    )  # fmt: skip
    p.add_argument(
        "--engine", choices=ENGINES,
        help="the embedded switch's engine (p4reduce-switch --engine; default: native where "
        "the switch has it)",
    )  # fmt: skip
    p.add_argument(
        "--steps", type=_number(int, 1, 10000, "step count"), default=15, metavar="T",
        help="training: SGD steps per run (default 15; the first 5, or fewer, are warm-up)",
    )  # fmt: skip
    p.add_argument(
        "--epochs", type=_number(int, 1, 1000, "epoch count"), default=5, metavar="E",
        help="accuracy: epochs per scheme (default 5)",
    )  # fmt: skip
    p.add_argument(
        "--lr", type=_number(float, 1e-6, 100, "learning rate"), default=1.0, metavar="LR",
        help="accuracy: SGD learning rate (default 1.0, the example's)",
    )  # fmt: skip
    p.add_argument(
        "--racks", type=_number_list(int, 1, 8, "rack count"), metavar="R[,R...]",
        help="racks: the leaf-spine shapes' racks, one ToR switch each under one spine "
        "(default 1,2,4, and 2 x 4 beside 4 x 2); the other experiments run one switch",
    )  # fmt: skip
    p.add_argument(
        "--per-rack", type=_number_list(int, 1, 16, "workers per rack"), metavar="W[,W...]",
        help="racks: workers (hosts) per rack (default 2); --workers is not used there",
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
        workers=args.workers, bws=args.bw, delay_ms=args.delay or None, loss=args.loss,
        elements=args.elements, density=args.density, mode=args.mode, dtype=args.dtype,
        repeat=args.repeat, gloo=not args.no_gloo, retx_ms=args.retx_ms, timeout=args.timeout,
        ks=args.k, steps=args.steps, epochs=args.epochs, lr=args.lr, slots=args.slots,
    )  # fmt: skip


# ---------------------------------------------------------------------- the run
def run_experiment(
    name: str,
    opts: Options,
    args: argparse.Namespace,
    say: Callable[[str], None],
    switch: SwitchKind,
    suffix: str = "",
) -> list[Row]:
    """One experiment on one switch; ``suffix`` goes into its file names."""
    if switch.name == "bmv2":
        opts = dataclasses.replace(
            opts, slots=opts.slots or BMV2_SLOTS, retx_ms=opts.retx_ms or BMV2_RETX_MS
        )
    if name == "training":
        from .training import run_training

        return run_training(opts, switch, args.out, say, quiet=args.json)
    if name == "accuracy":
        from .accuracy import run_accuracy

        return run_accuracy(opts, switch, args.out, say, quiet=args.json)
    if name == "racks":
        from .racks import run_racks

        if switch.name != "embedded":
            raise StackError("racks: the leaf-spine testbed runs the embedded switch only")
        return run_racks(opts, switch, args.out, say, quiet=args.json, racks=args.racks,
                         per_rack=args.per_rack)  # fmt: skip
    if name == "tenants":
        from .tenants import run_tenants

        return run_tenants(opts, switch, args.out, say, quiet=args.json)
    exp = EXPERIMENTS[name]
    rows: list[Row] = []
    usable = supported_ks()
    points = exp.points(opts, usable) if name == "scaling" else exp.points(opts)
    skipped = sorted({p.k for p in points if p.k not in usable})
    if skipped and (opts.ks or ()):
        raise StackError(f"K = {skipped[0]}: this checkout's p4src/ builds only K = "
                         f"{', '.join(map(str, usable))}")  # fmt: skip
    for k in skipped:
        say(f"{name}: skipping K = {k}: this checkout's p4src/ builds only K = "
            f"{', '.join(map(str, usable))}")  # fmt: skip
    rows += run_points([p for p in points if p.k in usable], switch, out=args.out, log=say)
    csv_path, png_path = args.out / f"{name}{suffix}.csv", args.out / f"{name}{suffix}.png"
    write_csv(rows, csv_path)
    title = f"{name}: {exp.title}\n{rows[0].workers if name != 'scaling' else 'N'} workers, "
    exp.figure(rows, png_path, title + link_label(rows))
    if args.json:
        for r in rows:
            print(json.dumps({"experiment": name, **r.as_dict()}), flush=True)
    else:
        print(f"\n{name}: {exp.title} ({link_label(rows)})")
        print(table(rows, exp.keys))
        for line in exp.summary(rows):
            print(f"  {line}")
        print(f"  wrote {csv_path} and {png_path}", flush=True)
    return rows


COMPARE_KEYS = ("bw_mbit", "k", "workers", "loss", "density", "elements", "backend", "mode")


def side_by_side(rows: Sequence[Row], labels: Sequence[str]) -> tuple[list[str], list[list[str]]]:
    """The median ms of every point on each switch (``labels``, the rows' ``switch``), the
    later switches also as a ratio to the first: header and cells."""
    points: dict[tuple, dict[str, Row]] = {}
    for r in rows:
        points.setdefault(tuple(getattr(r, k) for k in COMPARE_KEYS), {})[r.switch] = r
    head = ["Mbit/s", "K", "workers", "loss", "density", "elements", "backend", "mode"]
    head += [f"ms {lb}" for lb in labels]
    head += [f"{lb} / {labels[0]}" for lb in labels[1:]]
    head += [f"retx {lb}" for lb in labels]
    cells = []
    for key, by_switch in points.items():
        line = ["-" if v is None else f"{v:g}" if isinstance(v, float) else str(v) for v in key]
        ms = [by_switch[lb].seconds * 1e3 if lb in by_switch else None for lb in labels]
        line += ["-" if m is None else f"{m:.1f}" for m in ms]
        line += [f"{m / ms[0]:.1f}" if m is not None and ms[0] else "-" for m in ms[1:]]
        for lb in labels:
            r = by_switch.get(lb)
            line.append(f"{r.retransmissions:.0f}" if r and r.backend == "p4reduce" else "-")
        cells.append(line)
    return head, cells


def print_side_by_side(name: str, rows: Sequence[Row], labels: Sequence[str], out: Path) -> None:
    head, cells = side_by_side(rows, labels)
    widths = [max(len(x) for x in col) for col in zip(head, *cells, strict=True)]
    print(f"\n{name}: the switches side by side (median ms per call)")
    for line in [head, *cells]:
        print("  ".join(c.rjust(w) for c, w in zip(line, widths, strict=True)))
    path = out / f"{name}-switches.csv"
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows([head, *cells])
    print(f"  wrote {path}", flush=True)


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

    try:
        switches = [kind(name, args.engine) for name in args.switch]
        for sw in switches:
            sw.check()
        opts = options_of(args)
        names = STANDARD if args.experiment == "standard" else (args.experiment,)
        if (args.racks or args.per_rack) and names != ("racks",):
            raise StackError("--racks and --per-rack belong to --experiment racks")
        rows: list[Row] = []
        for name in names:
            mine: list[Row] = []
            for i, sw in enumerate(switches):
                suffix = f"-{sw.name}" if i else ""
                mine += run_experiment(name, opts, args, say, sw, suffix)
            if len(switches) > 1 and not args.json:
                print_side_by_side(name, mine, [sw.label for sw in switches], args.out)
            rows += mine
    except StackError as err:
        print(f"{PROG}: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 1
    wrong = [r for r in rows if not r.ok]
    if wrong:
        print(f"{PROG}: error: {len(wrong)} result(s) wrong (see the ok column)", file=sys.stderr)
        return 1
    say(f"done: {len(rows)} rows")
    return 0
