"""Run every ``bmv2_tests/NAME.stf`` against ``NAME.p4`` on the embedded switch, once per engine.

Each pair is one test per engine: ``python`` (the interpreter) and ``native`` (generated C);
a program the native engine refuses runs its ``native`` test on the interpreter, and the test
id says so (``native-refused``). Each test; a failure shows the runner's per-port report (expected and received
packets in hex with the first difference marked). README.md in this folder says what each
test proves.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from p4reduce.switch.frontend.compiler import CompileOptions
from p4reduce.switch.native.probe import native_engine_for
from p4reduce.switch.stf.runner import load_and_run

HERE = Path(__file__).resolve().parent
CASES = sorted(p.stem for p in HERE.glob("*.stf"))
OPTIONS = CompileOptions(include_dirs=[HERE])


def _engine_params() -> list[object]:
    params: list[object] = []
    for name in CASES:
        params.append(pytest.param(name, "python", id=f"{name}-python"))
        refused = native_engine_for(HERE / f"{name}.p4", OPTIONS)
        label = "native" if refused is None else "native-refused"
        params.append(pytest.param(name, "native", id=f"{name}-{label}"))
    return params


def test_the_suite_is_large_enough():
    assert len(CASES) >= 60
    for name in CASES:
        assert (HERE / f"{name}.p4").is_file(), f"{name}.stf has no {name}.p4"


@pytest.mark.parametrize(("name", "engine"), _engine_params())
def test_stf(name: str, engine: str, request: pytest.FixtureRequest) -> None:
    runner, outcome = load_and_run(
        HERE / f"{name}.p4", HERE / f"{name}.stf", OPTIONS, engine=engine
    )
    # the id names the engine that runs: a wrong label fails rather than misleads
    expected = "python" if request.node.callspec.id.endswith("-refused") else engine
    assert runner.switch.engine == expected
    assert outcome.fault is None, outcome.fault
    assert outcome.passed, "\n".join(outcome.report)
    assert outcome.packets_in > 0
