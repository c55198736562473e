"""``p4reduce``: the user entry point (docs/architecture.md; docs/testbed.md).

    p4reduce check [--workers N] [--elements M] [--dtype float32|int32] [--mode dense|sparse]
                   [--density D] [--loss P] [--seed S] [--k 64|256|1024] [--slots S] [--timeout T]
                   [--json]
    p4reduce bench [NAME [ARGS...]] [--list]

Errors are one line, ``p4reduce: error: ...`` (or ``p4reduce check: error: ...``), on stderr:
exit 1, or 2 for a bad command line; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..cli_common import OneLineArgumentParser as _OneLineParser
from ..cli_common import internal_error, stdout_gone

PROG = "p4reduce"


class OneLineArgumentParser(_OneLineParser):
    """Usage errors are one line, ``PROG: error: message``, exit status 2."""

    exit_status = 2


class Terminated(BaseException):
    """SIGTERM: unwinds like Ctrl-C, so every process started is stopped."""


def build_parser() -> argparse.ArgumentParser:
    from .check import add_arguments

    p = OneLineArgumentParser(
        prog=PROG,
        description="p4reduce: in-network all-reduce on the embedded P4 switch, run locally",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineArgumentParser)
    sub.required = True
    c = sub.add_parser(
        "check",
        help="end-to-end correctness run on loopback",
        description="Start the embedded switch, the controller and N worker processes on "
        "127.0.0.1, run one all-reduce, compare every worker's result with a float64 numpy "
        "sum (exact for int32) and print one JSON line: ok, max_abs_error, bound, seconds, "
        "goodput_gbps, packets, retransmissions, ... Exit 0 only when the result is within "
        "the bound.",
    )
    add_arguments(c)
    b = sub.add_parser(
        "bench",
        help="run a benchmark script of bench/",
        description="Run bench/NAME.py of the checkout with ARGS (every benchmark, as "
        "`make bench`, when no NAME is given). The exit status is the script's.",
    )
    b.add_argument("name", nargs="?", metavar="NAME", help="allreduce, switch, dataplane, ...")
    b.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="passed to the script")
    b.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    from . import demo

    d = sub.add_parser(
        "demo",
        help="DDP training through the embedded switch, checked against gloo",
        description="Train a small model with N worker processes (DDP), first with gloo, then "
        "with the p4reduce torch.distributed backend on the embedded switch (dense program "
        "and controller on 127.0.0.1); show the loss per step, the aggregation statistics, "
        "and that the final parameters equal gloo's within the tolerance derived from the "
        "quantization bound (docs/demo.md). Exit 0 only when they do and the loss fell.",
    )
    demo.add_arguments(d)
    from .mininet.command import add_arguments as add_testbed_arguments

    t = sub.add_parser(
        "testbed",
        help="experiments on a Mininet network around one P4 switch (needs root)",
        description="Build a Mininet network (N hosts, each linked to one P4 switch by a "
        "shaped, lossy link; a management network for the registration service), run "
        "p4reduce and gloo all-reduces as processes inside the hosts, check every result, "
        "print a table and write CSV and PNG files (docs/testbed.md, Mininet). Needs root.",
    )
    add_testbed_arguments(t)
    return p


# ---------------------------------------------------------------------- check
def cmd_check(args: argparse.Namespace) -> int:
    from .check import CheckError, run_check
    from .local import StackError

    prog = f"{PROG} check"
    t0 = time.perf_counter()

    def log(msg: str) -> None:
        if not args.json:
            print(f"{prog}: [{time.perf_counter() - t0:5.1f} s] {msg}", file=sys.stderr, flush=True)

    try:
        report = run_check(args, log)
    except (CheckError, StackError) as err:
        msg = " ".join(str(err).split())
        print(json.dumps({"ok": False, "error": msg, **_summary(args)}), flush=True)
        print(f"{prog}: error: {msg}", file=sys.stderr)
        return 1
    print(json.dumps(report), flush=True)
    if not args.json:
        print(_human(report), file=sys.stderr)
    return 0 if report["ok"] else 1


def _summary(args: argparse.Namespace) -> dict[str, Any]:
    keys = ("workers", "elements", "dtype", "mode", "density", "loss", "seed", "k", "slots",
            "switch")  # fmt: skip
    return {k: getattr(args, k) for k in keys}


def _human(r: dict[str, Any]) -> str:
    verdict = "OK" if r["ok"] else "FAILED"
    what = f"{r['workers']} workers, {r['elements']} {r['dtype']} elements, {r['mode']}"
    if r["density"] < 1:
        what += f", density {r['density']:g}"
    if r["loss"] > 0:
        what += f", loss {r['loss']:g}"
    if r.get("switch", "embedded") != "embedded":
        what += f", on {r['switch']}"
    if r["dtype"] == "int32":
        acc = "exact" if r["max_abs_error"] == 0 else f"{r['mismatches']} elements differ"
    else:
        rel = "<=" if r["max_abs_error"] <= r["bound"] else ">"
        acc = f"max error {r['max_abs_error']:.3g} {rel} bound {r['bound']:.3g}"
        if r["mismatches"]:
            acc += f" ({r['mismatches']} elements outside their bound)"
    if not r.get("identical", True):
        acc += "; the workers' results differ"
    return (
        f"{PROG} check: {verdict}: {what}: {acc}; all-reduce {r['seconds'] * 1e3:.1f} ms, "
        f"{r['goodput_gbps']:.4g} Gb/s, {r['packets']} packets, "
        f"{r['retransmissions']} retransmissions (run {r['wall_seconds']:.1f} s)"
    )


# ---------------------------------------------------------------------- bench
BENCH_ORDER = ("frontend", "interpreter", "switch", "dataplane", "allreduce", "torch_ddp")


def bench_dir() -> Path | None:
    for c in (Path(__file__).resolve().parents[1] / "bench", Path.cwd() / "bench"):
        if c.is_dir() and any(c.glob("*.py")):
            return c
    return None


def cmd_bench(args: argparse.Namespace) -> int:
    d = bench_dir()
    if d is None:
        raise UsageError("no bench/ folder found (run from a p4reduce checkout)")
    found = sorted(p.stem for p in d.glob("*.py") if not p.stem.startswith("_"))
    if args.list:
        for name in found:
            print(name)
        return 0
    if args.name is None:
        names = [n for n in BENCH_ORDER if n in found] + [n for n in found if n not in BENCH_ORDER]
        for name in names:
            print(f"{PROG} bench: {name}", file=sys.stderr, flush=True)
            rc = subprocess.call([sys.executable, str(d / f"{name}.py")])
            if rc != 0:
                return rc
        return 0
    if args.name not in found:
        raise UsageError(f"no benchmark {args.name!r} (have: {', '.join(found)})")
    return subprocess.call([sys.executable, str(d / f"{args.name}.py"), *args.args])


class UsageError(Exception):
    pass


# ---------------------------------------------------------------------- main
# ---------------------------------------------------------------------- demo
def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(args)


# ---------------------------------------------------------------------- testbed
def cmd_testbed(args: argparse.Namespace) -> int:
    from .mininet.command import cmd_testbed as run

    return run(args)


COMMANDS = {"check": cmd_check, "bench": cmd_bench, "demo": cmd_demo, "testbed": cmd_testbed}


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as done:  # --help (0) or a usage error (2, already printed)
        return done.code if isinstance(done.code, int) else 2

    def on_term(_sig: int, _frame: object) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        return COMMANDS[args.command](args)
    except UsageError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return stdout_gone()
    except KeyboardInterrupt:
        print(f"{PROG}: error: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print(f"{PROG}: error: terminated", file=sys.stderr)
        return 143
    except Exception as err:  # noqa: BLE001 - one line, never a traceback
        print(internal_error(PROG, err), file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
