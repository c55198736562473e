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
