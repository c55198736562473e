"""Run every ``bmv2_tests/NAME.stf`` against ``NAME.p4`` on the embedded interpreter.

Each pair is one test; a failure shows the runner's per-port report (expected and received
packets in hex with the first difference marked). README.md in this folder says what each
test proves.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from p4reduce.switch.frontend.compiler import CompileOptions
from p4reduce.switch.stf.runner import load_and_run

HERE = Path(__file__).resolve().parent
CASES = sorted(p.stem for p in HERE.glob("*.stf"))


def test_the_suite_is_large_enough():
    assert len(CASES) >= 60
    for name in CASES:
        assert (HERE / f"{name}.p4").is_file(), f"{name}.stf has no {name}.p4"


@pytest.mark.parametrize("name", CASES)
def test_stf(name: str) -> None:
    runner, outcome = load_and_run(
        HERE / f"{name}.p4", HERE / f"{name}.stf", CompileOptions(include_dirs=[HERE])
    )
    assert outcome.fault is None, outcome.fault
    assert outcome.passed, "\n".join(outcome.report)
    assert outcome.packets_in > 0
