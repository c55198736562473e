"""The front end's driver: preprocess, parse, check, build the control-plane model, emit.

Each stage is a small pass over plain trees; ``CompiledProgram.timings`` records how long
each took (bench/frontend.py prints them).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from p4reduce.proto import p4info_pb2

from . import bmv2rules, checker, cpbuild, ir, parser, preprocess, tofino
from .cpmodel import ControlPlaneModel
from .cpmodel import ControlPlaneModel as _EmptyModel
from .errors import CompileError, CompileWarning, MissingMainError
from .p4info import build_p4info, p4info_to_text

# --target-profile values: bmv2 and v1model (the same thing, and the default) compile for
# BMv2; tofino compiles for BMv2 and also checks Tofino's hardware rules (tofino.py).
TARGET_PROFILES = ("bmv2", "v1model", "tofino")


@dataclass
class CompileOptions:
    include_dirs: list[Path] = field(default_factory=list)
    defines: dict[str, str | None] = field(default_factory=dict)
    undefines: list[str] = field(default_factory=list)
    target_profile: str | None = None
    # Accept `/` and `%` that p4c cannot reduce at compile time (a run-time value divided by
    # a constant that is not a power of two, or by a run-time value): p4c refuses them for
    # BMv2, the embedded interpreter computes them. Recorded in the compiled pipeline, so
    # the switch that loads it accepts the program too.
    runtime_divmod: bool = False
    # p4c-bm2-ss's --emit-externs: accept calls of user-declared extern functions and
    # instances of user-declared extern objects (BMv2 needs an extern library for them).
    # Recorded in the compiled pipeline; the embedded switch refuses such a program at load.
    emit_externs: bool = False
    # Accept arrays T[N] of values that are not headers (bit<W>, bool, structs): P4_16 has
    # them and the embedded switch runs them, p4c-bm2-ss cannot map them ("unexpected stack
    # element type"). Recorded in the compiled pipeline, as runtime_divmod.
    value_arrays: bool = False


@dataclass
class CompiledProgram:
    name: str
    ir: dict[str, Any]
    p4info: p4info_pb2.P4Info
    model: ControlPlaneModel
    timings: dict[str, float] = field(default_factory=dict)
    # the checked syntax tree, for in-process consumers such as the interpreter
    checked: checker.CheckedProgram | None = field(default=None, repr=False)
    # p4c-style warnings (shadowing declarations); the command line prints them to stderr
    warnings: list[CompileWarning] = field(default_factory=list)


def compile_file(path: Path | str, options: CompileOptions | None = None) -> CompiledProgram:
    """Compile one v1model program; raise CompileError on the first problem."""
    options = options or CompileOptions()
    path = Path(path)
    if options.target_profile is not None and options.target_profile not in TARGET_PROFILES:
        raise CompileError(
            None,
            f"unknown target profile {options.target_profile!r} "
            f"(known profiles: {', '.join(TARGET_PROFILES)})",
        )
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    text = preprocess.preprocess(path, options.include_dirs, options.defines, options.undefines)
    t1 = time.perf_counter()
    program = parser.parse(text, str(path))
    t2 = time.perf_counter()
    checked = checker.check(program)
    bmv2rules.check_bmv2(
        checked,
        runtime_divmod=options.runtime_divmod,
        emit_externs=options.emit_externs,
        value_arrays=options.value_arrays,
    )
    t3 = time.perf_counter()
    if checked.main is None:
        # p4c's BMv2 back end: the P4Info of a program that instantiates nothing, then stop
        raise MissingMainError(str(path), build_p4info(_EmptyModel()))
    model = cpbuild.build_model(checked)
    info = build_p4info(model)
    info_text = p4info_to_text(info)
    t4 = time.perf_counter()
    result_ir = ir.build_ir(program, path.stem, info_text, checked.main, text, str(path))
    recorded = {
        "runtime_divmod": options.runtime_divmod,
        "emit_externs": options.emit_externs,
        "value_arrays": options.value_arrays,
    }
    if any(recorded.values()):
        result_ir["options"] = {k: True for k, v in recorded.items() if v}
    t5 = time.perf_counter()
    timings.update(preprocess=t1 - t0, parse=t2 - t1, check=t3 - t2, p4info=t4 - t3, ir=t5 - t4)
    if options.target_profile == "tofino":
        # after every v1model/BMv2 check: a program must compile as usual first
        tofino.check_tofino(checked)
        timings["tofino"] = time.perf_counter() - t5
    # one warning per place and message: a body checked twice must not repeat its warnings
    warnings = list({(w.pos, w.message): w for w in checked.warnings}.values())
    return CompiledProgram(path.stem, result_ir, info, model, timings, checked, warnings)
