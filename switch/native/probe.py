"""Which engine a program would run on, cached on disk (for test ids and reports).

Knowing whether the native generator accepts a program needs the front end and the
interpreter's builder (a fraction of a second per program). Test suites ask it at collection
time for every program, so answers are cached in the native cache directory, keyed by the
program's text, the files of its include folders and the code of the generator and
interpreter: an edit to any of them asks again. Tests also check the engine that really ran
against the answer, so a wrong answer fails a test rather than mislabelling it.
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path

from ..frontend.compiler import CompileOptions
from .build import cache_dir, compiler

_HERE = Path(__file__).resolve().parent


@lru_cache(maxsize=1)
def _code_version() -> str:
    h = hashlib.sha256()
    for d in (_HERE, _HERE / "runtime", _HERE.parent / "interp", _HERE.parent / "frontend"):
        for p in sorted(d.glob("*")):
            if p.suffix in (".py", ".c", ".h"):
                h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()


def _key(program: Path, options: CompileOptions) -> str:
    h = hashlib.sha256(_code_version().encode())
    h.update(program.read_bytes())
    for d in [program.parent, *options.include_dirs]:
        for p in sorted(Path(d).rglob("*.p4")):
            h.update(str(p).encode() + p.read_bytes())
    h.update(repr(sorted(options.defines.items())).encode())
    # options that change what compiles (and so what the probe verdict is)
    h.update(
        repr(
            (options.undefines, options.runtime_divmod, options.emit_externs, options.value_arrays)
        ).encode()
    )
    return h.hexdigest()


def native_engine_for(program: Path, options: CompileOptions) -> str | None:
    """None when the native engine runs ``program``, else the one-line reason it does not."""
    from ..interp.load import load_pipeline
    from .select import native_refusal

    if compiler() is None:
        return "no C compiler found"
    key = _key(program, options)
    path = cache_dir() / "probe.json"
    try:
        cache = json.loads(path.read_text())
    except (OSError, ValueError):
        cache = {}
    if key in cache:
        return cache[key]
    try:
        reason = native_refusal(load_pipeline(program, options))
    except Exception as e:  # noqa: BLE001 - the program does not even build: Python reports it
        reason = f"the program does not build: {e}"
    cache[key] = reason
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(cache))
        os.replace(tmp, path)
    except OSError:
        pass  # an unwritable cache only costs time
    return reason
