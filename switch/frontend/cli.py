"""``p4reduce-p4c``: the embedded front end behind p4c's command line.

Exit status 0 on success and 1 on any error, which is printed the way p4c prints it
(``FILE(LINE): error: message`` and the source line). No input, however broken or deeply
nested, produces a Python traceback: compilation runs in a worker thread with a large stack
and a high recursion limit, and anything unexpected is reported as an internal compiler error.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from .errors import CompileError, MissingMainError

if TYPE_CHECKING:
    from .compiler import CompiledProgram, CompileOptions

PROG = "p4reduce-p4c"

# The recursive-descent parser recurses once per nesting level (and several Python frames per
# expression precedence level), so 10,000 nested parentheses need far more than the default
# limit and more C stack than the main thread's 8 MiB.
STACK_BYTES = 512 * 1024 * 1024
RECURSION_LIMIT = 1_000_000

# p4c's BMv2 back end adds this before preprocessing; programs test it to pick target code.
TARGET_DEFINES = {"bmv2": "__TARGET_BMV2__"}

_P4RUNTIME_FORMATS = {
    ".txt": "text",
    ".txtpb": "text",
    ".pbtxt": "text",
    ".json": "json",
    ".bin": "binary",
    ".pb": "binary",
}

T = TypeVar("T")


class UsageError(Exception):
    """A bad command line; p4c exits 1 for these, so argparse's exit 2 is not used."""


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


@dataclass
class _Outputs:
    """What to write after a successful compile, checked before compiling."""

    json_path: Path | None
    p4runtime: list[tuple[Path, str]]


def main(argv: list[str] | None = None) -> int:
    """Run the command; returns the exit status (0 success, 1 error)."""
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        parser.print_usage(sys.stderr)
        _print_error(f"{PROG}: error: {exc}")
        return 1
    except SystemExit as exc:  # --help and --version exit through argparse
        return int(exc.code or 0)
    try:
        outputs = _plan_outputs(args)
    except UsageError as exc:
        _print_error(f"{PROG}: error: {exc}")
        return 1
    problem = _check_input(args.program)
    if problem is not None:
        _print_error(f"{PROG}: error: {problem}")
        return 1
    try:
        return in_deep_thread(lambda: _execute(args, outputs))
    except KeyboardInterrupt:
        _print_error(f"{PROG}: error: interrupted")
        return 130


def run_compile(path: Path | str, options: CompileOptions) -> CompiledProgram:
    """``compile_file`` on a thread with a big stack and a high recursion limit.

    Raises whatever the compiler raises (CompileError for diagnosed problems).
    """
    from .compiler import compile_file

    return in_deep_thread(lambda: compile_file(Path(path), options))


# ------------------------------------------------------------------ command line


def _build_parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(
        prog=PROG,
        allow_abbrev=False,
        description=(
            "Compile a P4_16 program for the v1model architecture with p4reduce's embedded "
            "front end. Takes p4c's options; -o DIR writes DIR/NAME.json, the pipeline the "
            "embedded switch loads, and --p4runtime-files writes the P4Info."
        ),
        epilog=(
            "Errors are printed as FILE(LINE): error: MESSAGE followed by the source line; the "
            "exit status is 0 on success and 1 on any error."
        ),
    )
    parser.add_argument("program", metavar="PROG.p4", help="the P4_16 program to compile")
    add = parser.add_argument
    add(
        "-I",
        dest="include_dirs",
        metavar="DIR",
        action="append",
        default=[],
        type=Path,
        help="add DIR to the #include search path (repeatable; searched before the "
        "built-in core.p4/v1model.p4 directory)",
    )
    add(
        "-D",
        dest="defines",
        metavar="NAME[=VALUE]",
        action="append",
        default=[],
        help="define a preprocessor macro (VALUE defaults to 1); __TARGET_BMV2__ is "
        "predefined, as by p4c's BMv2 back end",
    )
    add(
        "-U",
        dest="undefines",
        metavar="NAME",
        action="append",
        default=[],
        help="undefine a preprocessor macro",
    )
    add("--std", default="p4-16", metavar="{p4-16}", help="language version (only p4-16)")
    add("--p4v", default="16", metavar="{16}", help="language version, p4c's older spelling")
    add("--arch", default="v1model", metavar="{v1model}", help="architecture (only v1model)")
    add("--target", default="bmv2", metavar="{bmv2}", help="target (only bmv2)")
    add(
        "-o",
        dest="output_dir",
        metavar="DIR",
        type=Path,
        help="write the compiled pipeline to DIR/NAME.json (NAME = program file stem)",
    )
    add(
        "--p4runtime-files",
        metavar="FILE[,FILE...]",
        help="write the P4Info to each FILE; the format follows the suffix: .txt/.txtpb "
        "(protobuf text), .json (protobuf JSON), .bin/.pb (binary)",
    )
    add("--p4runtime-file", metavar="FILE", help="deprecated p4c form of --p4runtime-files")
    add(
        "--p4runtime-format",
        choices=("text", "json", "binary"),
        help="format for --p4runtime-file (default: binary, as in p4c)",
    )
    add(
        "--target-profile",
        metavar="PROFILE",
        help="target profile: bmv2 or v1model (the default: compile for BMv2) or tofino "
        "(compile for BMv2 and also check Tofino's hardware rules: no loops, one "
        "read-modify-write per register, cells of at most 32 bits or a 64-bit pair, no "
        "multiply/divide/modulo except by powers of two, a bounded parse depth)",
    )
    add(
        "--runtime-divmod",
        action="store_true",
        help="accept / and %% that p4c cannot reduce at compile time (a run-time value "
        "divided by a constant that is not a power of two, or by a run-time value), which "
        "the embedded switch computes; p4c refuses them for BMv2 ('could not evaluate "
        "expression at compilation time'); recorded in the -o pipeline",
    )
    add(
        "--value-arrays",
        action="store_true",
        help="accept arrays T[N] of values that are not headers (bit<W>, bool, structs), "
        "which the embedded switch runs; p4c-bm2-ss cannot map them ('unexpected stack "
        "element type'); recorded in the -o pipeline",
    )
    add(
        "--emit-externs",
        action="store_true",
        help="as p4c-bm2-ss: accept calls of user-declared extern functions and instances of "
        "user-declared extern objects (without it they are 'unknown extern function' / "
        "'unknown extern instance' errors); the embedded switch refuses to load such a "
        "pipeline, as BMv2 does without an extern library",
    )
    add(
        "-E",
        dest="preprocess_only",
        action="store_true",
        help="print the preprocessed program to standard output and stop",
    )
    add(
        "-v",
        dest="verbose",
        action="count",
        default=0,
        help="report what was done and how long it took (on standard error)",
    )
    add("--version", action="version", version=_version_text())
    return parser


def _version_text() -> str:
    try:
        version = metadata.version("p4reduce")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return f"{PROG} {version}"


def _plan_outputs(args: argparse.Namespace) -> _Outputs:
    """Reject unsupported choices and work out the output files before any work is done."""
    if args.std != "p4-16" or args.p4v != "16":
        raise UsageError("only P4_16 is supported (--std p4-16)")
    if args.arch != "v1model":
        raise UsageError(f"unsupported architecture {args.arch!r} (only v1model)")
    if args.target != "bmv2":
        raise UsageError(f"unsupported target {args.target!r} (only bmv2)")
    for define in args.defines:
        if not define.partition("=")[0]:
            raise UsageError(f"-D needs a macro name: -D {define!r}")
    p4runtime: list[tuple[Path, str]] = []
    for name in (args.p4runtime_files or "").split(","):
        if name:
            p4runtime.append((Path(name), _p4runtime_format(name)))
    if args.p4runtime_file:
        p4runtime.append((Path(args.p4runtime_file), args.p4runtime_format or "binary"))
    json_path = None
    if args.output_dir is not None:
        json_path = args.output_dir / f"{Path(args.program).stem}.json"
    return _Outputs(json_path, p4runtime)


def _p4runtime_format(name: str) -> str:
    suffix = Path(name).suffix.lower()
    if suffix not in _P4RUNTIME_FORMATS:
        known = ", ".join(_P4RUNTIME_FORMATS)
        raise UsageError(f"cannot tell the P4Info format of {name!r} from its suffix ({known})")
    return _P4RUNTIME_FORMATS[suffix]


def _check_input(program: str) -> str | None:
    """A one-line reason the program file cannot be read, or None."""
    path = Path(program)
    if not path.exists():
        return f"{program}: No such file or directory"
    if path.is_dir():
        return f"{program}: is a directory"
    if not os.access(path, os.R_OK):
        return f"{program}: Permission denied"
    return None


# ------------------------------------------------------------------ the work


def _execute(args: argparse.Namespace, outputs: _Outputs) -> int:
    """Everything after option parsing; runs on the deep thread."""
    defines = _defines(args)
    try:
        if args.preprocess_only:
            from .preprocess import preprocess

            text = preprocess(Path(args.program), args.include_dirs, defines, args.undefines)
            _write_stdout(text)
            return 0
        from .compiler import CompileOptions, compile_file

        options = CompileOptions(
            include_dirs=list(args.include_dirs),
            defines=defines,
            undefines=list(args.undefines),
            target_profile=args.target_profile,
            runtime_divmod=args.runtime_divmod,
            emit_externs=args.emit_externs,
            value_arrays=args.value_arrays,
        )
        started = time.perf_counter()
        program = compile_file(Path(args.program), options)
        _verbose(args, f"compiled {args.program} in {time.perf_counter() - started:.3f} s")
        for warning in program.warnings:  # as p4c: on stderr, the exit status stays 0
            _print_error(warning.format())
        _write_outputs(program, outputs, args)
        return 0
    except MissingMainError as exc:
        # as p4c-bm2-ss: the P4Info is written, no pipeline JSON, a warning, exit status 1
        try:
            for path, fmt in outputs.p4runtime:
                _write_file(path, _serialise_p4info(exc.p4info, fmt))
        except _OutputError as out_exc:
            _print_error(f"{PROG}: error: {out_exc}")
            return 1
        _print_error(exc.format())
    except CompileError as exc:
        _print_error(exc.format())
    except _OutputError as exc:
        _print_error(f"{PROG}: error: {exc}")
    except RecursionError:
        _internal_error(args.program, "RecursionError: program nested too deeply")
    except MemoryError:
        _internal_error(args.program, "MemoryError: out of memory")
    except Exception as exc:  # never a traceback, whatever went wrong inside
        _internal_error(args.program, f"{type(exc).__name__}: {exc}")
    return 1


def _defines(args: argparse.Namespace) -> dict[str, str | None]:
    defines: dict[str, str | None] = {TARGET_DEFINES[args.target]: None}
    for define in args.defines:
        name, eq, value = define.partition("=")
        defines[name] = value if eq else None
    return defines


class _OutputError(Exception):
    """An output file could not be written."""


def _write_outputs(program: CompiledProgram, outputs: _Outputs, args: argparse.Namespace) -> None:
    if outputs.json_path is not None:
        # Compact: indentation grows with nesting depth, and a program with 10,000 nested
        # blocks would otherwise produce gigabytes of leading spaces.
        text = json.dumps(program.ir, separators=(",", ":")) + "\n"
        _write_file(outputs.json_path, text.encode("utf-8"))
        _verbose(args, f"wrote {outputs.json_path}")
    for path, fmt in outputs.p4runtime:
        _write_file(path, _serialise_p4info(program.p4info, fmt))
        _verbose(args, f"wrote {path} ({fmt} P4Info)")


def _serialise_p4info(p4info: Any, fmt: str) -> bytes:
    if fmt == "text":
        from .p4info import p4info_to_text

        return p4info_to_text(p4info).encode("utf-8")
    if fmt == "json":
        from google.protobuf import json_format

        return (json_format.MessageToJson(p4info) + "\n").encode("utf-8")
    return p4info.SerializeToString()


def _write_file(path: Path, data: bytes) -> None:
    """Write through a temporary name so a failure never leaves half a file behind."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise _OutputError(f"cannot write {path}: {exc.strerror or exc}") from None


# ------------------------------------------------------------------ threads and printing

_limit_lock = threading.Lock()
_stack_lock = threading.Lock()
_limit_users = 0
_saved_limit = 0


@contextlib.contextmanager
def _high_recursion_limit() -> Iterator[None]:
    """Raise the interpreter-wide recursion limit while any deep thread runs, then restore
    it, so the main thread (with its ordinary stack) keeps the ordinary guard."""
    global _limit_users, _saved_limit
    with _limit_lock:
        if _limit_users == 0:
            _saved_limit = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_saved_limit, RECURSION_LIMIT))
        _limit_users += 1
    try:
        yield
    finally:
        with _limit_lock:
            _limit_users -= 1
            if _limit_users == 0:
                sys.setrecursionlimit(_saved_limit)


def in_deep_thread(work: Callable[[], T]) -> T:
    """Run ``work`` on a fresh thread with a STACK_BYTES stack; return or raise its result."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # handed to the caller's thread below
            outcome["error"] = exc

    with _high_recursion_limit():
        thread = _start_with_big_stack(target)
        # join() with a timeout keeps the main thread responsive to Ctrl-C.
        while thread.is_alive():
            thread.join(0.2)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _start_with_big_stack(target: Callable[[], None]) -> threading.Thread:
    """Start ``target`` with STACK_BYTES of stack, or the default stack where the platform
    (or a ulimit) refuses that much: a shallower limit beats not compiling at all."""
    with _stack_lock:  # stack_size() is process-wide; change it only around our own start()
        old = threading.stack_size()
        try:
            for size in (STACK_BYTES, old):
                try:
                    threading.stack_size(size)
                    thread = threading.Thread(target=target, name=f"{PROG}-compile", daemon=True)
                    thread.start()
                    return thread
                except (ValueError, RuntimeError, MemoryError):
                    if size == old:
                        raise
        finally:
            threading.stack_size(old)
    raise AssertionError("unreachable")


def _verbose(args: argparse.Namespace, message: str) -> None:
    if args.verbose:
        _print_error(f"{PROG}: {message}")


def _internal_error(program: str, detail: str) -> None:
    detail = " ".join(detail.split())
    _print_error(f"{program}: error: internal compiler error: {detail}")


def _print_error(text: str) -> None:
    """Print to stderr; lone surrogates from undecodable input become escapes, not crashes."""
    safe = text.encode("utf-8", "backslashreplace").decode("utf-8")
    print(safe, file=sys.stderr, flush=True)


def _write_stdout(text: str) -> None:
    """Write -E output byte-exactly (undecodable input bytes are kept as they were)."""
    data = text.encode("utf-8", "surrogateescape")
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:
        sys.stdout.write(data.decode("utf-8", "replace"))
        return
    sys.stdout.flush()
    buffer.write(data)
    buffer.flush()
