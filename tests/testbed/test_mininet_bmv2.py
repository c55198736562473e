"""``p4reduce testbed`` on the real BMv2 (``--switch bmv2``, ``--switch embedded,bmv2``):
small runs whose every result is checked as on the embedded switch, and that leave nothing
behind.

They need root, Debian's Mininet and p4c with simple_switch_grpc (p4reduce.p4lang finds
them in /opt/p4lang or on PATH); each missing piece skips them with one line.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from p4reduce.testbed.mininet import topology
from p4reduce.testbed.mininet.stack import mininet_missing
from p4reduce.testbed.mininet.switches import kind

P4REDUCE = str(Path(sys.executable).parent / "p4reduce")


def _why() -> str:
    why = mininet_missing()
    if why is not None:
        return why
    try:
        kind("bmv2").check()
    except Exception as err:  # noqa: BLE001 - StackError: the one-line reason
        return str(err)
    return ""


WHY = _why()
pytestmark = pytest.mark.skipif(bool(WHY), reason=WHY)


def run_testbed(*args: str, timeout: float = 400) -> subprocess.CompletedProcess[str]:
    return subprocess.run([P4REDUCE, "testbed", *args], capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip


def test_scaling_on_both_switches_side_by_side(tmp_path: Path) -> None:
    r = run_testbed("-e", "scaling", "--switch", "embedded,bmv2", "--workers", "2", "--bw", "10",
                    "--k", "64", "-m", "4096", "--repeat", "1", "--no-gloo", "--out",
                    str(tmp_path))  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    rows = {}
    for name in ("scaling.csv", "scaling-bmv2.csv"):
        with open(tmp_path / name) as f:
            (row,) = list(csv.DictReader(f))
        rows[name] = row
        assert row["ok"] == "True" and row["backend"] == "p4reduce" and row["workers"] == "2"
    assert rows["scaling.csv"]["switch"].startswith("embedded")
    assert rows["scaling-bmv2.csv"]["switch"] == "bmv2"
    with open(tmp_path / "scaling-switches.csv") as f:
        head, *lines = list(csv.reader(f))
    assert "ms bmv2" in head and len(lines) == 1
    assert float(lines[0][head.index("ms bmv2")]) > 0
    assert "the switches side by side" in r.stdout
    assert topology.our_links() == []


def test_loss_on_bmv2_is_exact(tmp_path: Path) -> None:
    r = run_testbed("-e", "loss", "--switch", "bmv2", "--loss", "0.02", "-n", "2", "-m", "4000",
                    "--no-gloo", "--json", "--out", str(tmp_path))  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    (row,) = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    assert row["switch"] == "bmv2" and row["dtype"] == "int32" and row["loss"] == 0.02
    assert row["ok"] and row["max_abs_error"] == 0
    assert topology.our_links() == []
