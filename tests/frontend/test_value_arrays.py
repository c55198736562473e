"""Arrays ``T[N]`` of values that are not headers: P4_16 1.2.5 has them and the embedded switch
runs them, but p4c-bm2-ss 1.2.5 cannot map them ("Compiler Bug: bit<8>: unexpected stack
element type"). Refused by default, as p4c refuses them (test_against_p4c compiles
programs/value_arrays/ without the flag, so p4c is the judge of that); ``--value-arrays``
(CompileOptions.value_arrays) accepts them, is recorded in the pipeline, and the switch that
loads the pipeline accepts them too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from p4reduce.switch.frontend.cli import main as p4c_main
from p4reduce.switch.frontend.compiler import CompileOptions, compile_file
from p4reduce.switch.frontend.errors import CompileError
from p4reduce.switch.interp.load import load_pipeline
from p4reduce.switch.interp.switch import V1Switch

PROGRAMS = Path(__file__).parent / "programs"
ARRAYS = PROGRAMS / "value_arrays" / "arrays.p4"
# Ethernet only; arrays.p4 sends every frame to port 8 when its array arithmetic is right
FRAME = bytes.fromhex("0000000000020000000000010800") + bytes(20)


def test_refused_by_default_at_the_first_use() -> None:
    with pytest.raises(CompileError) as info:
        compile_file(ARRAYS, CompileOptions())
    head = info.value.format().splitlines()[0]
    assert head == (
        f"{ARRAYS}(21): error: bit<8>: unexpected stack element type (p4c-bm2-ss has no "
        "arrays of values that are not headers; --value-arrays accepts them for the "
        "embedded switch)"
    )


def test_header_stacks_stay_accepted() -> None:
    # the rule is about element types: every good/ program with a header stack compiles
    stacks = [p for p in (PROGRAMS / "good").glob("*stack*.p4")]
    assert stacks
    for path in stacks:
        compile_file(path, CompileOptions())


def test_the_flag_is_recorded_and_the_switch_runs_the_arrays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert p4c_main([str(ARRAYS), "-o", str(tmp_path)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and "unexpected stack element type" in err[0]
    assert not (tmp_path / "arrays.json").exists()
    assert p4c_main([str(ARRAYS), "--value-arrays", "-o", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "arrays.json").read_text())
    assert doc["options"] == {"value_arrays": True}
    # the switch loads the compiled pipeline (it re-checks the source with the recorded flag)
    switch = V1Switch(load_pipeline(tmp_path / "arrays.json"))
    assert [port for port, _ in switch.process(1, FRAME)] == [8]
    # from source, the option is needed as well
    with pytest.raises(CompileError):
        load_pipeline(ARRAYS)
    switch = V1Switch(load_pipeline(ARRAYS, CompileOptions(value_arrays=True)))
    assert [port for port, _ in switch.process(1, FRAME)] == [8]
