"""Compile a P4 source file and build its pipeline in one call."""

from __future__ import annotations

import random
from pathlib import Path

from ..frontend.compiler import CompileOptions, compile_file
from .builder import Pipeline, build_pipeline


def load_pipeline(
    path: Path | str, options: CompileOptions | None = None, seed: int = 0
) -> Pipeline:
    """Compile ``path`` (raises CompileError) and build its pipeline (raises CodegenError)."""
    compiled = compile_file(path, options)
    assert compiled.checked is not None
    return build_pipeline(compiled.checked, compiled.name, random.Random(seed))
