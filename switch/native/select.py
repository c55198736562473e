"""Engine selection: ``make_switch(pipeline, engine=...)`` for every caller.

``native`` (and ``auto``, the default) build the native engine and fall back to the Python
engine with ONE line saying why when the program uses a construct the generator refuses, when
no C compiler exists, when the compiler fails, or when the cache directory is unusable.
``python`` always runs the interpreter. Tracing runs on the interpreter (the native engine
does not trace).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..interp.builder import Pipeline
from ..interp.switch import V1Switch
from .build import COMPILE_TIMEOUT, BuildError, build, compiler, object_path
from .cexprs import Unsupported

ENGINES = ("auto", "native", "python")
log = logging.getLogger("p4reduce.switch")


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def make_switch(
    pipeline: Pipeline,
    engine: str = "auto",
    clock: Callable[[], int] | None = None,
    trace: bool = False,
    notice: Callable[[str], None] | None = _stderr,
    sanitize: bool = False,
) -> Any:
    """A switch running ``pipeline`` on the requested engine (see the module docstring).

    The result has ``.engine`` set to "native" or "python": the engine that really runs.
    """
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r} (expected one of {', '.join(ENGINES)})")
    if engine == "python" or trace:
        sw = V1Switch(pipeline, clock=clock, trace=trace)
        sw.engine = "python"  # type: ignore[attr-defined]
        return sw
    from .cprogram import generate
    from .engine import NativeSwitch

    try:
        return NativeSwitch(pipeline, generate(pipeline), clock=clock, sanitize=sanitize)
    except (Unsupported, BuildError) as e:
        reason = str(e)
    line = f"native engine not used for {pipeline.name}: {reason}; running the Python engine"
    log.info(line)
    if notice is not None:
        notice(line)
    sw = V1Switch(pipeline, clock=clock, trace=trace)
    sw.engine = "python"  # type: ignore[attr-defined]
    return sw


def native_refusal(pipeline: Pipeline) -> str | None:
    """Why the native engine cannot run ``pipeline`` (None when it can); no compilation."""
    from .cprogram import generate

    try:
        generate(pipeline)
    except Unsupported as e:
        return str(e)
    return None


@dataclass
class Prebuilt:
    """What ``prebuild`` found: the cached shared object, or why the native engine will
    not run the program (the switch then says so itself and runs the Python engine)."""

    path: Path | None
    compiled: bool
    """True when this call compiled it (a cache miss)."""
    reason: str | None = None


def prebuild(
    program: Path | str,
    on_compile: Callable[[], None] | None = None,
    timeout: float = COMPILE_TIMEOUT,
) -> Prebuilt:
    """Put the native engine of ``program`` (a ``p4reduce-p4c`` .json, or a .p4) into the
    cache, so that a switch started on it afterwards loads it without compiling: callers
    with a start deadline (``LocalStack``) run this first, under a bound of its own.
    ``on_compile`` is called just before a compile (a cache miss), for a progress line.
    A program the engine cannot run, a missing compiler or a failing compile is no error
    here: the reason is returned (one line). Raises CompileError for a program that does
    not build at all."""
    from ..interp.load import load_pipeline
    from .cprogram import generate

    index = _index_path(Path(program))
    known = _known_object(index)
    if known is not None:  # a hit without generating the C (K = 1024: many seconds)
        return Prebuilt(known, False)
    pipeline = load_pipeline(program)
    try:
        source = generate(pipeline).source
    except Unsupported as e:
        return Prebuilt(None, False, str(e))
    target = object_path(source)
    compiled = False
    if not target.exists():
        if compiler() is None:
            return Prebuilt(None, False, "no C compiler found")
        if on_compile is not None:
            on_compile()
        try:
            target = build(source, timeout=timeout)
        except BuildError as e:
            return Prebuilt(None, False, str(e))
        compiled = True
    _remember(index, target)
    return Prebuilt(target, compiled)


def _index_path(program: Path) -> Path | None:
    """Where the object for this program file is noted: keyed by the file's bytes and the
    code of the front end, interpreter and generator (probe's version), so any change to
    either looks again. None when the file cannot be read (load_pipeline then says why)."""
    import hashlib

    from .build import cache_dir
    from .probe import _code_version

    try:
        data = program.read_bytes()
    except OSError:
        return None
    key = hashlib.sha256(_code_version().encode() + b"\0" + data).hexdigest()[:32]
    return cache_dir() / "prebuilt" / key


def _known_object(index: Path | None) -> Path | None:
    if index is None:
        return None
    try:
        target = index.parent.parent / index.read_text().strip()
    except OSError:
        return None
    return target if target.name.startswith("p4r_") and target.is_file() else None


def _remember(index: Path | None, target: Path) -> None:
    if index is None:
        return
    try:
        index.parent.mkdir(parents=True, exist_ok=True)
        tmp = index.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(target.name)
        os.replace(tmp, index)
    except OSError:
        pass  # an unwritable cache only costs the next start a generation
