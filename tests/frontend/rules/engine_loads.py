"""Whether a compiled program loads on both engines (test_every_program_loads.py and
test_corpus.py share it): the interpreter builds it, or refuses it at load in one
``FILE(LINE): error:`` line naming an unsupported construct; the native generator
translates it, or declines in one line (the switch then runs the Python engine)."""

from __future__ import annotations

import random
import re
from typing import Any

from p4reduce.switch.frontend.errors import CompileError
from p4reduce.switch.interp.builder import build_pipeline
from p4reduce.switch.interp.exprs import CodegenError
from p4reduce.switch.interp.switch import V1Switch
from p4reduce.switch.native.cexprs import Unsupported
from p4reduce.switch.native.cprogram import generate

REFUSAL = re.compile(r"^\S+\(\d+\): error: .*(not supported|unsupported)", re.I)


def load_outcome(compiled: Any) -> tuple[str, str]:
    """(interpreter, native): 'ok', 'refused: LINE', 'python fallback: REASON', 'skipped'
    (native, after a refusal) or 'internal error ...'."""
    try:
        pipeline = build_pipeline(compiled.checked, compiled.name, random.Random(0))
        V1Switch(pipeline)
    except (CompileError, CodegenError) as e:
        return f"refused: {e}", "skipped"
    except Exception as e:  # noqa: BLE001 - reported by the caller's assertion
        return f"internal error {type(e).__name__}: {e}", "skipped"
    try:
        generate(pipeline)
        return "ok", "ok"
    except Unsupported as e:
        return "ok", f"python fallback: {e}"
    except Exception as e:  # noqa: BLE001
        return "ok", f"internal error {type(e).__name__}: {e}"


def assert_loads(interp: str, native: str) -> None:
    if interp.startswith("refused: "):
        line = interp.removeprefix("refused: ")
        assert "\n" not in line.strip() and REFUSAL.match(line), interp
        return
    assert interp in ("ok", "skipped"), interp
    if native.startswith("python fallback: "):
        assert "\n" not in native, native
        return
    assert native in ("ok", "skipped"), native
