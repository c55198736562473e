"""Build a pipeline from a P4 source file or from a compiled pipeline (``p4reduce-p4c -o``)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from ..frontend import bmv2rules, checker, parser
from ..frontend.compiler import CompileOptions, compile_file
from ..frontend.errors import CompileError, MissingMainError
from ..frontend.ir import IR_FORMAT, IR_VERSION
from .builder import Pipeline, build_pipeline


def load_pipeline(
    path: Path | str, options: CompileOptions | None = None, seed: int = 0
) -> Pipeline:
    """Compile ``path`` (raises CompileError) and build its pipeline (raises CodegenError).

    A ``.json`` file is taken as a compiled pipeline (see ``load_compiled``).
    """
    path = Path(path)
    if path.suffix == ".json":
        try:
            doc = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise CompileError(None, f"{path}: not a compiled pipeline: {e}") from None
        return load_compiled(doc, seed)
    compiled = compile_file(path, options)
    assert compiled.checked is not None
    return build_pipeline(compiled.checked, compiled.name, random.Random(seed))


def load_compiled(doc: Any, seed: int = 0) -> Pipeline:
    """Build the pipeline of a ``p4reduce-p4c -o`` document (raises CompileError if invalid)."""
    if not isinstance(doc, dict) or doc.get("format") != IR_FORMAT:
        raise CompileError(None, f"not a compiled pipeline (expected format {IR_FORMAT!r})")
    if doc.get("version") != IR_VERSION:
        raise CompileError(
            None,
            f"compiled pipeline version {doc.get('version')!r} is not supported "
            f"(this switch reads version {IR_VERSION}; recompile with p4reduce-p4c)",
        )
    source = doc.get("source")
    if not isinstance(source, dict) or not isinstance(source.get("text"), str):
        raise CompileError(None, "compiled pipeline has no source text")
    program = parser.parse(source["text"], str(source.get("file") or "<pipeline>"))
    checked = checker.check(program)
    options = doc.get("options")
    runtime_divmod = isinstance(options, dict) and options.get("runtime_divmod") is True
    emit_externs = isinstance(options, dict) and options.get("emit_externs") is True
    value_arrays = isinstance(options, dict) and options.get("value_arrays") is True
    bmv2rules.check_bmv2(
        checked,
        runtime_divmod=runtime_divmod,
        emit_externs=emit_externs,
        value_arrays=value_arrays,
    )
    if checked.main is None:
        raise MissingMainError(str(source.get("file") or "<pipeline>"))
    return build_pipeline(checked, str(doc.get("program") or "program"), random.Random(seed))
