"""Our front end against the real p4c-bm2-ss on every program of the repository.

The same comparison as ``bench/p4c_diff.py`` (which programs, with which flags, and what is
normalised are explained there): both accept with the same P4Info, or both refuse. p4c runs
on two threads (child processes, results cached by content under build/p4c_cache) while
our front end compiles the same programs in this process; where both accept, the shadowing
warnings must be the same too. Skipped in one line where
p4c-bm2-ss is not installed.

KNOWN lists the disagreements not fixed yet, each with what p4c does; they are strict
xfails, so a fix that makes one agree fails here until its entry is removed.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from p4reduce import p4lang

ROOT = Path(__file__).resolve().parents[2]


def _load_diff() -> ModuleType:
    spec = importlib.util.spec_from_file_location("p4c_diff", ROOT / "bench" / "p4c_diff.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


p4c_diff = _load_diff()
JOBS = p4c_diff.discover()

# label -> what p4c does that we do not (yet)
KNOWN: dict[str, str] = {}


@pytest.fixture(scope="module")
def verdicts() -> dict[str, object]:
    reason = p4lang.missing_reason(p4c_diff.P4C)
    if reason:
        pytest.skip(reason)
    return {v.job.label: v for v in p4c_diff.run_all(JOBS, workers=2)}


def _params() -> list[object]:
    out = []
    for job in JOBS:
        marks = []
        if job.label in KNOWN:
            marks.append(pytest.mark.xfail(reason=f"p4c: {KNOWN[job.label]}", strict=True))
        out.append(pytest.param(job.label, id=job.label, marks=marks))
    return out


def test_discovery_finds_the_programs() -> None:
    labels = {j.label for j in JOBS}
    # the aggregation programs at three K, a program of every corpus, and no include file
    for k in ("", " -DK=256", " -DK=1024"):
        assert f"p4src/dense.p4{k}" in labels and f"p4src/sparse.p4{k}" in labels
    assert any(j.program.startswith("tests/frontend/programs/bad/") for j in JOBS)
    assert any(j.program.startswith("bmv2_tests/") for j in JOBS)
    assert not any(j.program.startswith("p4src/include/") for j in JOBS)
    assert "bmv2_tests/p4reduce_dense_one_worker.p4" in labels  # no main, but includes one
    assert set(KNOWN) <= labels, sorted(set(KNOWN) - labels)


@pytest.mark.parametrize("label", _params())
def test_agrees_with_p4c(label: str, verdicts: dict[str, object]) -> None:
    v = verdicts[label]
    assert v.status == "agree", f"{v.status}: {label}\n{v.detail}"
    # and the same [--Wwarn=shadow] warnings (good/shadowing_declarations.p4 has five)
    assert (v.warnings_only_p4c, v.warnings_only_ours) == ([], [])
