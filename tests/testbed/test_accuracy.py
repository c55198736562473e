"""The time-to-accuracy experiment (``p4reduce testbed -e accuracy``, issue 36): the curve
arithmetic everywhere, and a tiny run on Mininet (2 hosts, 1 epoch, unshaped links) that
checks every scheme's row and that nothing is left behind. The run needs root and
Debian's Mininet; it is skipped with the reason otherwise."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from p4reduce.testbed.mininet import accuracy as acc
from p4reduce.testbed.mininet.runner import Row

from .test_mininet_experiments import run_rows
from .test_mininet_testbed import leftovers, needs_mininet


def test_time_to_target_is_the_first_point_at_or_above_it() -> None:
    curve = [[0.1, 1, 0.5], [0.2, 2, 0.91], [0.3, 3, 0.85], [0.4, 4, 0.95]]
    assert acc.time_to(curve, 0.9) == 0.2
    assert acc.time_to(curve, 0.95) == 0.4
    assert acc.time_to(curve, 0.96) is None
    assert acc.time_to([], 0.5) is None


def test_lines_and_figure_of_rows(tmp_path: Path) -> None:
    rows = []
    for i, s in enumerate(acc.SCHEMES):
        rows.append(Row("accuracy", s.backend, s.label, 2, 0, "float32", 1.0, None, None, 0.0,
                        "embedded", 1.0 + i, 1.0 + i, 1.0 + i, 10, 0.0, None, 20.0, 0.0, True,
                        0.0, extra={"scheme": s.label, "accuracy": 0.9 + i / 100,
                                    "time_to_target": None if i == 0 else 0.5 * i,
                                    "step_ms": 3.0, "curve": "0.5:0.8 1.0:0.9"}))  # fmt: skip
    lines = acc.accuracy_lines(rows)
    assert len(lines) == 1 + len(acc.SCHEMES)
    assert "never" in lines[1] and "0.50 s" in lines[2]
    acc.figure(rows, tmp_path / "a.png", "title")
    assert (tmp_path / "a.png").stat().st_size > 0


@needs_mininet
@pytest.mark.timeout(420)
def test_small_accuracy_run_checks_every_scheme_and_leaves_nothing(tmp_path: Path) -> None:
    rows = run_rows("-e", "accuracy", "-n", "2", "--epochs", "1", "--bw", "0", "--json",
                    "--out", str(tmp_path), timeout=400)  # fmt: skip
    assert [x["scheme"] for x in rows] == [s.label for s in acc.SCHEMES]
    for x in rows:
        assert x["ok"], x
        pts = [tuple(map(float, p.split(":"))) for p in x["curve"].split()]
        steps = x["calls"]
        assert len(pts) == steps > 0  # one evaluation per step
        assert all(a[0] <= b[0] for a, b in itertools.pairwise(pts))  # time only goes on
        assert pts[-1][1] == pytest.approx(x["accuracy"], abs=1e-4)  # 4 decimals in the CSV
        assert x["accuracy"] > 0.3  # 1437 digits, 10 classes: it learned (chance 0.1)
        tta = x["time_to_target"]
        assert tta is None or 0 < tta <= pts[-1][0]
    # every scheme saw the same data order and steps; the compressed ones sent fewer packets
    assert len({x["calls"] for x in rows}) == 1
    dense = next(x for x in rows if x["scheme"] == "p4reduce dense")
    for x in rows:
        if x["backend"] == "p4reduce" and x is not dense:
            assert 0 < x["packets"] < dense["packets"], (x["scheme"], x["packets"])
    assert (tmp_path / "accuracy.png").stat().st_size > 0
    assert (tmp_path / "accuracy.csv").stat().st_size > 0
    assert leftovers() == []
