"""Target restrictions belong to the BMv2 back end, not the front end: p4c's front end accepts
a header type with several varbit fields (it objects only when such a header is extracted) and
its BMv2 back end refuses the header type with its own message at the header."""

from __future__ import annotations

from pathlib import Path

import pytest
from p4reduce.switch.frontend import bmv2rules, checker, parser, preprocess
from p4reduce.switch.frontend.errors import CompileError

BAD = Path(__file__).parent / "programs" / "bad"


def _check(path: Path):
    return checker.check(parser.parse(preprocess.preprocess(path), str(path)))


def test_two_varbit_fields_pass_the_front_end_and_fail_the_bmv2_rules() -> None:
    path = BAD / "bmv2_header_two_varbit_fields.p4"
    checked = _check(path)  # the front end accepts the program
    with pytest.raises(CompileError) as info:
        bmv2rules.check_bmv2(checked)
    assert str(info.value) == (
        f"{path}(5): error: header tlv_t: headers with multiple varbit fields not supported"
    )


def test_extracting_such_a_header_is_a_front_end_error() -> None:
    path = BAD / "extract_header_with_two_varbits.p4"
    with pytest.raises(CompileError) as info:
        _check(path)
    assert str(info.value) == f"{path}(6): error: a and b: multiple varbit fields in a header"
