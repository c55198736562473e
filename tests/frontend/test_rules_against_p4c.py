"""The programs generated per spec rule (rules/programs.py) against the real p4c-bm2-ss.

Each program must get the same outcome from both (accepted with the same P4Info, or refused
with our first error on a line p4c's first error names); see ``bench/p4c_diff.py --rules``,
which prints the same comparison and the agreement figures. p4c's results are cached by
content under build/p4c_cache. Skipped in one line where p4c-bm2-ss is not installed.

KNOWN lists the disagreements where p4c is wrong or not followed on purpose, each with the
reason (docs/frontend.md says more); they are strict xfails.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from p4reduce import p4lang

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


p4c_diff = _load("p4c_diff", ROOT / "bench" / "p4c_diff.py")
rules = _load("p4c_rule_programs", ROOT / "tests" / "frontend" / "rules" / "programs.py")
CASES = rules.all_cases()

# program file name -> why we do not agree with p4c there
KNOWN: dict[str, str] = {}

AREAS = {"types", "named_args", "list_struct", "header_struct_field", "unions_stacks",
         "generics", "annotations", "name_id", "value_sets", "profiles", "direct",
         "table_props", "action_order"}  # fmt: skip


@pytest.fixture(scope="module")
def verdicts() -> dict[str, object]:
    reason = p4lang.missing_reason(p4c_diff.P4C)
    if reason:
        pytest.skip(reason)
    jobs = p4c_diff.rule_jobs(ROOT)
    return {Path(v.job.program).name: v for v in p4c_diff.run_all(jobs, workers=2)}


def test_every_area_has_valid_and_invalid_programs() -> None:
    for area in AREAS:
        kinds = {c.valid for c in CASES if c.area == area}
        assert kinds == {True, False}, area
    assert {c.area for c in CASES} == AREAS
    assert set(KNOWN) <= {c.filename for c in CASES}


def test_programs_are_complete_and_distinct() -> None:
    texts = [c.source() for c in CASES]
    assert len(set(texts)) == len(texts)
    assert all(t.rstrip().endswith("main;") for t in texts)


def _params() -> list[object]:
    out = []
    for case in CASES:
        marks = []
        if case.filename in KNOWN:
            marks.append(pytest.mark.xfail(reason=KNOWN[case.filename], strict=True))
        out.append(pytest.param(case.filename, id=case.filename[:-3], marks=marks))
    return out


@pytest.mark.parametrize("name", _params())
def test_rule_program_agrees_with_p4c(name: str, verdicts: dict[str, object]) -> None:
    v = verdicts[name]
    assert v.status == "agree", f"{v.status}: {name}\n{v.detail}"


def test_error_lines_are_every_place_p4c_names_for_its_first_error() -> None:
    stderr = (
        "x.p4(31): [--Werror=type-error] error: v: parameter should be assigned in call\n"
        "    action set_b(bit<16> v) { }\n"
        "x.p4(35)\n"
        "        default_action = set_b();\n"
        "  ---- Originating from:\n"
        "  x.p4(36): Type of argument\n"
        "x.p4(50): [--Wwarn=unused] warning: 'a' is unused\n"
    )
    assert p4c_diff._error_lines(stderr) == (31, 35, 36)
    assert p4c_diff._error_lines("[--Werror=invalid] error: @id 9 is assigned twice\n") == ()


def test_a_refusal_on_another_line_is_a_mismatch_only_for_rule_programs() -> None:
    rule = p4c_diff.Job("r.p4", error_line=True)
    theirs = p4c_diff.Outcome(False, error="r.p4(31): error: x", error_lines=(31, 35))
    at = {n: p4c_diff.Outcome(False, error=f"/abs/r.p4({n}): error: x") for n in (35, 40)}
    assert p4c_diff.compare(rule, at[35], theirs).status == "agree"
    assert p4c_diff.compare(rule, at[40], theirs).status == "error-line"
    assert p4c_diff.compare(p4c_diff.Job("r.p4"), at[40], theirs).status == "agree"
    no_place = p4c_diff.Outcome(False, error="error: x")  # p4c gave no position
    assert p4c_diff.compare(rule, at[40], no_place).status == "agree"


def test_only_the_warning_kinds_we_print_are_compared() -> None:
    job = p4c_diff.Job("w.p4")
    shadow = "w.p4(3): [--Wwarn=shadow] warning: 'x' shadows 'x'"
    unused = "w.p4(4): [--Wwarn=unused] warning: 'y' is unused"
    ours = p4c_diff.Outcome(True, warnings=())
    theirs = p4c_diff.Outcome(True, warnings=(shadow, unused))
    v = p4c_diff.compare(job, ours, theirs)
    assert (v.warnings_only_p4c, v.warnings_only_ours) == ([shadow], [])
    assert "shadow 0/1" in p4c_diff.warning_figures([v])
    assert "unused 0/1" in p4c_diff.warning_figures([v])
