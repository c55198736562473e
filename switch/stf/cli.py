"""``p4reduce-stf``: run a BMv2 STF test against the embedded v1model interpreter.

Exit status: 0 when every expected packet arrived, 1 when the test fails (mismatched or
missing packets, or a runtime fault of the program such as a failed assert), 2 when the
input is bad (a malformed STF line is reported as ``FILE:LINE: error: message``, a program
that does not compile as ``FILE(LINE): error: message``), 3 for an internal error of ours
(one line, no traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from p4reduce.cli_common import OneLineArgumentParser

from ..frontend.cli import in_deep_thread
from ..frontend.compiler import CompileOptions, compile_file
from ..frontend.errors import CompileError
from ..interp.builder import Pipeline, build_pipeline
from ..interp.exprs import CodegenError
from .parser import StfError, parse_stf_file
from .runner import StfRunError, StfRunner

PROG = "p4reduce-stf"


def _parser() -> argparse.ArgumentParser:
    p = OneLineArgumentParser(
        exit_status=2,
        prog=PROG,
        description="Run a BMv2 STF test (p4c's dialect) on p4reduce's embedded v1model switch.",
        epilog="Exit status: 0 pass, 1 fail (or a runtime fault of the program), 2 bad input.",
    )
    p.add_argument("program", metavar="PROG.p4", help="the P4_16 v1model program")
    p.add_argument("stf", metavar="TEST.stf", help="the STF test to run")
    p.add_argument(
        "-I",
        dest="include_dirs",
        action="append",
        default=[],
        metavar="DIR",
        help="add DIR to the include path (the program's folder is always searched)",
    )
    p.add_argument(
        "-D",
        dest="defines",
        action="append",
        default=[],
        metavar="NAME[=VALUE]",
        help="define a preprocessor macro",
    )
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="print, per packet, the tables hit and actions run",
    )
    p.add_argument(
        "--runtime-divmod",
        action="store_true",
        help="accept / and %% that p4c cannot reduce at compile time (a run-time value "
        "divided by a constant that is not a power of two, or by a run-time value), which "
        "the embedded switch computes; p4c refuses them for BMv2 ('could not evaluate "
        "expression at compilation time')",
    )
    p.add_argument("--json", action="store_true", help="print the outcome as JSON")
    p.add_argument(
        "--engine",
        choices=("native", "python"),
        default="native",
        help="the data-plane engine: native (generated C, the default; falls back to python "
        "with one line when the program or the machine cannot run it) or python (the "
        "interpreter; also used with -v)",
    )
    return p


def _build(program: Path, options: CompileOptions) -> Pipeline:
    compiled = compile_file(program, options)
    assert compiled.checked is not None
    return build_pipeline(compiled.checked, compiled.name)


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print(f"{PROG}: error: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - a bug of ours: one line, never a traceback
        print(f"{PROG}: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return 3


def _main(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    program, stf = Path(args.program), Path(args.stf)
    for path in (program, stf):
        if not path.is_file():
            print(f"{PROG}: error: {path}: no such file", file=sys.stderr)
            return 2
    defines: dict[str, str | None] = {}
    for d in args.defines:
        name, _, value = d.partition("=")
        defines[name] = value or None
    options = CompileOptions(
        include_dirs=[Path(d) for d in args.include_dirs] + [program.parent],
        defines=defines,
        runtime_divmod=args.runtime_divmod,
    )
    try:
        commands = parse_stf_file(stf)
    except StfError as e:
        print(e, file=sys.stderr)
        return 2
    except (OSError, UnicodeDecodeError) as e:
        print(f"{PROG}: error: {stf}: {e}", file=sys.stderr)
        return 2
    try:
        pipeline = in_deep_thread(lambda: _build(program, options))
    except CompileError as e:
        print(e.format(), file=sys.stderr)
        return 2
    except CodegenError as e:
        print(str(e), file=sys.stderr)
        return 2
    runner = StfRunner(
        pipeline,
        str(stf),
        trace=args.verbose,
        engine=args.engine,
        notice=lambda line: print(f"{PROG}: {line}", file=sys.stderr),
    )
    try:
        outcome = runner.run(commands)
    except StfRunError as e:
        print(e, file=sys.stderr)
        return 2
    if args.json:
        print(
            json.dumps(
                {
                    "program": str(program),
                    "stf": str(stf),
                    "passed": outcome.passed,
                    "fault": outcome.fault,
                    "packets_in": outcome.packets_in,
                    "packets_out": outcome.packets_out,
                    "report": outcome.report,
                },
                indent=2,
            )
        )
        return 0 if outcome.passed else 1
    if args.verbose:
        for note in runner.notes:
            print(note)
    if outcome.fault:
        print(outcome.fault, file=sys.stderr)
    for item in outcome.report:
        print(item, file=sys.stderr)
    verdict = "PASS" if outcome.passed else "FAIL"
    print(f"{verdict}: {stf.name} ({outcome.packets_in} packets in, {outcome.packets_out} out)")
    return 0 if outcome.passed else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
